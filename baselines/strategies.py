"""What learned tabular strategies do on a grid game: limit cycles, Δ, punishments.

A *strategy profile* here is what :func:`~evcs_gym.baselines.qlearning.run_qlearning`
learns: ``(n, m^n)`` levels, station ``i``'s greedy level in each state (last round's
joint profile index). Played without exploration from a state it is deterministic, so
it ends in a cycle of joint profiles, its *limit cycle* (Calvano et al. 2020: one
profile, a constant price, in most sessions; cycles of 2 and more in the others).

* :func:`limit_cycle` and :func:`session_outcome`: the cycle from the state a session
  stopped in, and its figures: each station's mean prices over it, the total reward's
  collusion index Δ against the game's references, the stage game's NashConv on the
  grid (a collusive price is no stage-game equilibrium: its NashConv is large) and the
  gains a station could make in the *repeated* game (below);
* :func:`repeated_game_gains`: what a station gains over its own strategy, discounted by
  δ, in the repeated game against the others' strategies (the MDP it faces, solved by
  value iteration): by one round's deviation (Calvano's check: 0 on the whole cycle
  means every station best-responds on the path) and by its best reply, any deviation
  however long (0 means a Nash equilibrium of the repeated game);
* :func:`impulse_response`: Calvano's experiment: from each state of the cycle, one
  station deviates for one round to its static best response to the others (on the
  grid), then everyone follows the learned strategies; the levels of every round,
  averaged over the cycle's states. A collusive strategy punishes: the rivals cut
  their prices after the deviation, then return.

Example:
    >>> import numpy as np
    >>> from evcs_gym.tabular import LogitMarket
    >>> market = LogitMarket()
    >>> table = market.table(market.grid(m=3))
    >>> always_top = np.full((2, 9), 2)  # both stations always at the highest level
    >>> limit_cycle(always_top, 0, 3).tolist()
    [8]
    >>> outcome = session_outcome(table, always_top, 0, 0.95)
    >>> round(outcome.delta, 3), outcome.one_shot_gain > 0  # a cut pays: no equilibrium
    (0.987, True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evcs_gym.tabular import PayoffTable

__all__ = [
    "ImpulseResponse",
    "SessionOutcome",
    "impulse_response",
    "limit_cycle",
    "repeated_game_gains",
    "session_outcome",
]


@dataclass
class ImpulseResponse:
    """Mean levels and prices of every station, round 0 (before the deviation) to the
    horizon, over the limit cycle's states."""

    deviator: int
    """The station that deviates in round 1 (its index)."""
    levels: np.ndarray
    """``(horizon + 1, n)`` mean levels."""
    prices: np.ndarray
    """``(horizon + 1, n, n_periods)`` mean prices."""
    returned: float
    """Share of the cycle's states from which play is back on the cycle by the horizon."""
    punishment_length: float
    """Mean rounds until play is back on the cycle, counting the deviation's round (1: the
    deviation changed nothing), over the starts that return (NaN if none does)."""


