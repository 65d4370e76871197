"""Train one (library, algorithm) pair on one task and seed; return the cell's result.

Each library lives in the Python environment that can hold it (``noxfile.py``): evcs-gym's
own baselines in the core environment, BenchMARL, AgileRL and RLlib in theirs. A runner
module imports only its own library, so :func:`run_cell` works in any of them for the
libraries that are installed there.

A cell's result is a JSON-safe dict: what ran (task, library, algorithm, seed, budget),
the env steps actually used, wall time, versions, and the score: for EVCS tasks the
verified NashConv of the learned pure prices (:func:`marl.runners.common.verify`), for
the others the evaluation returns (:func:`marl.evaluation.evaluate_returns`).
"""

from __future__ import annotations

import importlib
from typing import Any

from marl.tasks import Task

__all__ = ["LIBRARIES", "RUNNER_MODULES", "run_cell", "supports"]

LIBRARIES: dict[str, tuple[str, ...]] = {
    "ours": ("maddpg", "iddpg", "mfddpg"),
    "benchmarl": ("maddpg", "iddpg", "masac", "mappo"),
    "agilerl": ("maddpg", "matd3"),
    "rllib": ("ppo",),
}
"""Algorithms of each library in the grid."""

RUNNER_MODULES = {
    "ours": "marl.runners.ours",
    "benchmarl": "marl.runners.benchmarl_runner",
    "agilerl": "marl.runners.agilerl_runner",
    "rllib": "marl.runners.rllib_runner",
}

UNSUPPORTED: dict[tuple[str, str], str] = {
    ("rllib", "tiny_repeated"): "examples/rllib_pricing.py trains the one-step game only",
    ("rllib", "siouxfalls_repeated"): "examples/rllib_pricing.py trains the one-step game only",
}
"""(library, task) pairs the grid skips, with the reason (printed in the report)."""


def supports(library: str, task: Task) -> str | None:
    """None if ``library`` runs ``task`` in the grid, else the reason it does not."""
    return UNSUPPORTED.get((library, task.name))


def run_cell(
    library: str, algorithm: str, task: Task, seed: int, budget: int, **options: Any
) -> dict[str, Any]:
    """Train and score one cell (see the module docstring) with ``library``'s runner."""
    if library not in LIBRARIES:
        raise ValueError(f"unknown library {library!r}; known: {sorted(LIBRARIES)}")
    if algorithm not in LIBRARIES[library]:
        raise ValueError(
            f"library {library!r} has no algorithm {algorithm!r}; it has {LIBRARIES[library]}"
        )
    if (reason := supports(library, task)) is not None:
        raise ValueError(f"{library} does not run {task.name}: {reason}")
    if budget < 1:
        raise ValueError(f"`budget` must be >= 1, got {budget}")
    module = importlib.import_module(RUNNER_MODULES[library])
    return module.run(algorithm, task, seed, budget, **options)
