"""The pricing game as a PettingZoo AEC env (agents act one after another, same game).

:func:`env` is :func:`pettingzoo.utils.conversions.parallel_to_aec` applied to
:func:`evcs_gym.parallel_env`: each station submits its prices in turn, and the joint
profile is evaluated once the last station has acted. Rewards, infos and the episode end
are those of the parallel game.

Example:
    >>> import evcs_gym
    >>> aec = evcs_gym.env(scenario="tiny")
    >>> aec.reset(seed=0)
    >>> for agent in aec.agent_iter():
    ...     obs, reward, termination, truncation, info = aec.last()
    ...     aec.step(None if termination or truncation else [1.25] * 4)
    >>> aec.agents
    []
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec

from evcs_gym.envs.parallel_env import EVCSPricingParallelEnv

__all__ = ["env", "raw_env"]


def raw_env(**kwargs: Any) -> AECEnv:
    """Same as :func:`env` (``parallel_to_aec`` already enforces the call order)."""
    return parallel_to_aec(EVCSPricingParallelEnv(**kwargs))


def env(**kwargs: Any) -> AECEnv:
    """The pricing game as an AEC env; keyword arguments of :class:`EVCSPricingParallelEnv`."""
    return raw_env(**kwargs)
