"""The pricing game replayed from a payoff table: a PettingZoo ``ParallelEnv`` in microseconds.

:class:`TablePricingEnv` plays the grid game of a :class:`~evcs_gym.tabular.PayoffTable`:
each station picks a level (``Discrete(m)``), and the step looks its reward up in the
table instead of simulating. A table from :func:`~evcs_gym.tabular.simulator_table` at
seed ``s`` holds exactly what the simulator pays, so the rewards are bit-identical to
``DiscretePrices(parallel_env(scenario=..., eval_seed=s), grid)``'s, at a few
microseconds a step instead of a tenth of a second (``tests/envs/test_table_env.py``).

``rounds=None`` is the one-step game (every step terminates the episode, as the
simulator's); ``rounds=R`` the repeated game of ``R`` rounds (then truncated, as
:class:`~evcs_gym.wrappers.HistoryWrapper`), each station observing the levels of the
last round: Calvano's setting, memory one. Observation of every station (float32):

| Index          | Observation                                            | Min | Max |
|----------------|--------------------------------------------------------|-----|-----|
| 0 … n − 1      | last round's level of each station / (m − 1)           | 0   | 1   |
| n … 2n − 1     | one-hot index of the station in ``possible_agents``    | 0   | 1   |

Before the first round the levels are drawn uniformly from the reset seed
(``initial_levels="random"``), or given (``reset(options={"initial_levels": [...]})``).
``state()`` is the first part alone. ``infos[station]`` holds its ``level``, its
``prices``, ``reward_raw`` (currency) and, where the table has them, its ``flows``.

Example:
    >>> from evcs_gym.tabular import LogitMarket
    >>> market = LogitMarket()
    >>> env = TablePricingEnv(market.table(market.grid(m=3)), rounds=2)
    >>> obs, infos = env.reset(seed=0, options={"initial_levels": [2, 2]})
    >>> obs["1"].tolist()
    [1.0, 1.0, 1.0, 0.0]
    >>> obs, rewards, terms, truncs, infos = env.step({"1": 0, "2": 2})
    >>> obs["2"].tolist(), round(rewards["1"], 4), infos["1"]["prices"].round(3).tolist()
    ([0.0, 1.0, 0.0, 1.0], 0.3519, [1.428])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import ParallelEnv

from evcs_gym.tabular import PayoffTable

__all__ = ["TablePricingEnv"]


class TablePricingEnv(ParallelEnv, EzPickle):
    """The grid game of a payoff table as a ``ParallelEnv`` (module docstring).

    Args:
        table: the payoff table (a lazy one evaluates rows when first played).
        rounds: ``None`` for the one-step game, else the repeated game's length.
        reward_scale: the rewards' divisor; ``"table"``: the table's ``reward_scale``
            (the scenario's, as the simulator's env divides by), ``None``: raw currency.
    """

    metadata: dict[str, Any] = {
        "name": "evcs_table_pricing_v0",
        "is_parallelizable": True,
        "render_modes": [],
    }

    def __init__(
        self,
        table: PayoffTable,
        *,
        rounds: int | None = None,
        reward_scale: float | str | None = "table",
    ) -> None:
        EzPickle.__init__(self, table=table, rounds=rounds, reward_scale=reward_scale)
        if rounds is not None and (
            isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1
        ):
            raise ValueError(f"`rounds` must be None or a positive integer, actually: {rounds!r}")
        self.table = table
        self.grid = table.grid
        self.rounds = rounds
        self.reward_scale = _scale(reward_scale, table)
        self.possible_agents: list[str] = list(table.agents)
        self.agents: list[str] = []
        n, m = table.n_agents, table.m
        self.action_spaces = {a: spaces.Discrete(m) for a in self.possible_agents}
        space = spaces.Box(0.0, 1.0, shape=(2 * n,), dtype=np.float32)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.state_space = spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        self._ids = np.eye(n, dtype=np.float32)
        self._powers = [m ** (n - 1 - i) for i in range(n)]  # row-major profile index
        self._levels = np.zeros(n, dtype=np.int64)
        self._round = 0
        self._np_random: np.random.Generator | None = None

    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode; ``options={"initial_levels": [...]}`` sets the last round's levels."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        n, m = self.table.n_agents, self.table.m
        given = (options or {}).get("initial_levels")
        if given is None:
            self._levels = self.np_random.integers(0, m, n)
        else:
            levels = np.asarray(given)
            if (
                levels.shape != (n,)
                or levels.dtype.kind not in "iu"
                or not ((levels >= 0) & (levels < m)).all()
            ):
                raise ValueError(
                    f"`initial_levels` must be {n} integer levels in [0, {m}), got {given!r}"
                )
            self._levels = levels.astype(np.int64)
        self.agents = list(self.possible_agents)
        self._round = 0
        return self._observations(), {a: {"round": 0} for a in self.agents}

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Play one round: look the joint levels' rewards up in the table."""
        if not self.agents:
            raise RuntimeError("step() called without a running episode; call reset() first")
        self._levels = self._check(actions)
        index = int(sum(p * int(x) for p, x in zip(self._powers, self._levels)))
        raw = self.table.rewards[index]
        if raw[0] != raw[0]:  # NaN: a lazy table's row not evaluated yet
            raw = self.table.lookup(index)
        self._round += 1
        agents = self.agents
        rewards = {a: float(raw[i]) / self.reward_scale for i, a in enumerate(agents)}
        infos = {a: self._info(i, index, raw) for i, a in enumerate(agents)}
        done = self.rounds is None or self._round >= self.rounds
        terms = dict.fromkeys(agents, self.rounds is None)
        truncs = dict.fromkeys(agents, done and self.rounds is not None)
        obs = self._observations()
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        """Last round's levels of every station / (m − 1)."""
        return (self._levels / max(self.table.m - 1, 1)).astype(np.float32)

    def _check(self, actions: Mapping[str, Any]) -> np.ndarray:
        if not isinstance(actions, Mapping) or set(actions) != set(self.agents):
            got = list(actions) if isinstance(actions, Mapping) else actions
            raise ValueError(
                f"`actions` must map every agent {self.agents} to a level, got {got!r}"
            )
        out = np.empty(len(self.possible_agents), dtype=np.int64)
        m = self.table.m
        for i, a in enumerate(self.possible_agents):
            value = actions[a]
            fast = type(value) is int and 0 <= value < m
            if not fast and not _integral(value, m):
                raise ValueError(
                    f"action of agent {a!r} must be an integer level in [0, {self.table.m}), "
                    f"got {value!r}"
                )
            out[i] = int(value)
        return out

    def _observations(self) -> dict[str, np.ndarray]:
        n = len(self.possible_agents)
        obs = np.empty((n, 2 * n), dtype=np.float32)
        obs[:, :n] = self._levels / max(self.table.m - 1, 1)
        obs[:, n:] = self._ids
        return dict(zip(self.possible_agents, obs))

    def _info(self, i: int, index: int, raw: np.ndarray) -> dict[str, Any]:
        info = {
            "level": int(self._levels[i]),
            "prices": self.grid.prices[i, self._levels[i]],
            "reward_raw": float(raw[i]),
            "round": self._round,
        }
        if self.table.flows is not None:
            info["flows"] = self.table.flows[index, i]
        return info

    def __str__(self) -> str:
        return f"TablePricingEnv<{self.table!r}, rounds={self.rounds}>"


def _scale(reward_scale: float | str | None, table: PayoffTable) -> float:
    if reward_scale is None:
        return 1.0
    if isinstance(reward_scale, str):
        if reward_scale != "table":
            raise ValueError(
                f"`reward_scale` must be 'table', None or a positive number, got {reward_scale!r}"
            )
        return table.reward_scale
    if not (np.isfinite(reward_scale) and reward_scale > 0):
        raise ValueError(f"`reward_scale` must be positive, got {reward_scale!r}")
    return float(reward_scale)


def _integral(value: Any, m: int) -> bool:
    try:
        arr = np.asarray(value)
        return bool(
            arr.shape == () and arr.dtype.kind in "iuf" and arr == int(arr) and 0 <= arr < m
        )
    except (TypeError, ValueError, OverflowError):
        return False