@dataclass
class SessionOutcome:
    """One session's limit cycle and its figures."""

    cycle: list[int]
    """Joint profile indices of the limit cycle, in play order."""
    cycle_levels: list[list[int]]
    """Each station's level in each profile of the cycle."""
    mean_prices: dict[str, list[float]]
    """Station -> its mean price per period over the cycle."""
    total_reward: float
    """Mean total reward over the cycle (the table's currency)."""
    delta: float
    """Collusion index Δ of that total against the references (NaN without them)."""
    nash_conv: float
    """Stage-game NashConv on the grid, mean over the cycle's profiles."""
    one_shot_gain: float
    """Largest relative gain of a one-round deviation in the repeated game over the
    cycle's states and the stations (Calvano's equilibrium check: 0 where every station
    best-responds on the path; gains below 10⁻⁹, the value iteration's rounding, are 0)."""
    best_reply_gain: float
    """Largest relative gain of a best reply (any deviation strategy) over the same:
    0 where the strategies are a Nash equilibrium of the repeated game."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _next_state(strategies: np.ndarray, state: int, m: int) -> int:
    levels = strategies[:, state]
    return int(np.ravel_multi_index(tuple(levels), (m,) * strategies.shape[0]))


def limit_cycle(strategies: np.ndarray, state: int, m: int) -> np.ndarray:
    """The cycle of joint profile indices that greedy play reaches from ``state``."""
    seen: dict[int, int] = {}
    path: list[int] = []
    s = int(state)
    while s not in seen:
        seen[s] = len(path)
        path.append(s)
        s = _next_state(strategies, s, m)
    return np.array(path[seen[s] :], dtype=np.int64)


def repeated_game_gains(
    table: PayoffTable, strategies: np.ndarray, delta: float, tol: float = 1e-12
) -> tuple[np.ndarray, np.ndarray]:
    """Two ``(n, m^n)`` arrays: each station's relative gain over its own strategy, in
    every state, of its best one-round deviation and of its best reply.

    Station ``i`` faces an MDP: in state ``s`` its level ``a`` leads to the profile
    ``(a, σ_−i(s))``, which pays it that profile's reward and is the next state. Its
    strategy's values ``V^σ`` (value iteration to ``tol``, its own level fixed) give the
    *one-shot* gain ``max_a [π(s, a) + δ V^σ(s')] / V^σ(s) − 1`` (Calvano's check: a
    deviation for one round, then back to the strategy) and its optimal values ``V*``
    the *best-reply* gain ``V*(s) / V^σ(s) − 1`` (any deviation, however long; it can
    exploit what the others do off the path, which the one-shot check never visits).
    """
    rewards = table.dense().reshape(-1, table.n_agents) / table.reward_scale
    n, m = table.n_agents, table.m
    one_shot, best_reply = np.zeros((n, m**n)), np.zeros((n, m**n))
    for i in range(n):
        succ = _successors(strategies, i, m)  # (m^n, m): next state for each own level
        pay = rewards[succ, i]
        mine = _solve_mdp(pay, succ, delta, tol, strategies[i])
        scale = np.maximum(np.abs(mine), 1e-300)
        one_shot[i] = ((pay + delta * mine[succ]).max(axis=1) - mine) / scale
        best_reply[i] = (_solve_mdp(pay, succ, delta, tol) - mine) / scale
    return one_shot, best_reply


def _successors(strategies: np.ndarray, i: int, m: int) -> np.ndarray:
    n, n_states = strategies.shape
    levels = np.repeat(strategies.T[:, None, :], m, axis=1)  # (m^n, m, n)
    levels[:, :, i] = np.arange(m)[None, :]
    return np.ravel_multi_index(tuple(np.moveaxis(levels, -1, 0)), (m,) * n)


def _solve_mdp(
    pay: np.ndarray, succ: np.ndarray, delta: float, tol: float, policy: np.ndarray | None = None
) -> np.ndarray:
    """Values of the deterministic MDP ``(pay, succ)``: optimal, or of ``policy``."""
    value = np.zeros(pay.shape[0])
    rows = np.arange(pay.shape[0])
    for _ in range(100_000):
        q = pay + delta * value[succ]
        new = q.max(axis=1) if policy is None else q[rows, policy]
        if np.abs(new - value).max() <= tol * max(1.0, np.abs(new).max()):
            return new
        value = new
    return value  # pragma: no cover - delta < 1 contracts long before


def session_outcome(
    table: PayoffTable, strategies: np.ndarray, state: int, delta: float
) -> SessionOutcome:
    """The limit cycle of ``strategies`` from ``state`` and its figures (module docstring)."""
    grid = table.grid
    cycle = limit_cycle(strategies, state, grid.m)
    levels = grid.levels(cycle)
    total = float(table.lookup(cycle).sum(axis=1).mean())
    one_shot, best_reply = repeated_game_gains(table, strategies, delta)
    prices = np.mean([grid.price_array(lv) for lv in levels], axis=0)
    return SessionOutcome(
        cycle=cycle.tolist(),
        cycle_levels=levels.tolist(),
        mean_prices={a: prices[i].tolist() for i, a in enumerate(grid.agents)},
        total_reward=total,
        delta=float(table.delta(total)),
        nash_conv=float(np.mean([table.nash_conv(lv) for lv in levels])),
        one_shot_gain=_gain(one_shot[:, cycle].max()),
        best_reply_gain=_gain(best_reply[:, cycle].max()),
    )


def _gain(value: float, noise: float = 1e-9) -> float:
    """A relative gain, 0 below ``noise`` (the value iterations' rounding)."""
    return float(value) if value > noise else 0.0


def impulse_response(
    table: PayoffTable, strategies: np.ndarray, state: int, deviator: int, horizon: int = 15
) -> ImpulseResponse:
    """Calvano's one-round deviation, from every state of the limit cycle reached from
    ``state``, averaged over them.

    Round 0 is the cycle's profile; in round 1 station ``deviator`` plays its static
    best response on the grid to the others' levels of that round (the lowest level
    among equally good ones); from round 2 on every station follows ``strategies``.
    """
    grid = table.grid
    cycle = limit_cycle(strategies, state, grid.m)
    levels, prices, lengths = [], [], []
    for s in cycle:
        path = [grid.levels(s)]
        joint = strategies[:, s].copy()
        joint[deviator] = table.best_response(deviator, joint)
        for _ in range(horizon):
            path.append(joint.copy())
            joint = strategies[:, grid.index(joint)].copy()
        back = [r for r in range(1, horizon + 1) if grid.index(path[r]) in set(cycle.tolist())]
        lengths.append(back[0] if back else None)
        levels.append(np.array(path, dtype=np.float64))
        prices.append(np.stack([grid.price_array(lv) for lv in path]))
    done = [x for x in lengths if x is not None]
    return ImpulseResponse(
        deviator,
        np.mean(levels, axis=0),
        np.mean(prices, axis=0),
        returned=len(done) / len(lengths),
        punishment_length=float(np.mean(done)) if done else float("nan"),
    )
