"""Benchmark: the pricing game among other MARL tasks, our baselines among peer libraries.

A grid of tasks x algorithms x seeds at one env-step budget per task:

* tasks (``marl/tasks.py``): the pricing game on ``tiny`` and ``siouxfalls``, one-step and
  repeated (10 rounds); MPE2 ``simple_spread`` (3 agents, 25 steps); VMAS ``navigation``
  (3 agents, 100 steps);
* algorithms (``marl/runners``): evcs-gym's MADDPG / IDDPG / MFDDPG, BenchMARL's MADDPG /
  IDDPG / MASAC / MAPPO (through BenchMARL's own ``Experiment``), AgileRL's MADDPG / MATD3
  and RLlib's PPO; on the one-step pricing game also three reference rows that need no
  learning (library ``reference``: ``evcs-gym solve``'s equilibrium, every station at
  its lower bound, every station at mid-bounds), verified like the learners and run at
  the first seed only (they do not learn);
* scores: on EVCS tasks the verified NashConv of the learned pure prices (the same
  deviation search for every cell: ``marl/runners/common.py``), total revenue and
  evaluations; on the others the mean return of 32 deterministic evaluation episodes on
  fixed seeds, computed the same way for every library (``marl/evaluation.py``).

Each library runs in the environment that holds it: evcs-gym's baselines in this Python,
the others in the nox environments (``nox -s benchmarl agilerl rllib`` builds them under
``.nox/``; ``--python LIB=PATH`` points elsewhere). Every cell is its own process; its
record goes to ``OUT/cells/*.json`` and its output to ``OUT/logs/``. A failed cell is
reported and makes the exit status 1; the others still run. Then the report: marl-eval
JSON (``marl_eval.json``), ``cells.csv``, ``summary.json``, ``table.md`` (per algorithm the
mean over seeds with its 95 % interval, marl-eval's bootstrap aggregation, and the wall
time per cell) and one plot per task in ``plots/``, with the command, versions and
machine in ``run.json``. ``--curve 50 100`` also trains every learner on the one-step
pricing game at those smaller budgets, each point its own run (``..._budget50.json``):
``plots/<task>_curve.png`` then draws verified NashConv against the training budget per
algorithm, the reference rows as lines, and marl-eval's JSON holds the points as steps;
the tables use the grid's budget only.

Cost, measured on 2 cores (``results/marl_siouxfalls/``; a raw Sioux Falls simulation
took 0.3–0.4 s, and the table also gives each cell's time in raw simulations): a
``tiny`` cell 1–4 min; a Sioux Falls one-step cell 20–35 min — evcs-gym's MADDPG 19.7
min (200 training and 130 verification evaluations, 2026-11-29), AgileRL MADDPG 31.1
min (18.9 training, 11.8 verifying), BenchMARL MAPPO 35.5 min (24.8 training,
its two copies in ``ParallelEnv`` workers); the reference rows 3–6 min each
(2026-11-30). On a faster host (0.15–0.24 s per raw simulation, seeds 1 and 2 on
2026-11-30) a learner cell took 10–18 min. The Sioux Falls column (our three, BenchMARL
MAPPO, AgileRL MADDPG and MATD3, RLlib PPO at seeds 0–2: 21 learner cells, one at a time
because each uses both cores, and the three reference rows) is therefore 5–10 hours; the
measured one took 6.7 hours of cells, seed 0 and the reference rows on the slower host.
Run it in the background with ``--resume`` and commit cells as they land::

    python benchmarks/bench_marl.py --tasks siouxfalls --algorithms ours-maddpg ours-iddpg \\
        ours-mfddpg benchmarl-mappo agilerl-maddpg agilerl-matd3 rllib-ppo reference-solve \\
        reference-lower reference-mid --seeds 0 1 2 --resume \\
        --out benchmarks/results/marl_siouxfalls

Run::

    python benchmarks/bench_marl.py --out benchmarks/results/marl     # the whole grid
    python benchmarks/bench_marl.py --tasks tiny simple_spread --libraries ours benchmarl \\
        --seeds 0 1 2 --budget simple_spread=20000
    python benchmarks/bench_marl.py --smoke --seeds 0                   # CI-sized
    python benchmarks/bench_marl.py --report-only --out benchmarks/results/marl
    python benchmarks/bench_marl.py --reverify --tasks tiny_market \
        --out benchmarks/results/marl_tiny_market   # today's search on the stored prices
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from marl import report  # noqa: E402
from marl.runners import (  # noqa: E402
    CORE_LIBRARIES,
    DETERMINISTIC_LIBRARIES,
    LIBRARIES,
    run_cell,
    supports,
    supports_algorithm,
)
from marl.runners.common import REPO, game_of  # noqa: E402
from marl.runners.reference import outdated_reference  # noqa: E402
from marl.tasks import TASKS, Task, resolve_tasks  # noqa: E402


@dataclass(frozen=True)
class Cell:
    task: Task
    library: str
    algorithm: str
    seed: int
    budget: int
    curve: bool = False
    """A point of the NashConv-against-evaluations curve (``--curve``): its own run at a
    smaller budget, kept out of the tables."""

    @property
    def name(self) -> str:
        name = f"{self.task.name}__{self.library}-{self.algorithm}__seed{self.seed}"
        return f"{name}__budget{self.budget}" if self.curve else name


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=None, help=f"default all: {list(TASKS)}")
    p.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=list(LIBRARIES))
    p.add_argument(
        "--algorithms",
        nargs="+",
        default=None,
        help="only these: a name for every library that has it (maddpg), or LIB-NAME for one "
        "(benchmarl-mappo)",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument(
        "--budget",
        nargs="+",
        default=[],
        metavar="TASK=STEPS",
        help="override a task's budget (env steps; evaluations on EVCS tasks)",
    )
    p.add_argument(
        "--curve",
        nargs="+",
        type=int,
        default=[],
        metavar="EVALS",
        help="also train each one-step EVCS learner cell at these smaller budgets (points of "
        "the NashConv-against-evaluations plot)",
    )
    p.add_argument("--smoke", action="store_true", help="CI budgets and verification")
    p.add_argument("--out", default="bench_marl_out", help="results folder")
    p.add_argument("--jobs", type=int, default=1, help="cells run at once")
    p.add_argument("--python", nargs="+", default=[], metavar="LIB=PATH")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep cells already in OUT/cells that were measured on the current game (a cell "
        "of another scenario settings hash or minor version runs again)",
    )
    p.add_argument("--report-only", action="store_true", help="only rebuild the report")
    p.add_argument(
        "--reverify",
        action="store_true",
        help="verify the EVCS cells already in OUT/cells again with today's deviation search "
        "(their stored prices; no training), keeping the old figures in each record's "
        "`superseded`, then rebuild the report; resumes where it stopped; with "
        "--algorithms, only theirs, in that order",
    )
    p.add_argument("--run-cell", nargs=5, metavar=("TASK", "LIB", "ALGO", "SEED", "BUDGET"),
                   help=argparse.SUPPRESS)  # fmt: skip
    p.add_argument("--cell-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be >= 1, got {args.jobs}")
    if any(b < 1 for b in args.curve):
        p.error(f"--curve budgets must be >= 1, got {args.curve}")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def budgets(args: argparse.Namespace) -> dict[str, int]:
    """Each task's budget: its default (or smoke one), overridden by ``--budget``."""
    out = {n: (t.smoke_budget if args.smoke else t.budget) for n, t in TASKS.items()}
    for item in args.budget:
        name, _, value = item.partition("=")
        if name not in TASKS or not value.isdigit() or int(value) < 1:
            raise SystemExit(f"--budget {item!r}: expected TASK=STEPS with TASK in {list(TASKS)}")
        out[name] = int(value)
    return out


