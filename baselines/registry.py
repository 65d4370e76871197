"""The learners by name, known without importing them (or PyTorch).

:data:`ALGORITHM_CLASSES` names each learner's class by its import path, so that code
which only needs the names -- a command line's ``--algo`` choices, say -- can have them
while PyTorch (an optional dependency) is neither installed nor imported.
:data:`evcs_gym.baselines.ALGORITHMS`, the classes themselves, is built from it on first
use (:func:`load_algorithms`), so the two cannot disagree.

Example:
    >>> from evcs_gym.baselines.registry import ALGORITHM_NAMES
    >>> ALGORITHM_NAMES
    ('maddpg', 'iddpg', 'mfddpg')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evcs_gym.baselines.maddpg import MADDPG

__all__ = ["ALGORITHM_CLASSES", "ALGORITHM_NAMES", "load_algorithm", "load_algorithms"]

ALGORITHM_CLASSES: dict[str, str] = {
    "maddpg": "evcs_gym.baselines.maddpg:MADDPG",
    "iddpg": "evcs_gym.baselines.iddpg:IDDPG",
    "mfddpg": "evcs_gym.baselines.mfddpg:MFDDPG",
}
"""Each learner's ``name`` -> ``"module:Class"`` of its class (importing it imports torch)."""

ALGORITHM_NAMES: tuple[str, ...] = tuple(ALGORITHM_CLASSES)
"""The learners' names, in the order of :data:`ALGORITHM_CLASSES`."""


def load_algorithm(name: str) -> type[MADDPG]:
    """Import and return the class of the learner called ``name`` (this imports torch).

    Args:
        name: one of :data:`ALGORITHM_NAMES`.

    Raises:
        KeyError: ``name`` is not a registered learner.
    """
    module, _, attribute = ALGORITHM_CLASSES[name].partition(":")
    cls: type[MADDPG] = getattr(importlib.import_module(module), attribute)
    return cls


def load_algorithms() -> dict[str, type[MADDPG]]:
    """Every registered learner's class by its name (this imports torch)."""
    return {name: load_algorithm(name) for name in ALGORITHM_NAMES}
