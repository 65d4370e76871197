"""A serial multi-agent vector env for any PettingZoo ``ParallelEnv`` (no processes).

Same interface as :class:`evcs_gym.wrappers.EVCSVectorEnv` — batched dict observations
``{agent: (num_envs, obs_dim)}``, same-step autoreset with the final observation in
``infos[i][agent]["final_observation"]`` — so :class:`~evcs_gym.baselines.GameTrainer`
can train on any ParallelEnv, e.g. MPE2's ``simple_spread_v3``. Copies must keep all
agents alive for the whole episode (the centralised critics need every agent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

__all__ = ["SerialVecEnv"]


class SerialVecEnv:
    """``num_envs`` copies of a ParallelEnv stepped one after another.

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> venv = SerialVecEnv([lambda: simple_spread_v3.parallel_env(
        ...     N=2, max_cycles=5, continuous_actions=True)] * 2)
        >>> obs, _ = venv.reset(seed=0)
        >>> obs["agent_0"].shape[0]
        2
    """

    def __init__(self, env_fns: Sequence[Callable[[], ParallelEnv]]) -> None:
        if not env_fns:
            raise ValueError("`env_fns` must hold at least one constructor")
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.possible_agents = list(self.envs[0].possible_agents)
        for a in self.possible_agents:
            if not isinstance(self.envs[0].action_space(a), spaces.Box):
                raise TypeError(f"agent {a!r}: only Box action spaces are supported")

    def observation_space(self, agent: str) -> spaces.Space:
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        return self.envs[0].action_space(agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        obs, infos = [], []
        for i, env in enumerate(self.envs):
            o, info = env.reset(seed=None if seed is None else seed + i, options=options)
            obs.append(o)
            infos.append(info)
        return self._stack(obs), infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, np.ndarray],
        dict[str, np.ndarray],
        dict[str, np.ndarray],
        list[dict[str, dict[str, Any]]],
    ]:
        out_obs, infos = [], []
        rewards = {a: np.zeros(self.num_envs) for a in self.possible_agents}
        terms = {a: np.zeros(self.num_envs, bool) for a in self.possible_agents}
        truncs = {a: np.zeros(self.num_envs, bool) for a in self.possible_agents}
        for i, env in enumerate(self.envs):
            act = {a: np.asarray(actions[a][i]) for a in env.agents}
            obs, rew, term, trunc, info = env.step(act)
            info = {a: dict(info.get(a, {})) for a in self.possible_agents}
            for a in self.possible_agents:
                rewards[a][i] = rew.get(a, 0.0)
                terms[a][i] = term.get(a, True)
                truncs[a][i] = trunc.get(a, True)
            if not env.agents or all(term.get(a) or trunc.get(a) for a in self.possible_agents):
                for a in self.possible_agents:
                    info[a]["final_observation"] = obs.get(a)
                obs, _ = env.reset()
            out_obs.append(obs)
            infos.append(info)
        return self._stack(out_obs), rewards, terms, truncs, infos

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _stack(self, obs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {
            a: np.stack([np.asarray(o[a], dtype=np.float32) for o in obs])
            for a in self.possible_agents
        }
