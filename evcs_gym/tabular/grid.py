"""Price grids: a finite set of price profiles per station, the actions of a tabular game.

A :class:`PriceGrid` gives each of ``n`` stations ``m`` *levels*, each level a whole
profile of ``P`` per-period prices, so one action per station and round sets all its
periods at once. A joint action is a tuple of ``n`` levels, numbered ``0 … m^n − 1`` in
row-major order (:meth:`PriceGrid.index`, the first station's level most significant),
which is how payoff tables (:class:`~evcs_gym.tabular.PayoffTable`) store it.

:func:`calvano_grid` builds the grid of Calvano, Calzolari, Denicolò and Pastorello
(AER 2020) from a game's two references: ``m`` levels ``t`` equally spaced from ``−ξ`` to
``1 + ξ``, and level ``k`` sets a station's profile to ``N + t_k (M − N)``, the point a
fraction ``t_k`` of the way from its Nash reference N to its collusive reference M
(clipped to its price bounds). Calvano's own grid is this with one period: ``m`` prices
from ``p_N − ξ (p_M − p_N)`` to ``p_M + ξ (p_M − p_N)``. Why a path and not a grid per
period: with a level per period a station would have ``m^P`` actions and a joint table
``m^(n·P)`` rows (``tiny_market``, 15 levels: 15⁸ ≈ 2.6 × 10⁹); the path keeps Calvano's
one action per station and round, ``m^n`` rows (225), at the price of leaving out every
profile off the path.

Example:
    >>> import numpy as np
    >>> grid = PriceGrid(("A", "B"), np.array([[[1.0], [2.0]], [[1.5], [2.5]]]))
    >>> grid.m, grid.n_profiles, grid.index([1, 0]), grid.levels(2).tolist()
    (2, 4, 2, [1, 0])
    >>> {a: p.tolist() for a, p in grid.profile(3).items()}
    {'A': [2.0], 'B': [2.5]}
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evcs_gym.network import NetworkData
from evcs_gym.scenarios.references import References, load_references

__all__ = ["PriceGrid", "calvano_grid", "path_levels"]


@dataclass(frozen=True, eq=False)
class PriceGrid:
    """``m`` price profiles (levels) per station.

    Attributes:
        agents: the stations, in the game's order.
        prices: ``(n_agents, m, n_periods)`` float64: ``prices[i, k]`` is station ``i``'s
            profile at level ``k``.
        t: ``(m,)`` each level's position on the path from N (0) to M (1), for grids
            built by :func:`calvano_grid`; ``None`` for a grid given as profiles.
    """

    agents: tuple[str, ...]
    prices: np.ndarray
    t: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        prices = np.array(self.prices, dtype=np.float64)
        if prices.ndim != 3 or prices.shape[0] != len(self.agents) or prices.shape[1] < 1:
            raise ValueError(
                f"`prices` must have shape (n_agents={len(self.agents)}, m, n_periods), "
                f"actually: {prices.shape}"
            )
        if not np.isfinite(prices).all():
            raise ValueError("`prices` of a PriceGrid must be finite")
        prices.setflags(write=False)
        object.__setattr__(self, "agents", tuple(self.agents))
        object.__setattr__(self, "prices", prices)

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    @property
    def m(self) -> int:
        """Levels per station."""
        return int(self.prices.shape[1])

    @property
    def n_periods(self) -> int:
        return int(self.prices.shape[2])

    @property
    def n_profiles(self) -> int:
        """Joint level profiles: ``m ** n_agents``."""
        return self.m**self.n_agents

    @property
    def shape(self) -> tuple[int, ...]:
        """``(m,) * n_agents``: the table of joint profiles."""
        return (self.m,) * self.n_agents

    def index(self, levels: ArrayLike) -> Any:
        """Row-major index of ``(..., n_agents)`` levels (an ``int`` for one profile)."""
        arr = np.asarray(levels, dtype=np.int64)
        out = np.ravel_multi_index(tuple(np.moveaxis(arr, -1, 0)), self.shape)
        return int(out) if np.ndim(out) == 0 else out

    def levels(self, index: ArrayLike) -> np.ndarray:
        """``(..., n_agents)`` levels of row-major profile indices."""
        return np.stack(np.unravel_index(np.asarray(index, dtype=np.int64), self.shape), -1)

    def price_array(self, levels: ArrayLike) -> np.ndarray:
        """``(n_agents, n_periods)`` prices of one joint level profile."""
        lv = np.asarray(levels, dtype=np.int64)
        return self.prices[np.arange(self.n_agents), lv]

    def profile(self, index: int) -> dict[str, np.ndarray]:
        """``{station: prices per period}`` of profile ``index``."""
        rows = self.price_array(self.levels(index))
        return {a: rows[i].copy() for i, a in enumerate(self.agents)}

    def digest(self) -> str:
        """SHA-256 of the stations and the prices' bytes: the grid's identity in cache keys."""
        h = hashlib.sha256("|".join(self.agents).encode())
        h.update(np.ascontiguousarray(self.prices).tobytes())
        return h.hexdigest()

    def check_bounds(self, nd: NetworkData) -> None:
        """Raise ``ValueError`` unless the stations are ``nd``'s and every price in its bounds."""
        if self.agents != tuple(nd.agent_names) or self.n_periods != nd.n_periods:
            raise ValueError(
                f"the grid is for stations {self.agents} with {self.n_periods} periods, the "
                f"scenario {nd.name!r} has {nd.agent_names} with {nd.n_periods}"
            )
        for i, a in enumerate(self.agents):
            lo, hi = nd.price_bounds[a]
            bad = np.argwhere((self.prices[i] < lo) | (self.prices[i] > hi))
            if len(bad):
                k, p = (int(x) for x in bad[0])
                raise ValueError(
                    f"`grid[{a!r}]` level {k} period {p} is {self.prices[i, k, p]}, outside "
                    f"the station's bounds [{lo}, {hi}]"
                )

    @classmethod
    def from_profiles(cls, nd: NetworkData, profiles: Mapping[str, ArrayLike]) -> PriceGrid:
        """A grid from ``{station: (m, n_periods) profiles}``, checked against ``nd``.

        Raises:
            ValueError: a station missing or unknown, shapes that differ, a price that is
                not finite or outside the station's bounds.
        """
        names = list(nd.agent_names)
        if not isinstance(profiles, Mapping) or set(profiles) != set(names):
            got = list(profiles) if isinstance(profiles, Mapping) else profiles
            raise ValueError(f"`grid` must map every station {names} to its profiles, got {got!r}")
        rows = []
        for a in names:
            arr = np.asarray(profiles[a], dtype=np.float64)
            if arr.ndim != 2 or arr.shape[1] != nd.n_periods or arr.shape[0] < 1:
                raise ValueError(
                    f"`grid[{a!r}]` must be an (m, {nd.n_periods}) array of profiles, "
                    f"actually of shape {arr.shape}"
                )
            rows.append(arr)
        if len({r.shape for r in rows}) != 1:
            raise ValueError(
                f"every station's grid must have the same number of levels, got "
                f"{[r.shape[0] for r in rows]}"
            )
        grid = cls(tuple(names), np.stack(rows))
        grid.check_bounds(nd)
        return grid


