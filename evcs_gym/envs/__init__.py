"""The pricing game as environments: PettingZoo parallel and AEC, and Gymnasium.

* :func:`parallel_env` / :class:`EVCSPricingParallelEnv` — the one-step game, one agent
  per station (PettingZoo ``ParallelEnv``).
* :func:`env` — the same game as a PettingZoo AEC env.
* :class:`EVCSPricingEnv` — ``gym.make("EVCSPricing-v0")``: joint control or one
  station's best response, optionally repeated (``rounds``).
* :class:`TablePricingEnv` — the game on a price grid replayed from a payoff table
  (:mod:`evcs_gym.tabular`): ``Discrete(m)`` actions, microseconds a step.

Example:
    >>> import evcs_gym
    >>> evcs_gym.parallel_env(scenario="tiny").metadata["name"]
    'evcs_pricing_v0'
"""

from __future__ import annotations

from evcs_gym.envs.aec import env, raw_env
from evcs_gym.envs.gym_env import EVCSPricingEnv
from evcs_gym.envs.parallel_env import (
    EvaluatorLike,
    EVCSPricingParallelEnv,
    PendingStep,
    parallel_env,
)
from evcs_gym.envs.registration import ENV_ID, register_envs
from evcs_gym.envs.table_env import TablePricingEnv

__all__ = [
    "ENV_ID",
    "EVCSPricingEnv",
    "EVCSPricingParallelEnv",
    "EvaluatorLike",
    "PendingStep",
    "TablePricingEnv",
    "env",
    "parallel_env",
    "raw_env",
    "register_envs",
]
