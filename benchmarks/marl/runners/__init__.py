"""Train one (library, algorithm) pair on one task and seed; return the cell's result.

Each library lives in the Python environment that can hold it (``noxfile.py``): evcs-gym's
own baselines in the core environment, BenchMARL, AgileRL and RLlib in theirs. A runner
module imports only its own library, so :func:`run_cell` works in any of them for the
libraries that are installed there.

Each runner module has ``run_evcs(algorithm, task, seed, budget, smoke)`` and
``run_episodic(algorithm, task, seed, budget)``, both returning a :class:`Trained`
(env steps used, score, settings). :func:`run_cell` times it and makes the cell's
JSON-safe record: what ran (task, library, algorithm, seed, budget), the env steps
actually used, wall time, versions, and the score: for EVCS tasks the verified NashConv
of the learned pure prices (:func:`marl.runners.common.evcs_score`), for the others the
evaluation returns (:func:`marl.evaluation.evaluate_returns`).
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from marl.runners.common import cell_result
from marl.tasks import Task

__all__ = [
    "CORE_LIBRARIES",
    "DETERMINISTIC_LIBRARIES",
    "LIBRARIES",
    "RUNNER_MODULES",
    "run_cell",
    "supports",
    "supports_algorithm",
]

LIBRARIES: dict[str, tuple[str, ...]] = {
    "ours": ("maddpg", "iddpg", "mfddpg"),
    "benchmarl": ("maddpg", "iddpg", "masac", "mappo"),
    "agilerl": ("maddpg", "matd3"),
    "rllib": ("ppo",),
    "reference": ("solve", "nash", "collusive", "lower", "mid", "upper"),
}
"""Algorithms of each library in the grid."""

RUNNER_MODULES = {
    "ours": "marl.runners.ours",
    "benchmarl": "marl.runners.benchmarl_runner",
    "agilerl": "marl.runners.agilerl_runner",
    "rllib": "marl.runners.rllib_runner",
    "reference": "marl.runners.reference",
}

CORE_LIBRARIES = ("ours", "reference")
"""Libraries whose runners need only evcs-gym: they run in the core environment."""

DETERMINISTIC_LIBRARIES = ("reference",)
"""Libraries whose cells do not learn: the grid runs them at its first seed only."""

UNSUPPORTED: dict[tuple[str, str], str] = {
    ("rllib", "tiny_repeated"): "examples/rllib_pricing.py trains the one-step game only",
    ("rllib", "siouxfalls_repeated"): "examples/rllib_pricing.py trains the one-step game only",
}
"""(library, task) pairs the grid skips, with the reason (printed in the report)."""


MARKET_ONLY_REFERENCES = ("nash", "collusive", "upper")
"""Reference rows of the market games only (the shipped references, and the ceiling)."""
NON_MARKET_REFERENCES = ("solve",)
"""Reference rows of the 0.2.0 games only (the market games ship their Nash reference)."""


def supports_algorithm(library: str, algorithm: str, task: Task) -> str | None:
    """None if the grid runs ``library``'s ``algorithm`` on ``task``, else why not."""
    if (reason := supports(library, task)) is not None or library != "reference":
        return reason
    if algorithm in MARKET_ONLY_REFERENCES and not task.is_market:
        return f"{task.name} ships no references (a market game's row)"
    if algorithm in NON_MARKET_REFERENCES and task.is_market:
        return f"{task.name} ships its Nash reference (the row `nash`)"
    return None


def supports(library: str, task: Task) -> str | None:
    """None if ``library`` runs ``task`` in the grid, else the reason it does not."""
    if library == "reference" and (not task.is_evcs or task.rounds is not None):
        return "reference rows are profiles of the one-step pricing game"
    return UNSUPPORTED.get((library, task.name))


def run_cell(
    library: str, algorithm: str, task: Task, seed: int, budget: int, **options: Any
) -> dict[str, Any]:
    """Train and score one cell (see the module docstring) with ``library``'s runner.

    ``options``: ``smoke=True`` shrinks the EVCS verification to CI size.
    """
    if library not in LIBRARIES:
        raise ValueError(f"unknown library {library!r}; known: {sorted(LIBRARIES)}")
    if algorithm not in LIBRARIES[library]:
        raise ValueError(
            f"library {library!r} has no algorithm {algorithm!r}; it has {LIBRARIES[library]}"
        )
    if (reason := supports_algorithm(library, algorithm, task)) is not None:
        raise ValueError(f"{library}-{algorithm} does not run {task.name}: {reason}")
    if budget < 1:
        raise ValueError(f"`budget` must be >= 1, got {budget}")
    module = importlib.import_module(RUNNER_MODULES[library])
    started = time.perf_counter()
    if task.is_evcs:
        trained = module.run_evcs(algorithm, task, seed, budget, options.get("smoke", False))
    else:
        trained = module.run_episodic(algorithm, task, seed, budget)
    return cell_result(
        library=library,
        algorithm=algorithm,
        task=task,
        seed=seed,
        budget=budget,
        started=started,
        trained=trained,
    )