def path_levels(m: int, xi: float = 0.1) -> np.ndarray:
    """Calvano's ``m`` positions ``t`` from ``−xi`` to ``1 + xi`` (N at 0, M at 1).

    Example:
        >>> path_levels(3, 0.5).tolist()
        [-0.5, 0.5, 1.5]
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 2:
        raise ValueError(f"`m` must be an integer of at least 2, actually: {m!r}")
    if not (np.isfinite(xi) and xi >= 0):
        raise ValueError(f"`xi` must be a finite number >= 0, actually: {xi!r}")
    return np.linspace(-float(xi), 1.0 + float(xi), int(m))


def calvano_grid(
    nd: NetworkData,
    m: int = 15,
    xi: float = 0.1,
    references: References | None = None,
) -> PriceGrid:
    """Calvano's grid on the path from the game's Nash reference N to its collusive M.

    Level ``k`` sets station ``i``'s profile to ``clip(N_i + t_k (M_i − N_i), low_i,
    high_i)`` with ``t = path_levels(m, xi)`` (module docstring).

    Args:
        nd: the game.
        m: levels per station (at least 2).
        xi: how far the path runs beyond N and M, as a share of the way between them.
        references: the game's N and M; ``None`` reads the shipped ones
            (:func:`evcs_gym.scenarios.load_references`), at every call, so that a game
            whose references were solved again gets the new grid.

    Raises:
        ValueError: the game has no references (pass your own grid to
            :class:`PriceGrid.from_profiles`), or they belong to other settings.

    Example:
        >>> import evcs_gym
        >>> grid = calvano_grid(evcs_gym.load_scenario("tiny_market"), m=5)
        >>> grid.prices.shape, grid.t.round(2).tolist()
        ((2, 5, 4), [-0.1, 0.2, 0.5, 0.8, 1.1])
    """
    t = path_levels(m, xi)
    refs = load_references(nd) if references is None else references
    if refs is None:
        raise ValueError(
            f"scenario {nd.name!r} (settings {nd.settings_hash}) ships no Nash and collusive "
            "references to build Calvano's grid from; pass `grid` as {station: (m, n_periods) "
            "profiles} instead"
        )
    if refs.settings_hash != nd.settings_hash:
        raise ValueError(
            f"`references` belong to the game {refs.settings_hash}, the scenario plays "
            f"{nd.settings_hash}"
        )
    rows = [_path(refs.nash[a], refs.collusive[a], t, nd.price_bounds[a]) for a in nd.agent_names]
    return PriceGrid(tuple(nd.agent_names), np.stack(rows), t)


def _path(
    nash: ArrayLike, collusive: ArrayLike, t: np.ndarray, bounds: tuple[float, float]
) -> np.ndarray:
    n, c = np.asarray(nash, dtype=np.float64), np.asarray(collusive, dtype=np.float64)
    return np.clip(n[None, :] + t[:, None] * (c - n)[None, :], bounds[0], bounds[1])
