"""Reference rows that need no learning: the solver's equilibrium, the shipped
references and the fixed profiles.

They make the learners' NashConv readable: a learner that ends near the solver's
figure found an equilibrium as good as the reference solver's; one near the fixed
profiles' figures learned little beyond them.

* ``solve``: ``evcs-gym solve``'s equilibrium (best-response dynamics, each round
  verified). On a scenario with a stored equilibrium in ``benchmarks/inputs/`` the
  solver starts there, with the settings of that file's own run (its log in
  ``benchmarks/results/solve_<scenario>.txt``); elsewhere it runs at its defaults.
* ``nash``, ``collusive``: the game's shipped references (the market games:
  :func:`evcs_gym.scenarios.load_references`).
* ``lower``: every station at its lower price bound in every period.
* ``mid``: every station at the middle of its bounds (the learners' untrained centre).
* ``upper``: every station at its upper bound (on the market games, the ceiling).

Every row is verified exactly like a learner's cell (:func:`marl.runners.common.verify_options`),
so its figure is comparable with theirs. The rows do not depend on the cell's seed
beyond the solver's own search; the grid runs them at its first seed only.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from marl.runners.common import REPO, Trained, evcs_score, verify_options
from marl.tasks import Task

SOLVE_OPTIONS: dict[str, list[str]] = {
    "siouxfalls": [
        "--start", str(REPO / "benchmarks" / "inputs" / "solve_siouxfalls.json"),
        "--search", "budget", "--budget-per-station", "24",
        "--rounds", "4",
        "--seeds", "4",
    ],
}  # fmt: skip
"""``evcs-gym solve`` options by scenario (default: none); Sioux Falls's are those of
``benchmarks/results/solve_siouxfalls.txt``."""


REFERENCES = ("nash", "collusive")
"""The rows of a game's shipped references."""


def reference_prices(algorithm: str, scenario: str, seed: int) -> tuple[dict, int, str]:
    """``(prices, evaluations spent finding them, command)`` of a reference row."""
    import evcs_gym
    from evcs_gym.cli import main as cli

    if algorithm == "solve":
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "solve.json"
            argv = ["solve", "--scenario", scenario, "--seed", str(seed), "--workers", "2"]
            argv += SOLVE_OPTIONS.get(scenario, []) + ["--out", str(out)]
            if cli(argv) != 0:
                raise RuntimeError(f"evcs-gym {' '.join(argv)} failed")
            record = json.loads(out.read_text())
        command = "evcs-gym " + " ".join(argv[:-2]).replace(str(REPO) + "/", "")
        return record["prices"], int(record["evaluations"]), command
    nd = evcs_gym.load_scenario(scenario, warm_start=False)
    if algorithm in REFERENCES:
        from evcs_gym.scenarios import load_references

        references = load_references(nd)
        if references is None:
            raise ValueError(f"reference row {algorithm!r}: {scenario!r} ships no references")
        return getattr(references, algorithm), 0, f"the {algorithm} reference of {scenario}"
    where = {"lower": 0.0, "mid": 0.5, "upper": 1.0}
    if algorithm not in where:
        raise ValueError(
            f"unknown reference row {algorithm!r}; known: solve, nash, collusive, lower, mid, upper"
        )
    prices = {
        a: np.full(nd.n_periods, lo + where[algorithm] * (hi - lo))
        for a, (lo, hi) in nd.price_bounds.items()
    }
    return prices, 0, f"{algorithm} bounds"


def outdated_reference(record: dict) -> bool:
    """Whether ``record`` is a ``nash`` / ``collusive`` row whose prices are no longer the
    game's shipped references (they were re-solved on the same game: the row must run
    again, not be re-verified)."""
    if record.get("library") != "reference" or record.get("algorithm") not in REFERENCES:
        return False
    from marl.tasks import TASKS

    scenario = TASKS[record["task"]].config["scenario"]
    shipped, _, _ = reference_prices(record["algorithm"], scenario, int(record["seed"]))
    return any(not np.array_equal(shipped[a], record["prices"][a]) for a in shipped)


def run_evcs(algorithm: str, task: Task, seed: int, budget: int, smoke: bool) -> Trained:
    import evcs_gym
    from evcs_gym.equilibrium.verification import verify_prices

    scenario = task.config["scenario"]  # a one-step task: run_cell checked `supports`
    prices, evaluations, command = reference_prices(algorithm, scenario, seed)
    verify = verify_options(scenario, smoke)
    cert = verify_prices(
        evcs_gym.load_scenario(scenario),
        prices,
        search=verify["search"],
        budget=verify.get("budget"),
        seeds=verify["seeds"],
        seed=seed,
        search_seeds=verify["search_seeds"],
        held_out=verify["held_out"],
        workers=2,
        title=f"reference row {algorithm!r}",
    )
    return Trained(
        env_steps=evaluations,
        score=evcs_score(cert.to_dict(), scenario),
        settings={"command": command, "verify": verify},
    )


def run_episodic(algorithm: str, task: Task, seed: int, budget: int) -> Trained:
    raise ValueError(f"reference rows exist for the pricing game only, not {task.name}")