def interpreters(args: argparse.Namespace) -> dict[str, str]:
    """The Python of each library: this one for ours and the reference rows, the others'
    nox environments by default."""
    out = {lib: sys.executable for lib in CORE_LIBRARIES}
    for lib in LIBRARIES:
        if lib not in CORE_LIBRARIES:
            out[lib] = str(REPO / ".nox" / lib / "bin" / "python")
    for item in args.python:
        lib, _, path = item.partition("=")
        if lib not in LIBRARIES or not path:
            raise SystemExit(f"--python {item!r}: expected LIB=PATH with LIB in {list(LIBRARIES)}")
        out[lib] = path
    return out


def plan(args: argparse.Namespace) -> tuple[list[Cell], list[str]]:
    """The cells to run and the lines saying which pairs are skipped and why."""
    cells, skipped = [], []
    steps = budgets(args)
    for task in resolve_tasks(args.tasks):
        for lib in args.libraries:
            if (reason := supports(lib, task)) is not None:
                skipped.append(f"{task.name} x {lib}: {reason}")
                continue
            for algo in LIBRARIES[lib]:
                if args.algorithms and not {algo, f"{lib}-{algo}"} & set(args.algorithms):
                    continue
                if supports_algorithm(lib, algo, task) is not None:
                    continue
                learns = lib not in DETERMINISTIC_LIBRARIES
                seeds = args.seeds if learns else args.seeds[:1]
                curve = [b for b in sorted(set(args.curve)) if b < steps[task.name]]
                if not (learns and task.is_evcs and task.rounds is None):
                    curve = []  # curves: learners on the one-step pricing game
                for seed in seeds:
                    cells.append(Cell(task, lib, algo, seed, steps[task.name]))
                    cells += [Cell(task, lib, algo, seed, b, curve=True) for b in curve]
    return cells, skipped


