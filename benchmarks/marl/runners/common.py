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
    "verify_argv",
    "verify_options",
]

REPO = Path(__file__).resolve().parents[3]

VERIFY: dict[str, dict[str, Any]] = {
    "tiny": {"search": "converged", "seeds": 4, "search_seeds": 1, "held_out": True},
    "siouxfalls": {"search": "converged", "seeds": 4, "search_seeds": 1, "held_out": True},
    "tiny_market": {"search": "converged", "seeds": 4, "search_seeds": 1, "held_out": True},
    "siouxfalls_market": {"search": "converged", "seeds": 4, "search_seeds": 1, "held_out": True},
}
"""The deviation search of every EVCS cell, by scenario: the converged search (global
candidates, then two rounds of pattern search to 1/192 of the range until a whole pass
finds no gain above the paired noise), each candidate scored on ``search_seeds`` seeds
after the gains' ones (``held_out``: every gain out of sample), and
the seeds each gain is re-evaluated on. The same for every
algorithm and library, and the same as ``evcs-gym train``'s and ``exploit``'s defaults;
``budget`` (absent: the search's cap) may be set. Until evcs-gym 0.3.0 the cells used
fixed budgets of 16 to 32 candidates, which under-reported the market games' NashConv
2-6x (``benchmarks/studies/search_plateau.py``). A scenario not named here gets
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


def verify_options(scenario: str, smoke: bool) -> dict[str, Any]:
    """The verification's search and seeds for ``scenario`` (CI smoke: the converged
    search capped at 4 candidates, 2 seeds)."""
    if smoke:
        return {"search": "converged", "budget": 4, "seeds": 2, "search_seeds": 1, "held_out": True}
    return dict(VERIFY.get(scenario, VERIFY["tiny"]))


def verify_argv(verify: dict[str, Any]) -> list[str]:
    """``verify_options``' answer as the ``--verify-*`` flags of ``evcs-gym train`` and
    of the library examples."""
    argv = ["--verify-search", str(verify["search"])]
    if verify.get("budget") is not None:
        argv += ["--verify-budget", str(verify["budget"])]
    return argv + [
        "--verify-seeds", str(verify["seeds"]),
        "--verify-search-seeds", str(verify["search_seeds"]),
        "--verify-held-out" if verify["held_out"] else "--no-verify-held-out",
    ]  # fmt: skip


def evcs_score(certificate: Mapping[str, Any], scenario: str | None = None) -> dict[str, Any]:
    """The metrics of an EVCS cell from ``ExploitabilityResult.to_dict()``.

    With ``scenario`` a game that ships references (the market games), the cell also
    gets the collusion index Δ of its prices, evaluated on the certificate's seeds
    (``collusion_index``: a dict with ``delta`` and ``delta_se``); else it is None.
    """
    total = float(sum(certificate["rewards"].values()))
    prices = {a: list(map(float, v)) for a, v in certificate["prices"].items()}
    return {
        "search": certificate.get("search", {"method": "budget"}),
        "search_converged": certificate.get("converged"),
        "relative_nash_conv": float(certificate["relative_nash_conv"]),
        "relative_nash_conv_se": certificate["relative_nash_conv_se"],
        "total_revenue": total,
        "verify_evaluations": int(certificate["evaluations"]),
        "prices": prices,
        "gains": {a: d["relative_gain"] for a, d in certificate["deviations"].items()},
        "collusion_index": _collusion(scenario, prices, certificate.get("seeds")),
        "verification": _verification(certificate),
    }


def _verification(certificate: Mapping[str, Any]) -> dict[str, Any]:
    """The certificate's search, seeds and held-out-ness, as ``--reverify`` records them
    (``marl.report.verification_label`` reads ``held_out``)."""
    seeds, search_seeds = certificate.get("seeds") or [], certificate.get("search_seeds") or []
    return {
        "search": certificate.get("search", {"method": "budget"}),
        "seeds": len(seeds),
        "search_seeds": len(search_seeds),
        "held_out": bool(certificate.get("held_out", False)),
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
        *verify_argv(verify),
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
