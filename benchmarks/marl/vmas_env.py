"""A VMAS scenario as a PettingZoo ``ParallelEnv`` (one env, CPU), for learners that take one.

VMAS ships wrappers for RLlib, gym and gymnasium but not PettingZoo; evcs-gym's baselines,
AgileRL and the shared evaluation (:mod:`marl.evaluation`) all step PettingZoo envs.
BenchMARL runs the same scenario through its own ``VmasTask`` (TorchRL's ``VmasEnv``).

VMAS draws its resets from torch's global generator, which ``reset(seed=...)`` seeds
(``vmas.Environment.seed``): reproducible, but not isolated from other torch users in the
process.

Example:
    >>> from marl.vmas_env import VmasParallelEnv
    >>> env = VmasParallelEnv("navigation", max_steps=5, n_agents=2)
    >>> obs, _ = env.reset(seed=0)
    >>> sorted(obs), env.action_space("agent_0").shape
    (['agent_0', 'agent_1'], (2,))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

__all__ = ["VmasParallelEnv"]


def _box(space: Any) -> spaces.Box:
    """A gym (VMAS) Box as a gymnasium Box of float32."""
    return spaces.Box(
        low=np.asarray(space.low, dtype=np.float32),
        high=np.asarray(space.high, dtype=np.float32),
        dtype=np.float32,
    )


class VmasParallelEnv(ParallelEnv):
    """``vmas.make_env(scenario, num_envs=1, continuous_actions=True, **kwargs)`` as a
    ParallelEnv: every agent acts each step; an episode ends at ``max_steps`` (truncation)
    or when the scenario says it is done (termination)."""

    metadata = {"name": "vmas_v0", "render_modes": []}

    def __init__(self, scenario: str, *, max_steps: int, seed: int = 0, **kwargs: Any) -> None:
        import vmas

        if max_steps < 1:
            raise ValueError(f"`max_steps` must be >= 1, got {max_steps}")
        self.scenario = scenario
        self.max_steps = int(max_steps)
        self._env = vmas.make_env(
            scenario,
            num_envs=1,
            device="cpu",
            continuous_actions=True,
            dict_spaces=True,
            max_steps=None,  # truncation is ours: VMAS would fold it into `done`
            seed=seed,
            **kwargs,
        )
        self.possible_agents = [agent.name for agent in self._env.agents]
        self.agents: list[str] = []
        self._obs_spaces = {a: _box(self._env.observation_space[a]) for a in self.possible_agents}
        self._act_spaces = {a: _box(self._env.action_space[a]) for a in self.possible_agents}
        self._steps = 0

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._env.seed(seed)
        obs = self._env.reset()
        self.agents = list(self.possible_agents)
        self._steps = 0
        return self._numpy(obs), {a: {} for a in self.agents}

    def step(self, actions: Mapping[str, Any]):
        import torch

        if not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"`actions` has no entry for agent(s) {missing}")
        act = {
            a: torch.as_tensor(np.asarray(actions[a], dtype=np.float32)).reshape(1, -1)
            for a in self.agents
        }
        obs, rewards, done, _ = self._env.step(act)
        self._steps += 1
        terminated = bool(done[0])
        truncated = self._steps >= self.max_steps and not terminated
        out = (
            self._numpy(obs),
            {a: float(rewards[a][0]) for a in self.agents},
            {a: terminated for a in self.agents},
            {a: truncated for a in self.agents},
            {a: {} for a in self.agents},
        )
        if terminated or truncated:
            self.agents = []
        return out

    def close(self) -> None:
        self.agents = []

    @staticmethod
    def _numpy(obs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        return {a: o[0].detach().cpu().numpy().astype(np.float32) for a, o in obs.items()}
