"""Generic multi-agent RL baselines for PettingZoo ``ParallelEnv`` games with Box spaces,
and tabular Q-learning on a payoff table.

Three DDPG-family learners share one implementation and differ only in what each agent's
critic sees:

* :class:`MADDPG` -- centralised critic: all observations and all actions;
* :class:`IDDPG` -- independent critic: own observation and own action;
* :class:`MFDDPG` -- mean-field critic: own observation, own action, mean of the others'.

All implement the :class:`Algorithm` protocol (batched acting and storing for vector envs,
``learn()``, ``get_critics()``, ``save``/``load``). :class:`NashConvChecker` estimates
NashConv from the learned critics by projected gradient ascent on each agent's own action.
:class:`GameTrainer` trains any of them through a multi-agent vector env, and
:mod:`~evcs_gym.baselines.recipe` derives a training run's settings from its budget.
:func:`run_qlearning` (:mod:`~evcs_gym.baselines.qlearning`) is Calvano et al.'s tabular
Q-learning, vectorised over sessions, on a :class:`~evcs_gym.tabular.PayoffTable`;
:mod:`~evcs_gym.baselines.strategies` reads what it learned (limit cycles, Δ, impulse
responses, the repeated-game equilibrium check). The game's equilibrium tools (verified
exploitability, the reference solver) live in :mod:`evcs_gym.equilibrium`; their names
still import from here, with a ``DeprecationWarning``.

The names import from their modules on first use, so ``import evcs_gym.baselines`` does
not import PyTorch (an optional dependency): :data:`ALGORITHM_NAMES`
(:mod:`~evcs_gym.baselines.registry`) names the learners without it, for a command
line's choices say, and :data:`ALGORITHMS` holds their classes.

Nothing here is specific to EV charging: any env with 1-D Box observations and finite 1-D Box
actions works, e.g. ``MADDPG.from_env(simple_spread_v3.parallel_env(continuous_actions=True))``
with ``from mpe2 import simple_spread_v3``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from evcs_gym.baselines.registry import ALGORITHM_NAMES

if TYPE_CHECKING:  # imported on first use below: PyTorch is optional and slow to import
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
    from evcs_gym.baselines.history import GameHistory
    from evcs_gym.baselines.iddpg import IDDPG, IDDPGConfig
    from evcs_gym.baselines.maddpg import MADDPG, MADDPGConfig
    from evcs_gym.baselines.mfddpg import MFDDPG, MFDDPGConfig
    from evcs_gym.baselines.nashconv import NashConvChecker, NashConvResult
    from evcs_gym.baselines.qlearning import QLearningConfig, QLearningResult, run_qlearning
    from evcs_gym.baselines.strategies import (
        ImpulseResponse,
        SessionOutcome,
        impulse_response,
        limit_cycle,
        repeated_game_gains,
        session_outcome,
    )
    from evcs_gym.baselines.trainer import GameTrainer, TrainerConfig, TrainResult
    from evcs_gym.baselines.vec import SerialVecEnv

    ALGORITHMS: dict[str, type[MADDPG]]
    """Algorithm classes by their ``name`` (the names: :data:`ALGORITHM_NAMES`)."""

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_NAMES",
    "GameHistory",
    "GameTrainer",
    "SerialVecEnv",
    "TrainResult",
    "TrainerConfig",
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
    "QLearningConfig",
    "QLearningResult",
    "run_qlearning",
    "ImpulseResponse",
    "SessionOutcome",
    "impulse_response",
    "limit_cycle",
    "repeated_game_gains",
    "session_outcome",
    "ReplayBuffer",
    "mlp",
    "polyak_update",
    "torch_seeded",
]

_EXPORTS: dict[str, str] = {
    "Algorithm": "evcs_gym.baselines.algorithm",
    "CriticFn": "evcs_gym.baselines.algorithm",
    "Actor": "evcs_gym.baselines.common",
    "Batch": "evcs_gym.baselines.common",
    "Critic": "evcs_gym.baselines.common",
    "GaussianNoise": "evcs_gym.baselines.common",
    "ReplayBuffer": "evcs_gym.baselines.common",
    "mlp": "evcs_gym.baselines.common",
    "polyak_update": "evcs_gym.baselines.common",
    "torch_seeded": "evcs_gym.baselines.common",
    "GameHistory": "evcs_gym.baselines.history",
    "IDDPG": "evcs_gym.baselines.iddpg",
    "IDDPGConfig": "evcs_gym.baselines.iddpg",
    "MADDPG": "evcs_gym.baselines.maddpg",
    "MADDPGConfig": "evcs_gym.baselines.maddpg",
    "MFDDPG": "evcs_gym.baselines.mfddpg",
    "MFDDPGConfig": "evcs_gym.baselines.mfddpg",
    "NashConvChecker": "evcs_gym.baselines.nashconv",
    "NashConvResult": "evcs_gym.baselines.nashconv",
    "QLearningConfig": "evcs_gym.baselines.qlearning",
    "QLearningResult": "evcs_gym.baselines.qlearning",
    "run_qlearning": "evcs_gym.baselines.qlearning",
    "ImpulseResponse": "evcs_gym.baselines.strategies",
    "SessionOutcome": "evcs_gym.baselines.strategies",
    "impulse_response": "evcs_gym.baselines.strategies",
    "limit_cycle": "evcs_gym.baselines.strategies",
    "repeated_game_gains": "evcs_gym.baselines.strategies",
    "session_outcome": "evcs_gym.baselines.strategies",
    "GameTrainer": "evcs_gym.baselines.trainer",
    "TrainerConfig": "evcs_gym.baselines.trainer",
    "TrainResult": "evcs_gym.baselines.trainer",
    "SerialVecEnv": "evcs_gym.baselines.vec",
}
"""Each public name imported on first use -> the module it comes from."""

_MOVED_TO_EQUILIBRIUM = (
    "BestResponseDynamics",
    "ExploitabilityResult",
    "SolverResult",
    "add_verification_arguments",
    "exploitability",
    "format_prices",
    "verify_from_args",
    "verify_prices",
)


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules on first use (then cached here),
    and the equilibrium tools' 0.2.0 names, now in :mod:`evcs_gym.equilibrium`
    (deprecated)."""
    if name == "ALGORITHMS":
        from evcs_gym.baselines.registry import load_algorithms

        value: Any = load_algorithms()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _MOVED_TO_EQUILIBRIUM:
        warnings.warn(
            f"`evcs_gym.baselines.{name}` moved to `evcs_gym.equilibrium.{name}` in evcs-gym "
            "0.3.0; import it from there (the old name will be removed)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("evcs_gym.equilibrium"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's attributes and every public name, imported or not yet."""
    return sorted({*globals(), *__all__})
