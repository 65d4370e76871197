"""Payoff tables: a stage game evaluated once on a price grid, and what it says.

A :class:`PayoffTable` holds every station's reward at each joint level profile of a
:class:`~evcs_gym.tabular.PriceGrid`, one row per profile (``m^n`` rows), and the rewards
at the game's two references, the Nash N and the collusive M, on the same footing. Rows
not yet evaluated hold NaN; a table built with a *filler* (the simulator's, see
:func:`~evcs_gym.tabular.simulator_table`) evaluates them when they are first read, so a
large grid can be filled lazily: the NashConv of one profile reads ``n (m − 1) + 1``
rows, not ``m^n``.

On the grid the stage game is a finite game, solved exactly:

* :meth:`PayoffTable.gains` and :meth:`~PayoffTable.nash_conv`: each station's best
  unilateral gain on the grid, and their sum over the total reward (the package's
  relative NashConv, exact here: every deviation on the grid is tried);
* :meth:`~PayoffTable.pure_nash`: every profile no station can improve on the grid;
* :meth:`~PayoffTable.joint_optimum`: the profile of the largest total reward;
* :meth:`~PayoffTable.delta`: the collusion index Δ = (R − R_N) / (R_M − R_N) of a total
  reward R against the references' (the continuous N and M, which need not lie on the
  grid).

Example:
    >>> import numpy as np
    >>> from evcs_gym.tabular import PriceGrid
    >>> grid = PriceGrid(("A", "B"), np.array([[[1.0], [2.0]], [[1.0], [2.0]]]))
    >>> # a prisoner's dilemma: (low, low) is the Nash equilibrium, (high, high) the optimum
    >>> rewards = np.array([[1.0, 1.0], [3.0, 0.0], [0.0, 3.0], [2.0, 2.0]])
    >>> table = PayoffTable(grid, rewards, reference_rewards={"nash": [1, 1], "collusive": [2, 2]})
    >>> table.pure_nash(), table.joint_optimum(), table.nash_conv([1, 1])
    ([(0, 0)], (1, 1), 0.5)
    >>> table.delta(table.total([1, 1]))
    1.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evcs_gym.tabular.grid import PriceGrid

__all__ = ["Filler", "PayoffTable"]

Filler = Callable[["PayoffTable", np.ndarray], None]
"""``filler(table, indices)``: evaluate the rows ``indices`` (row-major profile indices)
and store them with :meth:`PayoffTable.store`."""


class PayoffTable:
    """Rewards of every station at every joint level profile of a grid.

    Args:
        grid: the price grid.
        rewards: ``(m^n, n)`` rewards (revenue minus energy cost, in currency), NaN where
            not evaluated yet.
        flows: ``(m^n, n, n_periods)`` vehicles charged per period, or ``None``.
        reference_rewards: ``{"nash": (n,), "collusive": (n,)}`` rewards at the game's
            references, for Δ; ``None`` where the game has none.
        reward_scale: the divisor of the environments' rewards (``settings.reward_scale``).
        filler: evaluates missing rows when they are read; ``None``: reading one raises.
        meta: what the table was built from and what it cost (free-form, JSON-safe).
    """

    def __init__(
        self,
        grid: PriceGrid,
        rewards: ArrayLike,
        *,
        flows: ArrayLike | None = None,
        reference_rewards: Mapping[str, ArrayLike] | None = None,
        reward_scale: float = 1.0,
        filler: Filler | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.grid = grid
        n, rows = grid.n_agents, grid.n_profiles
        self.rewards = np.array(rewards, dtype=np.float64)
        if self.rewards.shape != (rows, n):
            raise ValueError(
                f"`rewards` must have shape (m^n={rows}, n={n}), actually: {self.rewards.shape}"
            )
        self.flows = None if flows is None else np.array(flows, dtype=np.float64)
        if self.flows is not None and self.flows.shape != (rows, n, grid.n_periods):
            raise ValueError(
                f"`flows` must have shape ({rows}, {n}, {grid.n_periods}), actually: "
                f"{self.flows.shape}"
            )
        self.reference_rewards = _references(reference_rewards, n)
        if not (np.isfinite(reward_scale) and reward_scale > 0):
            raise ValueError(f"`reward_scale` must be positive, actually: {reward_scale!r}")
        self.reward_scale = float(reward_scale)
        self.filler = filler
        self.meta: dict[str, Any] = dict(meta or {})

    # ------------------------------------------------------------------ size
    @property
    def m(self) -> int:
        return self.grid.m

    @property
    def n_agents(self) -> int:
        return self.grid.n_agents

    @property
    def agents(self) -> tuple[str, ...]:
        return self.grid.agents

    @property
    def filled(self) -> np.ndarray:
        """``(m^n,)`` bool: rows evaluated."""
        return np.asarray(~np.isnan(self.rewards).any(axis=1))

    @property
    def complete(self) -> bool:
        return bool(self.filled.all())

    # ------------------------------------------------------------------ reading
    def store(self, index: int, rewards: ArrayLike, flows: ArrayLike | None = None) -> None:
        """Write one row (what a filler calls)."""
        self.rewards[index] = np.asarray(rewards, dtype=np.float64)
        if self.flows is not None and flows is not None:
            self.flows[index] = np.asarray(flows, dtype=np.float64)

    def fill(self, indices: ArrayLike | None = None) -> int:
        """Evaluate the missing rows among ``indices`` (all rows if ``None``); how many.

        Raises:
            RuntimeError: rows are missing and the table has no filler.
        """
        rows = np.arange(self.grid.n_profiles) if indices is None else np.asarray(indices)
        rows = np.unique(rows.ravel())
        missing = rows[np.isnan(self.rewards[rows]).any(axis=1)]
        if len(missing) == 0:
            return 0
        if self.filler is None:
            raise RuntimeError(
                f"{len(missing)} profile(s) of the table are not evaluated and it has no "
                "filler (build it with evcs_gym.tabular.simulator_table)"
            )
        self.filler(self, missing)
        if np.isnan(self.rewards[missing]).any():
            raise RuntimeError("the table's filler left rows unevaluated")
        return len(missing)

    def lookup(self, index: ArrayLike) -> np.ndarray:
        """``(..., n)`` rewards of profile indices, evaluating any missing row first."""
        idx = np.asarray(index, dtype=np.int64)
        out = self.rewards[idx]
        if np.isnan(out).any():
            self.fill(idx)
            out = self.rewards[idx]
        return out

    def dense(self) -> np.ndarray:
        """``(m,) * n + (n,)`` rewards of every profile (fills the whole table)."""
        self.fill()
        return self.rewards.reshape((*self.grid.shape, self.n_agents))

    def total(self, levels: ArrayLike) -> float:
        """The total reward of one joint level profile."""
        return float(self.lookup(self.grid.index(levels)).sum())

    # ------------------------------------------------------------------ the grid game
    def unilateral(self, agent: int, levels: ArrayLike) -> np.ndarray:
        """``(m,)`` rewards of station ``agent`` at each of its levels, the others at ``levels``."""
        lv = np.tile(np.asarray(levels, dtype=np.int64), (self.m, 1))
        lv[:, agent] = np.arange(self.m)
        return self.lookup(self.grid.index(lv))[:, agent]

    def best_response(self, agent: int, levels: ArrayLike) -> int:
        """Station ``agent``'s best level against the others' ``levels`` (lowest on ties)."""
        return int(np.argmax(self.unilateral(agent, levels)))

    def gains(self, levels: ArrayLike) -> np.ndarray:
        """``(n,)`` each station's best unilateral gain on the grid at ``levels`` (>= 0)."""
        lv = np.asarray(levels, dtype=np.int64)
        own = self.lookup(self.grid.index(lv))
        best = np.array([self.unilateral(i, lv).max() for i in range(self.n_agents)])
        return np.maximum(best - own, 0.0)

    def nash_conv(self, levels: ArrayLike) -> float:
        """Sum of the stations' best gains on the grid over the total reward at ``levels``."""
        total = self.total(levels)
        return float(self.gains(levels).sum() / total) if total else float("nan")

    def pure_nash(self, tol: float = 0.0) -> list[tuple[int, ...]]:
        """Every profile at which no station gains more than ``tol`` of the total by
        moving alone on the grid (``tol=0``: the grid's pure Nash equilibria)."""
        dense = self.dense()
        gains = np.zeros(dense.shape[:-1])
        for i in range(self.n_agents):
            best = dense[..., i].max(axis=i, keepdims=True)
            gains = gains + (best - dense[..., i])
        ok = gains <= tol * np.abs(dense.sum(axis=-1))
        return [tuple(int(x) for x in row) for row in np.argwhere(ok)]

    def joint_optimum(self) -> tuple[int, ...]:
        """The profile of the largest total reward (the grid's collusive outcome)."""
        totals = self.dense().sum(axis=-1)
        return tuple(int(x) for x in np.unravel_index(int(np.argmax(totals)), totals.shape))

    def best_response_dynamics(self, start: ArrayLike, max_rounds: int = 100) -> np.ndarray:
        """Round-robin best responses from ``start`` until no station moves (or
        ``max_rounds``): ``(rounds + 1, n)`` levels visited; reads only the rows it needs."""
        lv = np.asarray(start, dtype=np.int64).copy()
        path = [lv.copy()]
        for _ in range(max_rounds):
            for i in range(self.n_agents):
                lv[i] = self.best_response(i, lv)
            path.append(lv.copy())
            if (path[-1] == path[-2]).all():
                break
        return np.array(path)

    # ------------------------------------------------------------------ references
    @property
    def nash_total(self) -> float:
        """R_N: the Nash reference's total reward (NaN without references)."""
        return float(self.reference_rewards["nash"].sum()) if self.reference_rewards else np.nan

    @property
    def collusive_total(self) -> float:
        """R_M: the collusive reference's total reward (NaN without references)."""
        refs = self.reference_rewards
        return float(refs["collusive"].sum()) if refs else np.nan

    def delta(self, total: ArrayLike) -> Any:
        """Δ = (R − R_N) / (R_M − R_N) of total reward(s) ``total`` (NaN without references)."""
        r = np.asarray(total, dtype=np.float64)
        out = (r - self.nash_total) / (self.collusive_total - self.nash_total)
        return float(out) if out.ndim == 0 else out

    def __repr__(self) -> str:
        return (
            f"PayoffTable({self.n_agents} stations × {self.m} levels, "
            f"{int(self.filled.sum())}/{self.grid.n_profiles} rows evaluated)"
        )


def _references(given: Mapping[str, ArrayLike] | None, n: int) -> dict[str, np.ndarray] | None:
    if given is None:
        return None
    out = {}
    for kind in ("nash", "collusive"):
        if kind not in given:
            raise ValueError(f"`reference_rewards` needs 'nash' and 'collusive', got {list(given)}")
        arr = np.asarray(given[kind], dtype=np.float64)
        if arr.shape != (n,):
            raise ValueError(
                f"`reference_rewards[{kind!r}]` must hold {n} rewards, actually: {given[kind]!r}"
            )
        out[kind] = arr
    return out