def raw_simulation_seconds(task: Task, repeats: int = 3) -> float | None:
    """Median seconds of ``repeats`` raw simulations of ``task``'s scenario, timed now
    (``bench_evaluator.RawSimulation``: one World built, run on free-flow routes and
    freed); None for a task without a game.

    The host's speed drifts (a raw Sioux Falls simulation took 0.15 s on one day of
    November 2026 and 0.47 s on another), so the grid times this yardstick just before
    and just after each cell, and the report gives the cell's wall time in raw
    simulations beside its minutes.
    """
    if task.env != "evcs":
        return None
    from bench_evaluator import RawSimulation

    import evcs_gym

    raw = RawSimulation(evcs_gym.load_scenario(task.config["scenario"], warm_start=False))
    return float(np.median([raw.seconds() for _ in range(repeats)]))


def run_one(cell: Cell, python: str, out: Path, smoke: bool) -> tuple[Cell, str | None, float]:
    """Run ``cell`` in a fresh process of ``python``.

    Returns the cell, None or the error's last lines, and the process's seconds. The
    record gets ``raw_simulation_s``: :func:`raw_simulation_seconds` just before and
    just after the cell (not with ``smoke``).
    """
    record = out / "cells" / f"{cell.name}.json"
    log = out / "logs" / f"{cell.name}.log"
    if not Path(python).exists():
        return cell, f"no Python for {cell.library} at {python} (run `nox -s {cell.library}`)", 0.0
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--run-cell",
        cell.task.name,
        cell.library,
        cell.algorithm,
        str(cell.seed),
        str(cell.budget),
        "--cell-out",
        str(record),
    ] + (["--smoke"] if smoke else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RAY_TMPDIR": "/tmp", "PYTHONHASHSEED": "0"}
    raw_before = None if smoke else raw_simulation_seconds(cell.task)
    started = time.perf_counter()
    with log.open("w") as f:
        f.write(shlex.join(cmd) + "\n")
        f.flush()
        code = subprocess.run(cmd, cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - started
    if code != 0 or not record.exists():
        tail = log.read_text().strip().splitlines()[-5:]
        return cell, f"exit status {code}; {log}:\n    " + "\n    ".join(tail), seconds
    extra: dict[str, Any] = {}
    if cell.curve:  # the report keeps curve points out of the tables
        extra["curve"] = True
    if raw_before is not None:
        extra["raw_simulation_s"] = [raw_before, raw_simulation_seconds(cell.task)]
    if extra:
        record.write_text(json.dumps({**json.loads(record.read_text()), **extra}, indent=1))
    return cell, None, seconds


PINNED_SINCE_0_2_0 = {"b19290784656", "1bdd955f9c73", "6e837c766f5b", "d463508cfe15"}
"""The settings hashes of the bundled 0.2.0 games, whose payoffs every later release keeps
bit for bit (``tests/test_pinned_payoffs.py``)."""

PAYOFFS_UNCHANGED_SINCE: dict[str, tuple[int, int]] = {
    **dict.fromkeys(PINNED_SINCE_0_2_0, (0, 2)),
    "0eeb881fb27d": (0, 3),
}
"""Settings hash -> the ``(major, minor)`` release since which the game's payoffs have not
changed. The 0.2.0 games are pinned; ``siouxfalls_market``'s 0.4.0 release re-solved its
references only, and every one of its 0.3.0 cells re-verified under 0.4.0 scored the
same total revenue, bit for bit."""


def same_game(measured: dict | None, current: dict | None) -> bool:
    """Whether a cell measured on ``measured`` (its record's ``game``) still scores the game
    its task has now: the same scenario settings hash and the same ``major.minor``
    package version (a change of the payoffs bumps the minor version; a patch does not
    change them), or any two versions since the game's payoffs last changed
    (:data:`PAYOFFS_UNCHANGED_SINCE`). Tasks without a game (MPE, VMAS) have ``None`` on
    both sides.

    Example:
        >>> old = {"version": "0.2.0", "settings_hash": "ab"}
        >>> same_game(old, {"version": "0.2.3", "settings_hash": "ab"})
        True
        >>> same_game(old, {"version": "0.3.0", "settings_hash": "ab"})
        False
        >>> same_game(old, {"version": "0.2.0", "settings_hash": "cd"}), same_game(None, None)
        (False, True)
        >>> tiny = {"version": "0.2.0", "settings_hash": "b19290784656"}
        >>> same_game(tiny, {"version": "0.4.0", "settings_hash": "b19290784656"})
        True
        >>> market = {"version": "0.3.0", "settings_hash": "0eeb881fb27d"}
        >>> same_game(market, {"version": "0.4.0", "settings_hash": "0eeb881fb27d"})
        True
    """
    if measured is None or current is None:
        return measured is None and current is None

    def minor(version: object) -> tuple[int, ...]:
        return tuple(int(part) for part in str(version).split(".")[:2] if part.isdigit())

    settings = current["settings_hash"]
    if measured.get("settings_hash") != settings:
        return False
    versions = minor(measured.get("version", "")), minor(current["version"])
    since = PAYOFFS_UNCHANGED_SINCE.get(settings)
    if since is not None:
        return all(v >= since for v in versions)
    return versions[0] == versions[1]


def resume_keeps(cell: Cell, out: Path, games: dict[str, dict | None]) -> bool:
    """Whether ``--resume`` keeps ``cell``'s record in ``out/cells``: it exists and was
    measured on the game its task has now (:func:`same_game`). A record of another game
    is stale, and the cell runs again; ``games`` caches each task's current game."""
    path = out / "cells" / f"{cell.name}.json"
    if not path.exists():
        return False
    if cell.task.name not in games:
        games[cell.task.name] = game_of(cell.task)
    record = json.loads(path.read_text())
    measured = record.get("game")
    if same_game(measured, games[cell.task.name]):
        if not outdated_reference(record):
            return True
        print(f"stale {cell.name}: the game's reference was re-solved; running it again")
        return False
    print(
        f"stale {cell.name}: measured on {measured}, the game is now "
        f"{games[cell.task.name]}; running it again",
        flush=True,
    )
    return False


def games_measured(cells: list[dict[str, Any]]) -> dict[str, dict[str, list[str]]]:
    """The EVCS games the cells were measured on: task -> settings hash -> versions."""
    games: dict[str, dict[str, list[str]]] = {}
    for c in cells:
        if c.get("game"):
            versions = games.setdefault(c["task"], {}).setdefault(c["game"]["settings_hash"], [])
            if c["game"]["version"] not in versions:
                versions.append(c["game"]["version"])
    return games


def games_note(cells: list[dict[str, Any]]) -> str:
    """The report's note on tasks whose cells were measured on more than one game.

    Cells of different games (:func:`same_game`) score different payoffs: a warning
    (``--resume`` reruns such stale cells). Cells of one of the 0.2.0 games measured by
    several releases (as when cells are added to its column later) get a note naming
    the releases: those games' payoffs are pinned across releases.

    Example:
        >>> cell = {"task": "tiny", "game": {"version": "0.2.0", "settings_hash": "b19290784656"}}
        >>> later = {"task": "tiny", "game": {"version": "0.4.0", "settings_hash": "b19290784656"}}
        >>> games_note([cell]), "several releases" in games_note([cell, later])
        ('', True)
    """
    note = ""
    for task, hashes in games_measured(cells).items():
        tags = [f"evcs-gym {', '.join(v)}, settings {h}" for h, v in hashes.items()]
        games = [{"version": v, "settings_hash": h} for h, vs in hashes.items() for v in vs]
        if not all(same_game(g, games[0]) for g in games[1:]):
            # a table must not mix payoffs: --resume reruns stale cells
            note += f"\n\n**{task}: cells of different games** ({'; '.join(tags)})"
            print(f"warning: {task} has cells of different games: {tags}", file=sys.stderr)
        elif len(games) > 1:
            note += (
                f"\n\n{task}: cells measured by several releases on one game ({tags[0]}); "
                "their payoffs agree (patch releases, or releases since the game's payoffs "
                "last changed: `PAYOFFS_UNCHANGED_SINCE`)"
            )
    return note


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:  # no /proc (not Linux): platform.processor()'s answer stands
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
    except OSError:  # no git on the machine: the record says so by an empty commit
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "git_commit": commit,
    }


def write_report(args: argparse.Namespace, out: Path, skipped: Sequence[str]) -> str:
    cells = report.load_cells(out / "cells")
    if not cells:
        raise SystemExit(f"no cell records in {out / 'cells'}")
    (out / "marl_eval.json").write_text(json.dumps(report.marl_eval_json(cells), indent=1))
    report.write_csv(cells, out / "cells.csv")
    summary = report.summarize(cells)
    (out / "summary.json").write_text(json.dumps(list(summary.values()), indent=1))
    steps: dict[str, set[int]] = {}  # the cells' own budgets (runs may have overridden them)
    curve: dict[str, set[int]] = {}  # the budgets of the curve points (--curve)
    for c in cells:
        (curve if c.get("curve") else steps).setdefault(c["task"], set()).add(int(c["budget"]))
    units = {
        n: "/".join(f"{b:,}" for b in sorted(v)) + (" evals" if TASKS[n].is_evcs else " steps")
        for n, v in steps.items()
    }
    table = report.markdown_tables(summary, units)
    versions = {}
    for c in cells:
        versions.setdefault(c["library"], c["versions"])
    games = {
        task: [f"evcs-gym {v}, settings {h}" for h, versions in hashes.items() for v in versions]
        for task, hashes in games_measured(cells).items()
    }
    table += games_note(cells)
    command = "python benchmarks/bench_marl.py " + shlex.join(args.argv)
    previous = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    host = now = machine()
    measured = command
    if args.report_only and "machine" in previous:  # the cells ran where and as it says
        host, measured = previous["machine"], previous.get("command", command)
        skipped = previous.get("skipped", skipped)
    run = {
        **previous,  # what earlier runs recorded beside the fields below (e.g. a note)
        "command": measured,
        # every command that added cells to this folder (--resume runs extend a grid)
        "commands": [
            *previous.get("commands", []),
            {"command": command, "date": now["date"]},
        ],
        "machine": host,
        "versions": versions,
        "games": {**previous.get("games", {}), **games},
        "budgets": {n: sorted(v) for n, v in steps.items()},
        "curve_budgets": {n: sorted(v) for n, v in curve.items()},
        "skipped": list(skipped),
    }
    (out / "run.json").write_text(json.dumps(run, indent=1))
    (out / "table.md").write_text(table + "\n")
    report.plot_tasks(cells, out / "plots")
    report.plot_curves(cells, out / "plots")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.run_cell:  # inside the library's environment
        task, lib, algo, seed, budget = args.run_cell
        result = run_cell(lib, algo, TASKS[task], int(seed), int(budget), smoke=args.smoke)
        Path(args.cell_out).write_text(json.dumps(result, indent=1))
        return 0
    out = Path(args.out)
    cells, skipped = plan(args)
    for line in skipped:
        print(f"skipped {line}")
    if args.reverify:
        from marl.reverify import reverify_cells

        reverify_cells(out / "cells", args.tasks, algorithms=args.algorithms, smoke=args.smoke)
        args.report_only = True  # the cells ran where run.json says; only the report is new
    if not args.report_only:
        for sub in ("cells", "logs"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        pythons = interpreters(args)
        games: dict[str, dict | None] = {}
        todo = [c for c in cells if not (args.resume and resume_keeps(c, out, games))]
        print(
            f"{len(todo)} cells ({len(cells) - len(todo)} kept), {args.jobs} at a time", flush=True
        )
        failed = []
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, c, pythons[c.library], out, args.smoke) for c in todo]
            for i, future in enumerate(futures, 1):
                cell, error, seconds = future.result()
                status = "ok" if error is None else "FAILED"
                print(
                    f"[{i}/{len(todo)}] {cell.name}: {status} in {seconds:.0f} s "
                    f"({time.perf_counter() - t0:.0f} s since the grid started)",
                    flush=True,
                )
                if error is not None:
                    failed.append(f"{cell.name}: {error}")
    else:
        failed = []
    if failed:
        print("failed cells:\n  " + "\n  ".join(failed), file=sys.stderr)
    if any((out / "cells").glob("*.json")):
        print(write_report(args, out, skipped))
        print(
            f"results: {out}/ (marl_eval.json, cells.csv, summary.json, table.md, plots/, run.json)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
