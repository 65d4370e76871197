"""What every runner shares: the EVCS verification, loading an example, the result dict."""

from __future__ import annotations

import importlib.util
import platform
import sys
import time
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "REPO",
    "VERIFY",
    "cell_result",
    "evcs_score",
    "load_example",
    "package_versions",
]

REPO = Path(__file__).resolve().parents[3]

VERIFY: dict[str, dict[str, int]] = {
    "tiny": {"budget": 32, "seeds": 4},
    "siouxfalls": {"budget": 16, "seeds": 4},
}
"""The deviation search of every EVCS cell, by scenario: evaluations per station (on the
first seed) and the seeds each gain is re-evaluated on. The same for every algorithm."""

DISTRIBUTIONS = (
    "evcs-gym",
    "torch",
    "numpy",
    "gymnasium",
    "pettingzoo",
    "uxsim",
    "mpe2",
    "vmas",
    "benchmarl",
    "torchrl",
    "tensordict",
    "agilerl",
    "ray",
)


def package_versions() -> dict[str, str]:
    """Versions of the grid's packages installed in this environment, and Python's."""
    out = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def load_example(name: str) -> Any:
    """Import ``examples/<name>.py`` as a module (registered, so dataclasses work)."""
    path = REPO / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def verify_options(scenario: str, smoke: bool) -> dict[str, int]:
    """The verification's budget and seeds for ``scenario`` (CI smoke: 4 and 2)."""
    return {"budget": 4, "seeds": 2} if smoke else dict(VERIFY.get(scenario, VERIFY["tiny"]))


def evcs_score(certificate: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics of an EVCS cell from ``ExploitabilityResult.to_dict()``."""
    total = float(sum(certificate["rewards"].values()))
    return {
        "relative_nash_conv": float(certificate["relative_nash_conv"]),
        "relative_nash_conv_se": certificate["relative_nash_conv_se"],
        "total_revenue": total,
        "verify_evaluations": int(certificate["evaluations"]),
        "prices": {a: list(map(float, v)) for a, v in certificate["prices"].items()},
        "gains": {a: d["relative_gain"] for a, d in certificate["deviations"].items()},
    }


def cell_result(
    *,
    library: str,
    algorithm: str,
    task: Any,
    seed: int,
    budget: int,
    env_steps: int,
    started: float,
    score: Mapping[str, Any],
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON-safe record of one cell."""
    return {
        "task": task.name,
        "env": task.env,
        "library": library,
        "algorithm": algorithm,
        "seed": int(seed),
        "budget": int(budget),
        "unit": task.unit,
        "env_steps": int(env_steps),
        "wall_s": round(time.perf_counter() - started, 2),
        "settings": dict(settings or {}),
        "versions": package_versions(),
        **{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in score.items()},
    }
