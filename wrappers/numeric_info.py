"""Flat numeric infos with the same keys at reset and at every step (for TensorDict specs).

The pricing game's ``infos[agent]`` are rich: nested ``ue_stats`` dicts, per-iteration
histories of varying length, booleans, and nothing at all at ``reset``. Libraries that
build a fixed spec from the infos — TorchRL's ``PettingZooWrapper`` builds its info spec
from the *reset* infos and then fails on (or drops) any key that appears only at step
time, BenchMARL inherits that — need every key present from the start, each a number or
a fixed-shape float array. :class:`NumericInfo` gives them exactly that:

| key                   | shape | content (at reset: 0)                                     |
|-----------------------|-------|-----------------------------------------------------------|
| `revenue`             | ()    | the station's revenue, currency                           |
| `reward_raw`          | ()    | its unscaled reward (revenue − energy cost)               |
| `prices`              | (P,)  | the evaluated (possibly clipped) prices per period        |
| `flows`               | (P,)  | vehicles that started charging in each period             |
| `action_clipped`      | ()    | 1.0 if the action was clipped into the bounds             |
| `converged`           | ()    | 1.0 if the UE met its stop rule                           |
| `revenue_se`          | ()    | standard error of the revenue (``ue_stats["revenue_se"]``)|
| `stationary_mean`     | ()    | 1.0 if the payoff is the UE's stationary mean (no rule)   |
| `ue_iterations`       | ()    | UE iterations of the evaluation                           |
| every number of       | ()    | each ``int`` or ``float`` key of                          |
| ``ue_stats``          |       | :class:`~evcs_gym.ue.result.UEStats`, under its own name  |
|                       |       | (:data:`UE_STATS_KEYS`: ``relative_gap``,                 |
|                       |       | ``completed_ratio``, ``charging_relative_gap``, ...)      |
| `round`               | ()    | rounds played in the episode (0 at reset)                 |

The ``ue_stats`` keys are taken from the :class:`~evcs_gym.ue.result.UEStats` type, so a
number added there is reported here too. Scalars are Python floats, per-period entries
``float64`` arrays. The observations, rewards and spaces are those of the wrapped env.
For the full infos use the env without this wrapper.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import HistoryWrapper, NumericInfo
    >>> env = NumericInfo(HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=2))
    >>> obs, infos = env.reset(seed=0)
    >>> list(infos["A"]) == list(env.info_keys), infos["A"]["flows"].tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    >>> infos = env.step({"A": [1.0] * 4, "B": [1.5] * 4})[4]
    >>> infos["A"]["prices"].tolist(), infos["A"]["round"], infos["B"]["revenue"] >= 0
    ([1.0, 1.0, 1.0, 1.0], 1.0, True)
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.envs.parallel_env import EVCSPricingParallelEnv, PendingStep
from evcs_gym.ue.result import EvalResult, UEStats

__all__ = ["NUMERIC_INFO_KEYS", "UE_STATS_KEYS", "NumericInfo"]

PER_PERIOD_KEYS = ("prices", "flows")
_TOP_LEVEL = ("revenue", "reward_raw", "action_clipped", "converged", "ue_iterations")
UE_STATS_KEYS: tuple[str, ...] = tuple(
    key for key, kind in typing.get_type_hints(UEStats).items() if kind in (int, float)
)
"""The numeric keys of :class:`~evcs_gym.ue.result.UEStats`, reported as they are."""
NUMERIC_INFO_KEYS: tuple[str, ...] = (
    "revenue",
    "reward_raw",
    "prices",
    "flows",
    "action_clipped",
    "converged",
    "stationary_mean",
    "revenue_se",
    "ue_iterations",
    *UE_STATS_KEYS,
    "round",
)
"""Every key :class:`NumericInfo` can report, in the order it reports them."""


class NumericInfo(BaseParallelWrapper):
    """Replace every agent's infos by a fixed set of numeric keys, zeros at ``reset``.

    See the module docstring for the keys. Works on the one-step game and on any stack of
    the package's wrappers over it (:class:`~evcs_gym.wrappers.HistoryWrapper`,
    :class:`~evcs_gym.wrappers.RescaleActions`), including their two-phase
    ``begin_step`` / ``end_step``. Put it outermost: a wrapper above it that adds keys
    at step time only (none of this package's do) would break the fixed key set again.

    Args:
        env: an EVCS pricing ``ParallelEnv``, possibly wrapped.
        keys: the keys to report, a subset of :data:`NUMERIC_INFO_KEYS` (default: all),
            in the order given.

    Example:
        >>> import evcs_gym
        >>> env = NumericInfo(evcs_gym.parallel_env(scenario="tiny"), keys=["revenue", "flows"])
        >>> env.info_shapes
        {'revenue': (), 'flows': (4,)}
        >>> env.reset(seed=0)[1]["B"]
        {'revenue': 0.0, 'flows': array([0., 0., 0., 0.])}
    """

    def __init__(self, env: ParallelEnv, keys: Sequence[str] | None = None) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, EVCSPricingParallelEnv):
            raise TypeError(
                f"NumericInfo needs an EVCSPricingParallelEnv (possibly wrapped), got {env!r}"
            )
        if keys is None:
            keys = NUMERIC_INFO_KEYS
        if isinstance(keys, str) or not isinstance(keys, Sequence):
            raise ValueError(f"`keys` must be a sequence of info keys, actually: {keys!r}")
        unknown = [k for k in keys if k not in NUMERIC_INFO_KEYS]
        if unknown or not keys or len(set(keys)) != len(keys):
            raise ValueError(
                f"`keys` must be distinct names from {list(NUMERIC_INFO_KEYS)}, actually: "
                f"{list(keys)!r}"
            )
        self.info_keys: tuple[str, ...] = tuple(keys)
        self.metadata = dict(env.metadata)
        self.possible_agents = list(env.possible_agents)
        self.n_periods = int(env.unwrapped.n_periods)
        self._round = 0

    @property
    def info_shapes(self) -> dict[str, tuple[int, ...]]:
        """``{key: shape}`` of every reported info entry (the same for every agent)."""
        return {k: (self.n_periods,) if k in PER_PERIOD_KEYS else () for k in self.info_keys}

    def zero_info(self) -> dict[str, Any]:
        """One agent's infos at ``reset``: every key, all zeros."""
        return {
            k: np.zeros(self.n_periods) if k in PER_PERIOD_KEYS else 0.0 for k in self.info_keys
        }

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self._round = 0
        return obs, {a: self.zero_info() for a in infos}

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        return self._numeric(self.env.step(actions))

    def begin_step(self, actions: Mapping[str, Any]) -> PendingStep:
        """Two-phase step (see :meth:`EVCSPricingParallelEnv.begin_step`)."""
        return self.env.begin_step(actions)

    def end_step(self, pending: PendingStep, result: EvalResult) -> tuple[dict, ...]:
        return self._numeric(self.env.end_step(pending, result))

    # ------------------------------------------------------------------ internals
    def _numeric(self, out: tuple) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminations, truncations, infos = out
        self._round += 1
        return (
            obs,
            rewards,
            terminations,
            truncations,
            {a: self._agent_info(a, info) for a, info in infos.items()},
        )

    def _agent_info(self, agent: str, info: Mapping[str, Any]) -> dict[str, Any]:
        missing = [k for k in ("prices", "flows", "ue_stats", *_TOP_LEVEL) if k not in info]
        if missing:
            raise ValueError(
                f"infos of agent {agent!r} lack {missing}: NumericInfo needs the pricing "
                f"game's step infos, got keys {sorted(info)}"
            )
        stats: UEStats = info["ue_stats"]
        numbers: Mapping[str, object] = stats
        values: dict[str, Any] = {k: info[k] for k in ("prices", "flows", *_TOP_LEVEL)}
        values.update({key: numbers[key] for key in UE_STATS_KEYS})
        values["stationary_mean"] = float(stats["payoff"] != "final_iteration")
        values["revenue_se"] = info["revenue_se"]
        values["round"] = info.get("round", self._round)
        out: dict[str, Any] = {}
        for k in self.info_keys:
            if k in PER_PERIOD_KEYS:
                out[k] = np.array(values[k], dtype=np.float64).reshape(self.n_periods)
            else:
                out[k] = float(values[k])
        return out

    def __str__(self) -> str:
        return f"NumericInfo<{self.env}>"
