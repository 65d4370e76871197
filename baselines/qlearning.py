"""Tabular Q-learning on a payoff table, as Calvano et al. (AER 2020) run it.

Each station is an independent Q-learner on the repeated grid game of a
:class:`~evcs_gym.tabular.PayoffTable` (``m`` levels a station, one action a round).
With memory ``k = 1`` its state is last round's joint action (``m^n`` states) and its
table ``Q[state, level]``, updated after every round with the reward it earned:

    Q(s, a) ← (1 − α) Q(s, a) + α (π + δ max_a' Q(s', a'))

It explores with probability ``ε_t = exp(−β t)`` (uniformly over all ``m`` levels, each
station on its own draw) and otherwise plays its greedy level. Everything is Calvano's:

* initial values ``Q_0(s, a_i)`` = the mean over the rivals' joint levels of
  ``π_i(a_i, a_−i)``, over ``1 − δ``: the discounted payoff against rivals who randomise
  uniformly, the same in every state; the initial state is drawn uniformly;
* a session *converges* once no station's greedy strategy (its argmax in every state)
  has changed for ``window`` (100,000) consecutive rounds; it then stops learning and
  its strategies are kept; one that has not by ``max_rounds`` stops there, unconverged
  (Calvano stop at 10⁹ rounds; none of their baseline sessions get there);
* baseline ``α = 0.15``, ``β = 4 × 10⁻⁶``, ``δ = 0.95``.

Argmax ties go to the lowest level (Calvano's code breaks them at random; after the
first updates ties do not occur with real-valued payoffs).

**Vectorised sessions.** :func:`run_qlearning` runs ``sessions`` independent sessions
at once: every round is a handful of numpy operations over all the unconverged
sessions, never a Python loop over sessions; random numbers come in blocks of ``chunk``
rounds from the run's own :class:`numpy.random.Generator` (``seed``), so a run is a pure
function of the table, the config and the seed. Rewards are the environments' (the
table's divided by its ``reward_scale``), which leaves every choice unchanged: Q-learning
is invariant to the reward's scale.

What the learned strategies do (their limit cycle, Δ, NashConv, impulse responses, the
repeated-game equilibrium check) is :mod:`~evcs_gym.baselines.strategies`.

Example:
    >>> from evcs_gym.tabular import LogitMarket
    >>> market = LogitMarket()
    >>> table = market.table(market.grid(m=5))
    >>> result = run_qlearning(table, QLearningConfig(sessions=4, window=500, beta=2e-4))
    >>> bool(result.converged.all()), result.strategies.shape
    (True, (4, 2, 25))
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from evcs_gym.tabular import PayoffTable

__all__ = ["QLearningConfig", "QLearningResult", "initial_q", "run_qlearning"]


@dataclass(frozen=True)
class QLearningConfig:
    """Calvano's baseline Q-learning (AER 2020, section II)."""

    alpha: float = 0.15
    """Learning rate α."""
    beta: float = 4e-6
    """Exploration decay β: a station explores with probability ``exp(−β t)`` in round t."""
    delta: float = 0.95
    """Discount factor δ."""
    sessions: int = 100
    """Independent sessions run at once."""
    window: int = 100_000
    """Rounds without a change of any greedy strategy that count as convergence."""
    max_rounds: int = 10_000_000
    """Rounds after which an unconverged session stops."""
    seed: int = 0
    """Seed of the run's generator (initial states, exploration draws, random levels)."""
    chunk: int = 1_000
    """Rounds of random draws generated at once (part of the run's identity)."""

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 1:
            raise ValueError(f"`alpha` must be in (0, 1], actually: {self.alpha!r}")
        if not (np.isfinite(self.beta) and self.beta >= 0):
            raise ValueError(f"`beta` must be a finite number >= 0, actually: {self.beta!r}")
        if not 0 <= self.delta < 1:
            raise ValueError(f"`delta` must be in [0, 1), actually: {self.delta!r}")
        for name in ("sessions", "window", "max_rounds", "chunk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"`{name}` must be a positive integer, actually: {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ValueError(f"`seed` must be an integer, actually: {self.seed!r}")


@dataclass
class QLearningResult:
    """What a run learned, per session (``S`` sessions, ``n`` stations, ``m^n`` states)."""

    config: QLearningConfig
    converged: np.ndarray
    """``(S,)`` bool: the greedy strategies stood still for ``window`` rounds."""
    stop_round: np.ndarray
    """``(S,)`` the round in which the session stopped (converged or ``max_rounds``)."""
    strategies: np.ndarray
    """``(S, n, m^n)`` each station's greedy level in each state when it stopped."""
    last_state: np.ndarray
    """``(S,)`` the state (last joint action's index) when it stopped."""
    seconds: float = 0.0
    """Wall-clock time of the run."""
    rounds_run: int = 0
    """Rounds of the vectorised loop (the slowest session's)."""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def rounds_to_converge(self) -> np.ndarray:
        """``(S,)`` rounds until the strategies last changed (Calvano's time to
        convergence: the stop round less the window), for converged sessions; else -1."""
        return np.where(self.converged, self.stop_round - self.config.window, -1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config),
            "converged": self.converged.tolist(),
            "stop_round": self.stop_round.tolist(),
            "last_state": self.last_state.tolist(),
            "seconds": self.seconds,
            "rounds_run": self.rounds_run,
            "meta": self.meta,
        }


def initial_q(rewards: np.ndarray, m: int, delta: float) -> np.ndarray:
    """``(n, m)`` Calvano's initial values: each station's mean reward at each of its levels
    over the rivals' joint levels, over ``1 − δ`` (the same in every state).

    Example:
        >>> r = np.array([[1.0, 1.0], [3.0, 0.0], [0.0, 3.0], [2.0, 2.0]])
        >>> initial_q(r, 2, 0.5).tolist()
        [[4.0, 2.0], [4.0, 2.0]]
    """
    n = rewards.shape[1]
    dense = rewards.reshape((m,) * n + (n,))
    rows = [np.moveaxis(dense[..., i], i, 0).reshape(m, -1).mean(axis=1) for i in range(n)]
    return np.stack(rows) / (1.0 - delta)


class _Sessions:
    """The learning state of all sessions, flattened: row ``(s·n + i)·m^n + state`` of
    ``q`` is station ``i``'s Q-values in that state of session ``s``."""

    def __init__(self, rewards: np.ndarray, m: int, cfg: QLearningConfig) -> None:
        S, n = cfg.sessions, rewards.shape[1]
        self.n, self.m, self.n_states = n, m, m**n
        self.rewards = rewards
        q0 = initial_q(rewards, m, cfg.delta)  # (n, m)
        self.q = np.broadcast_to(q0[None, :, None, :], (S, n, self.n_states, m)).reshape(-1, m)
        self.q = self.q.copy()
        self.greedy = self.q.argmax(axis=1)
        self.value = self.q.max(axis=1)
        self.base = (np.arange(S)[:, None] * n + np.arange(n)[None, :]) * self.n_states
        self.powers = m ** np.arange(n - 1, -1, -1)

    def learn(
        self, active: np.ndarray, state: np.ndarray, stable: np.ndarray, draws: tuple, cfg: Any
    ) -> list[tuple[int, int, int, np.ndarray]]:
        """Play ``len(eps)`` rounds for the ``active`` sessions, updating ``state`` and
        ``stable`` (rounds since a greedy change) in place. Returns, for each session
        whose ``stable`` reached the window, ``(position in active, round, state,
        strategies)`` as they were in that round (the session plays on to the block's
        end, but what it learned after converging is never used)."""
        explore, random_level, t0 = draws
        base, alpha, delta, m = self.base[active], cfg.alpha, cfg.delta, self.m
        flat, powers = self.q.reshape(-1), self.powers
        st, stb = state[active], stable[active]
        rows = base + st[:, None]
        hits = []
        for j in range(len(explore)):
            greedy = self.greedy.take(rows)
            action = greedy.copy()
            np.copyto(action, random_level[j], where=explore[j])
            nxt = action @ powers
            next_rows = base + nxt[:, None]
            target = self.rewards.take(nxt, axis=0) + delta * self.value.take(next_rows)
            cell = rows * m + action
            old = flat.take(cell)
            flat.put(cell, old + alpha * (target - old))
            new_greedy = self.q.take(rows, axis=0).argmax(axis=-1)
            self.greedy.put(rows, new_greedy)
            self.value.put(rows, flat.take(rows * m + new_greedy))
            stb = np.where((new_greedy != greedy).any(axis=1), 0, stb + 1)
            if (stb == cfg.window).any():
                for k in np.flatnonzero(stb == cfg.window):
                    hits.append((int(k), t0 + j + 1, int(st[k]), self.strategies(int(active[k]))))
            st, rows = nxt, next_rows
        state[active], stable[active] = st, stb
        return hits

    def strategies(self, session: int) -> np.ndarray:
        """``(n, m^n)`` greedy levels of one session."""
        start = self.base[session, 0]
        return self.greedy[start : start + self.n * self.n_states].reshape(self.n, -1).copy()


def run_qlearning(table: PayoffTable, config: QLearningConfig | None = None) -> QLearningResult:
    """Run ``config.sessions`` Q-learning sessions on ``table``'s grid game.

    Args:
        table: the stage game (fills itself if lazy: the initial values read every row).
        config: the learners' settings; ``None``: Calvano's baseline, 100 sessions.
    """
    cfg = config or QLearningConfig()
    t_start = time.perf_counter()
    rewards = table.dense().reshape(-1, table.n_agents) / table.reward_scale
    sessions = _Sessions(rewards, table.m, cfg)
    rng = np.random.default_rng(cfg.seed)
    S, n, m = cfg.sessions, table.n_agents, table.m
    state = rng.integers(0, sessions.n_states, S)
    stable = np.zeros(S, dtype=np.int64)
    stop = np.full(S, cfg.max_rounds, dtype=np.int64)
    converged = np.zeros(S, dtype=bool)
    strategies = np.zeros((S, n, sessions.n_states), dtype=np.int64)
    last_state = np.zeros(S, dtype=np.int64)
    active, t = np.arange(S), 0
    while active.size and t < cfg.max_rounds:
        block = min(cfg.chunk, cfg.max_rounds - t)
        eps = np.exp(-cfg.beta * (t + np.arange(block)))
        explore = rng.random((block, active.size, n)) < eps[:, None, None]
        levels = rng.integers(0, m, (block, active.size, n))
        hits = sessions.learn(active, state, stable, (explore, levels, t), cfg)
        for k, round_, at, learned in hits:
            s = int(active[k])
            if not converged[s]:  # the first time its window filled
                converged[s], stop[s], last_state[s], strategies[s] = True, round_, at, learned
        t += block
        active = active[~converged[active]]
    for left in active.tolist():
        strategies[left], last_state[left] = sessions.strategies(left), state[left]
    return QLearningResult(
        cfg, converged, stop, strategies, last_state, time.perf_counter() - t_start, t
    )
