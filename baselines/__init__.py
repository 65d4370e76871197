"""Generic multi-agent RL baselines for PettingZoo ``ParallelEnv`` games with Box spaces.

Three DDPG-family learners share one implementation and differ only in what each agent's
critic sees:

* :class:`MADDPG` -- centralised critic: all observations and all actions;
* :class:`IDDPG` -- independent critic: own observation and own action;
* :class:`MFDDPG` -- mean-field critic: own observation, own action, mean of the others'.

All implement the :class:`Algorithm` protocol (batched acting and storing for vector envs,
``learn()``, ``get_critics()``, ``save``/``load``). :class:`NashConvChecker` estimates
NashConv from the learned critics by projected gradient ascent on each agent's own action.
:class:`GameTrainer` trains any of them through a multi-agent vector env;
:func:`exploitability` verifies a price profile in the simulator (:func:`verify_prices`
prints the report every trainer ends with) and
:class:`BestResponseDynamics` is the reference equilibrium solver.

Nothing here is specific to EV charging: any env with 1-D Box observations and finite 1-D Box
actions works, e.g. ``MADDPG.from_env(simple_spread_v3.parallel_env(continuous_actions=True))``
with ``from mpe2 import simple_spread_v3``.
"""

from __future__ import annotations

from evcs_gym.baselines.algorithm import Algorithm, CriticFn
from evcs_gym.baselines.best_response import BestResponseDynamics, SolverResult
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
from evcs_gym.baselines.exploitability import ExploitabilityResult, exploitability
from evcs_gym.baselines.history import GameHistory
from evcs_gym.baselines.iddpg import IDDPG, IDDPGConfig
from evcs_gym.baselines.maddpg import MADDPG, MADDPGConfig
from evcs_gym.baselines.mfddpg import MFDDPG, MFDDPGConfig
from evcs_gym.baselines.nashconv import NashConvChecker, NashConvResult
from evcs_gym.baselines.trainer import GameTrainer, TrainerConfig
from evcs_gym.baselines.vec import SerialVecEnv
from evcs_gym.baselines.verification import (
    add_verification_arguments,
    format_prices,
    verify_from_args,
    verify_prices,
)

ALGORITHMS: dict[str, type[MADDPG]] = {"maddpg": MADDPG, "iddpg": IDDPG, "mfddpg": MFDDPG}
"""Algorithm classes by their ``name``."""

__all__ = [
    "ALGORITHMS",
    "BestResponseDynamics",
    "ExploitabilityResult",
    "GameHistory",
    "GameTrainer",
    "SerialVecEnv",
    "SolverResult",
    "TrainerConfig",
    "add_verification_arguments",
    "exploitability",
    "format_prices",
    "verify_from_args",
    "verify_prices",
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
