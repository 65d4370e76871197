"""Re-verify a grid's EVCS cells with today's deviation search, without retraining.

Every EVCS cell record keeps the learned pure prices it was verified on. When the
verification changes (the converged search replaced the fixed budgets of evcs-gym
0.3.0), :func:`reverify_cells` verifies those prices again with
:func:`marl.runners.common.verify_options`, from the cell's seed, and
rewrites the record's score (NashConv, its standard error, gains, total revenue, Δ and
the search that found them). The old figures move to the record's ``superseded`` list
with the search that produced them, so a table can say what changed.

A record already verified with today's search (the same ``search`` settings and seeds)
is kept, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from marl.runners.common import evcs_score, verify_options
from marl.runners.reference import outdated_reference

__all__ = ["SCORE_FIELDS", "needs_reverify", "reverify_cells", "reverify_record"]

SCORE_FIELDS = (
    "search",
    "search_converged",
    "relative_nash_conv",
    "relative_nash_conv_se",
    "total_revenue",
    "verify_evaluations",
    "gains",
    "collusion_index",
)
"""The fields of a cell record that its verification sets (``evcs_score``'s, but the
prices, which the verification only reads)."""


VERIFY_0_3_0: dict[str, dict[str, Any]] = {
    "tiny": {"method": "budget", "budget": 32, "seeds": 4, "search_seeds": 2},
    "siouxfalls": {"method": "budget", "budget": 16, "seeds": 4, "search_seeds": 2},
    "tiny_market": {"method": "budget", "budget": 32, "seeds": 4, "search_seeds": 2},
    "siouxfalls_market": {"method": "budget", "budget": 32, "seeds": 4, "search_seeds": 2},
}
"""The cells' verification until evcs-gym 0.3.0 (recorded with the figures it replaced)."""


def _current_search(scenario: str, smoke: bool = False) -> dict[str, Any]:
    from evcs_gym.equilibrium.search_spec import resolve_search

    verify = verify_options(scenario, smoke)
    return {
        "search": resolve_search(verify["search"], budget=verify.get("budget")).to_dict(),
        "seeds": verify["seeds"],
        "search_seeds": verify["search_seeds"],
        "held_out": verify["held_out"],
    }


def needs_reverify(record: dict[str, Any], smoke: bool = False) -> bool:
    """Whether an EVCS record of the current game was verified with another search than
    today's (a record of an older game cannot be: its payoffs are no longer shipped)."""
    if record.get("env") != "evcs" or "prices" not in record:
        return False
    scenario = _scenario(record)
    if not _same_game(record.get("game"), scenario):
        return False
    current = _current_search(scenario, smoke)
    done = {k: v for k, v in record.get("verification", {}).items() if k in current}
    return done != current


def _same_game(game: dict[str, Any] | None, scenario: str) -> bool:
    import evcs_gym

    nd = evcs_gym.load_scenario(scenario, warm_start=False)
    return game is not None and game.get("settings_hash") == nd.settings_hash


def _scenario(record: dict[str, Any]) -> str:
    from marl.tasks import TASKS

    return str(TASKS[record["task"]].config["scenario"])


def reverify_record(
    record: dict[str, Any], workers: int = 2, smoke: bool = False
) -> dict[str, Any]:
    """``record`` with its prices verified again by today's search (a new dict; ``smoke``:
    the CI-sized search)."""
    import evcs_gym
    from evcs_gym.equilibrium.verification import verify_prices

    scenario = _scenario(record)
    verify = verify_options(scenario, smoke)
    started = time.perf_counter()
    cert = verify_prices(
        evcs_gym.load_scenario(scenario),
        record["prices"],
        search=verify["search"],
        budget=verify.get("budget"),
        seeds=verify["seeds"],
        seed=int(record["seed"]),
        search_seeds=verify["search_seeds"],
        held_out=verify["held_out"],
        workers=workers,
        title=f"re-verifying {record['task']} {record['library']}-{record['algorithm']} "
        f"seed {record['seed']}",
    )
    old = {k: record.get(k) for k in SCORE_FIELDS if k in record}
    old.setdefault("search", VERIFY_0_3_0.get(scenario, VERIFY_0_3_0["tiny"]))
    score = evcs_score(cert.to_dict(), scenario)
    del score["prices"]  # unchanged: the learned prices
    return {
        **record,
        **score,
        "verification": {
            **_current_search(scenario, smoke),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 1),
        },
        "superseded": [*record.get("superseded", []), old],
    }


def reverify_cells(
    cells: Path,
    tasks: Sequence[str] | None = None,
    *,
    algorithms: Sequence[str] | None = None,
    workers: int = 2,
    smoke: bool = False,
    on_done: Callable[[Path], Any] | None = None,
) -> list[Path]:
    """Re-verify every EVCS record in ``cells`` (of ``tasks``, default all) that needs it.

    Args:
        cells: the grid's ``cells/`` folder.
        tasks: only records of these tasks.
        algorithms: only records of these algorithms, in this order (``maddpg`` for every
            library's, ``benchmarl-mappo`` for one library's): a long re-verification
            can take the cells a table most needs first.
        workers: evaluator processes.
        smoke: the CI-sized search (:func:`verify_options`).
        on_done: called with each rewritten record's path (e.g. to commit it).

    Returns:
        The records rewritten, in order.
    """
    done = []
    paths = sorted(cells.glob("*.json"))
    ranked = []
    for path in paths:
        record = json.loads(path.read_text())
        rank = _rank(record, algorithms)
        wanted = tasks is None or record.get("task") in tasks
        if not wanted or rank is None:
            continue
        if outdated_reference(record):
            print(
                f"{path.stem}: the game's reference was re-solved; run the row again "
                "(bench_marl.py --resume), not re-verified",
                flush=True,
            )
        elif needs_reverify(record, smoke):
            ranked.append((rank, path))
    todo = [path for _, path in sorted(ranked)]
    print(f"re-verifying {len(todo)} of {len(paths)} cell records", flush=True)
    for k, path in enumerate(todo, 1):
        t0 = time.perf_counter()
        record = reverify_record(json.loads(path.read_text()), workers, smoke)
        path.write_text(json.dumps(record, indent=1))
        old = record["superseded"][-1].get("relative_nash_conv")
        print(
            f"[{k}/{len(todo)}] {path.stem}: NashConv {record['relative_nash_conv']:.2%} "
            f"(was {old:.2%}) in {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        done.append(path)
        if on_done is not None:
            on_done(path)
    return done


def _rank(record: dict[str, Any], algorithms: Sequence[str] | None) -> int | None:
    """The place of ``record``'s algorithm in ``algorithms`` (None: not there; 0 for
    every record without ``algorithms``)."""
    if algorithms is None:
        return 0
    names = {record.get("algorithm"), f"{record.get('library')}-{record.get('algorithm')}"}
    return next((k for k, name in enumerate(algorithms) if name in names), None)
