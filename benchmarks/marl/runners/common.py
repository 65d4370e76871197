"""What every runner shares: the EVCS verification, the library examples, the record."""

from __future__ import annotations

import importlib.util
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "REPO",
    "VERIFY",
    "Trained",
    "cell_result",
    "evcs_score",
    "load_example",
    "package_versions",
    "run_example",
]

REPO = Path(__file__).resolve().parents[3]

VERIFY: dict[str, dict[str, int]] = {
    "tiny": {"budget": 32, "seeds": 4, "search_seeds": 2},
    "siouxfalls": {"budget": 16, "seeds": 4, "search_seeds": 2},
    "tiny_market": {"budget": 32, "seeds": 4, "search_seeds": 2},
    "siouxfalls_market": {"budget": 32, "seeds": 4, "search_seeds": 2},
}
"""The deviation search of every EVCS cell, by scenario: candidates per station, each
scored on the mean of the first ``search_seeds`` seeds (as ``evcs-gym train`` does), and
the seeds each gain is re-evaluated on. The same for every algorithm and library. On
Sioux Falls 16 reach each period alone at each bound (the 0.2.0 game's deviations are
to the floor); on the market games 32 also reach the 7 uniform levels and the combined
move, where a market's best deviation often is. A scenario not named here gets
``tiny``'s."""

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
        except PackageNotFoundError:  # not in this environment: left out of the record
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


def spread_over_cores(task: Any, smoke: bool) -> bool:
    """Whether a peer library should step its game copies in worker processes: on the
    road networks, where an evaluation takes seconds; not on ``tiny`` or at smoke size,
    where starting the workers costs more than it saves."""
    return task.config["scenario"] != "tiny" and not smoke


def verify_options(scenario: str, smoke: bool) -> dict[str, int]:
    """The verification's budget and seeds for ``scenario`` (CI smoke: 4 and 2)."""
    if smoke:
        return {"budget": 4, "seeds": 2, "search_seeds": 1}
    return dict(VERIFY.get(scenario, VERIFY["tiny"]))


def evcs_score(certificate: Mapping[str, Any], scenario: str | None = None) -> dict[str, Any]:
    """The metrics of an EVCS cell from ``ExploitabilityResult.to_dict()``.

    With ``scenario`` a game that ships references (the market games), the cell also
    gets the collusion index Δ of its prices, evaluated on the certificate's seeds
    (``collusion_index``: a dict with ``delta`` and ``delta_se``); else it is None.
    """
    total = float(sum(certificate["rewards"].values()))
    prices = {a: list(map(float, v)) for a, v in certificate["prices"].items()}
    return {
        "relative_nash_conv": float(certificate["relative_nash_conv"]),
        "relative_nash_conv_se": certificate["relative_nash_conv_se"],
        "total_revenue": total,
        "verify_evaluations": int(certificate["evaluations"]),
        "prices": prices,
        "gains": {a: d["relative_gain"] for a, d in certificate["deviations"].items()},
        "collusion_index": _collusion(scenario, prices, certificate.get("seeds")),
    }


def _collusion(scenario: str | None, prices: Mapping[str, Any], seeds: Any) -> Any:
    if scenario is None:
        return None
    import evcs_gym
    from evcs_gym.equilibrium.collusion import collusion_index
    from evcs_gym.scenarios import load_references

    nd = evcs_gym.load_scenario(scenario)
    references = load_references(nd)
    if references is None:
        return None
    return collusion_index(nd, prices, references, seeds=list(seeds or [0])).to_dict()


@dataclass
class Trained:
    """What a runner returns: env steps used, the score's fields, settings worth keeping."""

    env_steps: int
    score: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)


def run_example(
    example: str,
    algorithm: str,
    task: Any,
    seed: int,
    budget: int,
    smoke: bool,
    rounds: int | None,
    extra: Sequence[str] = (),
) -> Trained:
    """Train and verify on an EVCS task with ``examples/<example>.py``'s ``main(argv)``.

    ``rounds``: the example's ``--rounds`` (None: the flag is not passed); ``extra``:
    further arguments. The example must return ``evaluations`` and its ``certificate``
    (``ExploitabilityResult``).
    """
    verify = verify_options(task.config["scenario"], smoke)
    argv = [
        "--algo", algorithm,
        "--scenario", task.config["scenario"],
        "--budget", str(budget),
        "--seed", str(seed),
        "--verify-budget", str(verify["budget"]),
        "--verify-seeds", str(verify["seeds"]),
        "--verify-search-seeds", str(verify["search_seeds"]),
    ]  # fmt: skip
    if rounds is not None:
        argv += ["--rounds", str(rounds)]
    argv += list(extra)
    out = load_example(example).main(argv)
    return Trained(
        env_steps=out["evaluations"],
        score=evcs_score(out["certificate"].to_dict(), task.config["scenario"]),
        settings={"command": f"python examples/{example}.py " + " ".join(argv)},
    )


def game_of(task: Any) -> dict[str, str] | None:
    """The EVCS game a cell was measured on: the package version and the scenario's
    settings hash (None for the MPE and VMAS tasks)."""
    if task.env != "evcs":
        return None
    import evcs_gym

    nd = evcs_gym.load_scenario(task.config["scenario"], warm_start=False)
    return {"version": evcs_gym.__version__, "settings_hash": nd.settings_hash}


def cell_result(
    *,
    library: str,
    algorithm: str,
    task: Any,
    seed: int,
    budget: int,
    started: float,
    trained: Trained,
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
        "env_steps": int(trained.env_steps),
        "wall_s": round(time.perf_counter() - started, 2),
        "settings": dict(trained.settings),
        "versions": package_versions(),
        "game": game_of(task),
        **{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in trained.score.items()},
    }
