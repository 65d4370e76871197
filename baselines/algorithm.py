"""The :class:`Algorithm` protocol every multi-agent baseline implements.

The protocol is written for a trainer that steps ``num_envs`` copies of a PettingZoo
``ParallelEnv`` at once: observations arrive as ``dict agent -> array (num_envs, obs_dim)``,
:meth:`Algorithm.sample_actions_batch` returns ``dict agent -> array (num_envs, act_dim)`` with
independent exploration noise per row, :meth:`Algorithm.store_experience` takes the batched
transition and :meth:`Algorithm.learn` performs the gradient updates. A trainer loop looks like::

    obs = vec_env.reset()                                   # agent -> (num_envs, obs_dim)
    for step in range(n_steps):
        actions = algo.sample_actions_batch(obs)            # agent -> (num_envs, act_dim)
        next_obs, rewards, terminations, truncations = vec_env.step(actions)
        algo.store_experience(obs, actions, rewards, next_obs, terminations)
        metrics = algo.learn()                              # None until enough samples
        obs = next_obs

Pass *terminations* (not truncations) as ``dones``: a time-limit truncation must still
bootstrap when ``gamma > 0``. With the default ``gamma = 0`` (stage game) ``dones`` is unused.

:meth:`Algorithm.get_critics` exposes each agent's learned Q-function in a uniform signature,
whatever the critic's real input (centralised, independent or mean-field), so that
:class:`~evcs_gym.baselines.nashconv.NashConvChecker` can run gradient ascent on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import torch

__all__ = ["Algorithm", "CriticFn"]

CriticFn = Callable[[dict[str, torch.Tensor], dict[str, torch.Tensor]], torch.Tensor]
"""``q(obs_all, actions_all) -> values``: inputs map agent -> ``(B, dim)`` tensors, output is
``(B,)``; differentiable with respect to the owning agent's action."""


@runtime_checkable
class Algorithm(Protocol):
    """Interface of a multi-agent learner over Box observation and action spaces.

    All arrays are float32 numpy arrays in dicts keyed by agent name.
    """

    name: str
    """Short identifier, e.g. ``"maddpg"``."""

    def take_action(self, obs: dict[str, np.ndarray], add_noise: bool) -> dict[str, np.ndarray]:
        """Actions for one environment: ``obs[agent]`` has shape ``(obs_dim,)``; the result
        maps the same agents to ``(act_dim,)`` arrays inside the action bounds."""
        ...

    def sample_actions_batch(
        self, obs: dict[str, np.ndarray], batch_size: int | None = None
    ) -> dict[str, np.ndarray]:
        """Exploratory actions for a batch ``(B, obs_dim) -> (B, act_dim)``, with independent
        noise per row. If ``obs`` is unbatched and ``batch_size`` is given, the single
        observation is repeated ``batch_size`` times."""
        ...

    def get_pure_actions(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Noise-free actions for a single ``(obs_dim,)`` or batched ``(B, obs_dim)`` obs."""
        ...

    def store_experience(
        self,
        obs: dict[str, np.ndarray],
        actions: dict[str, np.ndarray],
        rewards: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        dones: dict[str, np.ndarray],
    ) -> None:
        """Store transitions (leading dim B, or unbatched). Raises ``ValueError`` naming the
        agent, the field and the problem on wrong shapes, missing or unknown agents, NaN or
        inf; nothing is stored in that case."""
        ...

    def learn(self) -> dict[str, float] | None:
        """Run the gradient updates; ``None`` while the buffer holds too few samples, else
        metrics such as ``critic_loss/<agent>`` and ``actor_loss/<agent>``."""
        ...

    def get_critics(self) -> dict[str, CriticFn]:
        """Per agent, ``q(obs_all, actions_all) -> (B,)`` differentiable in its own action."""
        ...

    def reset_noise(self) -> None:
        """Restore the exploration std to its initial value."""
        ...

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write network/optimiser state dicts and the config (plain data) to ``path``."""
        ...

    def load(self, path: str | os.PathLike[str]) -> None:
        """Load a checkpoint written by :meth:`save` (``torch.load(weights_only=True)``)."""
        ...
