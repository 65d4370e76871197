"""MFDDPG: mean-field DDPG (after Yang et al., 2018, "Mean Field Multi-Agent RL").

Each critic sees its own observation, its own action and the *mean action of the other
agents*: ``Q_i(o_i, a_i, mean_{j != i} a_j)``. The input size no longer grows with the number
of agents.

Actions are first normalised to ``[-1, 1]`` by their Box bounds, so agents with different
bounds are averaged on a common scale. If the other agents' action dims differ, shorter actions
are zero-padded (0 is the centre of the normalised box) to the largest of them before
averaging. With a single agent the mean-field term is empty (the critic is then IDDPG's).

In :meth:`MFDDPG.get_critics` the mean is computed from the actions passed in, so a NashConv
check that fixes the other agents' actions gets the matching mean-field input.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from evcs_gym.baselines.maddpg import MADDPG, MADDPGConfig

__all__ = ["MFDDPG", "MFDDPGConfig"]


@dataclass
class MFDDPGConfig(MADDPGConfig):
    """Hyper-parameters of MFDDPG: exactly the fields (and defaults) of ``MADDPGConfig``."""


class MFDDPG(MADDPG):
    """Mean-field DDPG: ``Q_i(o_i, a_i, mean of the others' normalised actions)``.

    >>> import numpy as np
    >>> from gymnasium.spaces import Box
    >>> obs = {k: Box(-1, 1, (3,)) for k in "abc"}
    >>> acts = {"a": Box(0, 1, (2,)), "b": Box(0, 10, (2,)), "c": Box(-1, 1, (1,))}
    >>> algo = MFDDPG(obs, acts, MFDDPGConfig(seed=2))
    >>> algo._critic_input_dim("a"), algo._critic_input_dim("c")  # 3 + 2 + max(2, 1); 3 + 1 + 2
    (7, 6)
    """

    name = "mfddpg"
    config_cls = MFDDPGConfig

    def _others(self, agent: str) -> list[str]:
        return [a for a in self.agents if a != agent]

    def _mean_field_dim(self, agent: str) -> int:
        return max((self.act_dims[a] for a in self._others(agent)), default=0)

    def _critic_input_dim(self, agent: str) -> int:
        return self.obs_dims[agent] + self.act_dims[agent] + self._mean_field_dim(agent)

    def _critic_context_dim(self, agent: str) -> int:
        return self.obs_dims[agent]

    def _critic_input(
        self, agent: str, obs_n: dict[str, torch.Tensor], act_n: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        parts = [obs_n[agent], act_n[agent]]
        others = self._others(agent)
        if others:
            dim = self._mean_field_dim(agent)
            padded = [F.pad(act_n[a], (0, dim - self.act_dims[a])) for a in others]
            parts.append(torch.stack(padded).mean(dim=0))
        return torch.cat(parts, dim=-1)
