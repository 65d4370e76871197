"""Normalised actions for the PettingZoo pricing game (Gymnasium ``RescaleAction`` for agents).

For the Gymnasium view use ``gymnasium.wrappers.RescaleAction`` directly.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import RescaleActions
    >>> env = RescaleActions(evcs_gym.parallel_env(scenario="tiny"))
    >>> env.action_space("A")
    Box(-1.0, 1.0, (4,), float32)
    >>> env.to_env_actions({"A": [-1.0, 0.0, 1.0, 0.5]})["A"].tolist()
    [0.5, 1.25, 2.0, 1.625]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.envs.parallel_env import PendingStep
from evcs_gym.ue.evaluator import EvalResult

__all__ = ["RescaleActions"]


class RescaleActions(BaseParallelWrapper):
    """Affinely map every agent's ``Box`` actions from ``[min_action, max_action]`` to its bounds.

    ``min_action`` maps to the agent's lower price bound, ``max_action`` to the upper one.
    Actions outside the range map outside the bounds and are then clipped (or rejected) by
    the base env. Shape and NaN errors name the agent.

    Args:
        env: a pricing ``ParallelEnv`` with ``Box`` action spaces.
        min_action, max_action: the new action range (``min_action < max_action``).

    Example:
        >>> import evcs_gym
        >>> env = RescaleActions(evcs_gym.parallel_env(scenario="tiny"), 0.0, 1.0)
        >>> _ = env.reset(seed=0)
        >>> infos = env.step({"A": [0.0, 0.5, 1.0, 1.0], "B": [0.5] * 4})[4]
        >>> infos["A"]["prices"].tolist()
        [0.5, 1.25, 2.0, 2.0]
    """

    def __init__(self, env: ParallelEnv, min_action: float = -1.0, max_action: float = 1.0) -> None:
        super().__init__(env)
        if not (np.isfinite(min_action) and np.isfinite(max_action) and min_action < max_action):
            raise ValueError(
                "`min_action` must be finite and below `max_action`, actually: "
                f"{min_action!r}, {max_action!r}"
            )
        self.min_action = float(min_action)
        self.max_action = float(max_action)
        self.metadata = dict(env.metadata)
        self.possible_agents = list(env.possible_agents)
        self.action_spaces = {}
        for a in self.possible_agents:
            box = env.action_space(a)
            if not isinstance(box, spaces.Box):
                raise TypeError(f"RescaleActions needs Box action spaces, agent {a!r} has {box}")
            self.action_spaces[a] = spaces.Box(
                np.full(box.shape, self.min_action, dtype=np.float32),
                np.full(box.shape, self.max_action, dtype=np.float32),
                dtype=np.float32,
            )

    def action_space(self, agent: str) -> spaces.Box:
        return self.action_spaces[agent]

    def to_env_actions(self, actions: Mapping[str, Any]) -> dict[str, Any]:
        """Actions in the wrapped env's units (agents the wrapped env doesn't know pass as is)."""
        if not isinstance(actions, Mapping):
            raise ValueError(f"`actions` must be a dict {{agent: action}}, got {actions!r}")
        out: dict[str, Any] = {}
        for agent, raw in actions.items():
            if agent not in self.action_spaces:
                out[agent] = raw
                continue
            try:
                x = np.asarray(raw, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"action of agent {agent!r} is not numeric: {raw!r}") from None
            box = self.env.action_space(agent)
            if x.shape != box.shape:
                raise ValueError(
                    f"action of agent {agent!r} must have shape {box.shape}, got shape "
                    f"{x.shape}: {raw!r}"
                )
            low = box.low.astype(np.float64)
            high = box.high.astype(np.float64)
            frac = (x - self.min_action) / (self.max_action - self.min_action)
            out[agent] = low + frac * (high - low)
        return out

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        return self.env.step(self.to_env_actions(actions))

    def begin_step(self, actions: Mapping[str, Any]) -> PendingStep:
        """Two-phase step (see :meth:`EVCSPricingParallelEnv.begin_step`)."""
        return self.env.begin_step(self.to_env_actions(actions))

    def end_step(self, pending: PendingStep, result: EvalResult) -> tuple[dict, ...]:
        return self.env.end_step(pending, result)

    def __str__(self) -> str:
        return f"RescaleActions<{self.env}>"
