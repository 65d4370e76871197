"""Generic multi-agent RL baselines for PettingZoo ``ParallelEnv`` games with Box spaces.

Three DDPG-family learners share one implementation and differ only in what each agent's
critic sees:

* :class:`MADDPG` -- centralised critic: all observations and all actions;
* :class:`IDDPG` -- independent critic: own observation and own action;
* :class:`MFDDPG` -- mean-field critic: own observation, own action, mean of the others'.

All implement the :class:`Algorithm` protocol (batched acting and storing for vector envs,
``learn()``, ``get_critics()``, ``save``/``load``). :class:`NashConvChecker` estimates
NashConv from the learned critics by projected gradient ascent on each agent's own action.

Nothing here is specific to EV charging: any env with 1-D Box observations and finite 1-D Box
actions works, e.g. ``MADDPG.from_env(simple_spread_v3.parallel_env(continuous_actions=True))``
with ``from mpe2 import simple_spread_v3``.
"""

from __future__ import annotations

from evcs_gym.baselines.algorithm import Algorithm, CriticFn
from evcs_gym.baselines.common import (
    Actor,
    Batch,
    Critic,
    GaussianNoise,
    ReplayBuffer,
    mlp,
    polyak_update,
    torch_seeded,
)
from evcs_gym.baselines.iddpg import IDDPG, IDDPGConfig
from evcs_gym.baselines.maddpg import MADDPG, MADDPGConfig
from evcs_gym.baselines.mfddpg import MFDDPG, MFDDPGConfig
from evcs_gym.baselines.nashconv import NashConvChecker, NashConvResult

ALGORITHMS: dict[str, type[MADDPG]] = {"maddpg": MADDPG, "iddpg": IDDPG, "mfddpg": MFDDPG}
"""Algorithm classes by their ``name``."""

__all__ = [
    "ALGORITHMS",
    "IDDPG",
    "MADDPG",
    "MFDDPG",
    "Actor",
    "Algorithm",
    "Batch",
    "Critic",
    "CriticFn",
    "GaussianNoise",
    "IDDPGConfig",
    "MADDPGConfig",
    "MFDDPGConfig",
    "NashConvChecker",
    "NashConvResult",
    "ReplayBuffer",
    "mlp",
    "polyak_update",
    "torch_seeded",
]
