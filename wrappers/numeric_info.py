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
| `relative_gap`        | ()    | final mean relative gap of all completed platoons         |
| `charging_gap`        | ()    | final mean relative gap of the charging platoons          |
| `charging_tail_share` | ()    | share of charging platoons above the tail gap             |
| `completed_ratio`     | ()    | share of platoons that completed their trip               |
| `round`               | ()    | rounds played in the episode (0 at reset)                 |

Scalars are Python floats, per-period entries ``float64`` arrays; a UE statistic that an
evaluator does not report is ``nan``. The observations, rewards and spaces are those of
the wrapped env. For the full infos use the env without this wrapper.

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

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.envs.parallel_env import EVCSPricingParallelEnv, PendingStep
from evcs_gym.ue.evaluator import EvalResult

__all__ = ["NUMERIC_INFO_KEYS", "NumericInfo"]

PER_PERIOD_KEYS = ("prices", "flows")
_TOP_LEVEL = ("revenue", "reward_raw", "action_clipped", "converged", "ue_iterations")
_UE_STATS = {  # info key -> EvalResult.ue_stats key
    "relative_gap": "relative_gap",
    "charging_gap": "charging_relative_gap",
    "charging_tail_share": "charging_tail_share",
    "completed_ratio": "completed_ratio",
}
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
    *_UE_STATS,
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
        missing = [k for k in ("prices", "flows", *_TOP_LEVEL) if k not in info]
        if missing:
            raise ValueError(
                f"infos of agent {agent!r} lack {missing}: NumericInfo needs the pricing "
                f"game's step infos, got keys {sorted(info)}"
            )
        stats = info.get("ue_stats", {})
        values: dict[str, Any] = {k: info[k] for k in ("prices", "flows", *_TOP_LEVEL)}
        for key, stat in _UE_STATS.items():
            values[key] = stats.get(stat, math.nan)
        payoff = stats.get("payoff")
        stationary = math.nan if payoff is None else float(payoff != "final_iteration")
        values["stationary_mean"] = stationary
        values["revenue_se"] = info.get("revenue_se", math.nan)
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
