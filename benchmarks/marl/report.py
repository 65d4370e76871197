"""Turn the grid's cell records into marl-eval JSON, a CSV, markdown tables and plots.

Example:
    >>> from marl.report import summarize
    >>> cells = [
    ...     {"task": "simple_spread", "env": "mpe2", "library": "ours", "algorithm": "maddpg",
    ...      "seed": s, "env_steps": 100, "wall_s": 1.0, "return": [float(-s), -1.0]}
    ...     for s in (0, 1)
    ... ]
    >>> row = summarize(cells)[("simple_spread", "ours-maddpg")]
    >>> row["mean"], row["n"]
    (-0.75, 2)
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "algorithm_name",
    "cell_score",
    "grid_cells",
    "load_cells",
    "marl_eval_json",
    "markdown_tables",
    "mean_interval",
    "plot_curves",
    "plot_tasks",
    "summarize",
    "verification_label",
    "wall_in_raw_simulations",
    "write_csv",
]


def algorithm_name(cell: Mapping[str, Any]) -> str:
    """``library-algorithm``, the name in tables and in marl-eval's ``algorithm_name``."""
    return f"{cell['library']}-{cell['algorithm']}"


def cell_score(cell: Mapping[str, Any]) -> float:
    """A cell's headline figure: verified relative NashConv (EVCS) or mean return."""
    if cell["env"] == "evcs":
        return float(cell["relative_nash_conv"])
    return float(np.mean(cell["return"]))


def cell_delta(cell: Mapping[str, Any]) -> float:
    """The collusion index Δ of an EVCS cell (NaN where its game ships no references)."""
    index = cell.get("collusion_index")
    return math.nan if index is None else float(index["delta"])


def load_cells(folder: str | Path) -> list[dict[str, Any]]:
    """Every ``*.json`` cell record under ``folder`` (sorted by file name)."""
    return [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))]


INTERVAL_RESAMPLES = 2_000
"""Bootstrap resamples of each 95 % interval (seeded: the same cells give the same report)."""


def mean_interval(scores: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean of ``scores`` over seeds.

    marl-eval's aggregation (rliable's stratified bootstrap; one task per table column,
    so the strata are the runs), computed with :func:`scipy.stats.bootstrap`: marl-eval
    pins pandas 1.4, and rliable's bootstrap package does not import beside pandas 3.
    NaN for one score; ``(x, x)`` when all scores equal ``x``.

    Example:
        >>> low, high = mean_interval([1.0, 2.0, 6.0])
        >>> 1.0 <= low < 3.0 < high <= 6.0
        True
    """
    from scipy.stats import bootstrap

    x = np.asarray(scores, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    ci = bootstrap(
        (x,),
        np.mean,
        confidence_level=0.95,
        n_resamples=INTERVAL_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return float(ci.low), float(ci.high)


def verification_label(cell: Mapping[str, Any]) -> str:
    """How an EVCS cell's NashConv was verified: the search, and whether it scored on
    seeds held out from the gains' seeds (cells verified before that was recorded were
    in sample).

    Example:
        >>> search = {"method": "converged", "rounds": 2, "resolution": 1 / 192}
        >>> verification_label({"search": search, "verification": {"held_out": True}})
        'converged, 2 rounds to 1/192, held out'
        >>> verification_label({"search": {"method": "budget", "budget": 32}})
        'budget 32, in sample'
        >>> verification_label({})
        'not recorded (before evcs-gym 0.4.0), in sample'
    """
    search = cell.get("search") or {}
    method = search.get("method")
    if method == "converged" and search.get("resolution"):
        what = f"converged, {search.get('rounds', 1)} rounds to 1/{1 / search['resolution']:.0f}"
    elif method == "budget":
        what = f"budget {search.get('budget')}"
    else:
        what = "not recorded (before evcs-gym 0.4.0)" if method is None else str(method)
    held = (cell.get("verification") or {}).get("held_out")
    return f"{what}, {'held out' if held else 'in sample'}"


def grid_cells(cells: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The cells at the grid's budget: all but the curve points (``"curve": true``,
    ``bench_marl.py --curve``), which only the curve plot and marl-eval's steps use."""
    return [c for c in cells if not c.get("curve")]


def wall_in_raw_simulations(cells: Sequence[Mapping[str, Any]]) -> float:
    """Mean over ``cells`` of a cell's wall time divided by the mean of the raw
    simulations timed just before and just after it (``raw_simulation_s``, recorded by
    ``bench_marl.py``): the cost of a cell in units of the host's speed of the moment,
    which drifts between days. NaN if no cell has the timings (cells measured before
    they were recorded, smoke runs, tasks without a game).

    Example:
        >>> wall_in_raw_simulations([{"wall_s": 600.0, "raw_simulation_s": [0.4, 0.6]},
        ...                          {"wall_s": 300.0}])
        1200.0
    """
    ratios = [
        c["wall_s"] / float(np.mean(c["raw_simulation_s"]))
        for c in cells
        if c.get("raw_simulation_s")
    ]
    return float(np.mean(ratios)) if ratios else math.nan


def summarize(cells: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (task, algorithm): mean, sample sd and 95 % interval (:func:`mean_interval`)
    of the headline figure over seeds, and the means of total revenue (EVCS), env steps,
    verification evaluations (EVCS) and wall time per cell, over :func:`grid_cells`."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for cell in grid_cells(cells):
        groups[(cell["task"], algorithm_name(cell))].append(cell)
    out = {}
    for key, group in sorted(groups.items()):
        scores = np.array([cell_score(c) for c in group])
        low, high = mean_interval(scores)
        row: dict[str, Any] = {
            "task": key[0],
            "algorithm": key[1],
            "env": group[0]["env"],
            "n": len(group),
            "seeds": sorted(int(c["seed"]) for c in group),
            "mean": float(scores.mean()),
            "sd": float(scores.std(ddof=1)) if len(group) > 1 else math.nan,
            "ci_low": low,
            "ci_high": high,
            "env_steps": float(np.mean([c["env_steps"] for c in group])),
            "wall_s": float(np.mean([c["wall_s"] for c in group])),
            "wall_raw": wall_in_raw_simulations(group),
        }
        if row["env"] == "evcs":
            row["total_revenue"] = float(np.mean([c["total_revenue"] for c in group]))
            row["verify_evaluations"] = float(
                np.mean([c.get("verify_evaluations", math.nan) for c in group])
            )
            row["verifications"] = dict(Counter(verification_label(c) for c in group))
            ses = [c.get("relative_nash_conv_se") for c in group]
            ses = [s for s in ses if s is not None]
            row["mean_se"] = float(np.mean(ses)) if ses else math.nan
            deltas = [cell_delta(c) for c in group]
            if not any(math.isnan(d) for d in deltas):  # a game with references
                row["delta"] = float(np.mean(deltas))
                row["delta_ci"] = mean_interval(np.array(deltas))
        out[key] = row
    return out


def marl_eval_json(cells: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """marl-eval's raw-data layout: env -> task -> algorithm -> run -> step / absolute.

    A run is one (algorithm, seed). Its steps are its cells in order of env steps used
    (``step_count``): the curve points (``bench_marl.py --curve``, each trained on its
    own to a smaller budget), then the grid's cell, whose metrics are also the run's
    ``absolute_metrics``. EVCS runs report ``nash_conv`` (verified, relative to total
    revenue) and ``return`` (total revenue at the learned prices); the other tasks
    ``return`` per evaluation episode.
    """
    runs: dict[tuple[str, str, str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for cell in cells:
        runs[(cell["env"], cell["task"], algorithm_name(cell), int(cell["seed"]))].append(cell)
    data: dict[str, Any] = {}
    for (env, task, algo, seed), group in runs.items():
        group = sorted(group, key=lambda c: (not c.get("curve"), c["env_steps"]))
        run: dict[str, Any] = {}
        for i, cell in enumerate(group):
            if cell["env"] == "evcs":
                metrics = {
                    "nash_conv": [float(cell["relative_nash_conv"])],
                    "return": [float(cell["total_revenue"])],
                }
            else:
                metrics = {"return": [float(r) for r in cell["return"]]}
            run[f"step_{i}"] = {"step_count": int(cell["env_steps"]), **metrics}
        run["absolute_metrics"] = metrics  # the last step's: the grid's cell
        data.setdefault(env, {}).setdefault(task, {}).setdefault(algo, {})[f"seed_{seed}"] = run
    return data


CSV_FIELDS = (
    "task",
    "env",
    "library",
    "algorithm",
    "seed",
    "budget",
    "unit",
    "env_steps",
    "score",
    "relative_nash_conv_se",
    "total_revenue",
    "delta",
    "verify_evaluations",
    "wall_s",
    "curve",
)


def write_csv(cells: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """One row per cell (``score`` = :func:`cell_score`)."""
    path = Path(path)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for cell in cells:
            delta = cell_delta(cell) if cell.get("env") == "evcs" else math.nan
            writer.writerow(
                {
                    **cell,
                    "score": cell_score(cell),
                    "delta": "" if math.isnan(delta) else delta,
                    "curve": bool(cell.get("curve")),
                }
            )
    return path


def _fmt(row: Mapping[str, Any]) -> str:
    """``mean [low, high] (seeds)``: percent on EVCS tasks, returns elsewhere."""
    pct = row["env"] == "evcs"
    f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.2f}")
    unit = "%" if pct else ""
    interval = "" if math.isnan(row["ci_low"]) else f" [{f(row['ci_low'])}, {f(row['ci_high'])}]"
    return f"{f(row['mean'])}{unit}{interval} ({row['n']})"


def _fmt_delta(row: Mapping[str, Any]) -> str:
    """``Δ [low, high]`` of a market task's row."""
    low, high = row["delta_ci"]
    interval = "" if math.isnan(low) else f" [{low:.2f}, {high:.2f}]"
    return f"{row['delta']:.2f}{interval}"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _wall(row: Mapping[str, Any]) -> str:
    """Wall time per cell, and in raw simulations where the cells recorded them."""
    raw = row.get("wall_raw", math.nan)
    return _minutes(row["wall_s"]) + ("" if math.isnan(raw) else f" ({raw:,.0f} raw sims)")


def _verification_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """The line under a task's table: the search its cells were verified with, and how
    many cells each search verified where they differ (a table being re-verified)."""
    counts: Counter[str] = Counter()
    for r in rows:
        counts.update(r.get("verifications", {}))
    if len(counts) <= 1:
        return "".join(f"\nverified with the search: {label}" for label in counts)
    mixed = "; ".join(f"{label} ({n} cells)" for label, n in counts.most_common())
    return f"\n**mixed verification** (a row's mean mixes them where its cells do): {mixed}"


def markdown_tables(
    summary: Mapping[tuple[str, str], Mapping[str, Any]],
    budgets: Mapping[str, str],
) -> str:
    """The report's tables; every score is the mean over seeds, its 95 % interval
    (:func:`mean_interval`) and the number of seeds.

    One table per EVCS task (verified NashConv, lower is better): the score, the mean
    SE of the verification, the cell's evaluations (training + verification) and wall
    time per cell, also in raw simulations of the scenario where the cells recorded
    them (:func:`wall_in_raw_simulations`: mean over the cells that did). One table for
    the other tasks together (mean evaluation return, higher is better) with wall time
    per cell.
    """
    lines = []
    rows = [r for r in summary.values() if r["env"] == "evcs"]
    for task in dict.fromkeys(r["task"] for r in rows):
        task_rows = [r for r in rows if r["task"] == task]
        market = all("delta" in r for r in task_rows)  # the game ships references
        lines.append(
            f"{task} ({budgets.get(task, '')}): verified NashConv, % of total revenue "
            "(lower is better)"
            + (", and the collusion index Δ (0: Nash, 1: collusive)" if market else "")
            + "; mean over seeds [95 % interval] (seeds)\n"
        )
        lines.append(
            "| algorithm | NashConv | verification SE | "
            + ("Δ | " if market else "")
            + "evaluations (training + verification) | wall time per cell |"
        )
        lines.append("|---|---|---|---|---|" + ("---|" if market else ""))
        for r in sorted(task_rows, key=lambda r: r["mean"]):
            se = "—" if math.isnan(r.get("mean_se", math.nan)) else f"± {r['mean_se']:.1%}"
            verify = r.get("verify_evaluations", math.nan)
            evals = f"{r['env_steps']:.0f}" + ("" if math.isnan(verify) else f" + {verify:.0f}")
            delta = f" {_fmt_delta(r)} |" if market else ""
            lines.append(f"| {r['algorithm']} | {_fmt(r)} | {se} |{delta} {evals} | {_wall(r)} |")
        lines.append(_verification_note(task_rows))
        lines.append("")
    rows = [r for r in summary.values() if r["env"] != "evcs"]
    if rows:
        tasks = list(dict.fromkeys(r["task"] for r in rows))
        algos = list(dict.fromkeys(r["algorithm"] for r in rows))
        lines.append(
            "mean evaluation return (higher is better); mean over seeds [95 % interval] "
            "(seeds), then wall time per cell\n"
        )
        lines.append(
            "| algorithm | " + " | ".join(f"{t} ({budgets.get(t, '')})" for t in tasks) + " |"
        )
        lines.append("|---" * (len(tasks) + 1) + "|")
        for algo in algos:
            cells = [summary.get((t, algo)) for t in tasks]
            lines.append(
                f"| {algo} | "
                + " | ".join(
                    "—" if c is None else f"{_fmt(c)}, {_minutes(c['wall_s'])}" for c in cells
                )
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


def _save(fig: Any, path: Path) -> Path:
    """Lay out, write (110 dpi) and close a report figure; return its path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tasks(cells: Sequence[Mapping[str, Any]], folder: str | Path) -> list[Path]:
    """One figure per task: each algorithm's per-seed scores (dots), mean and 95 % interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for cell in grid_cells(cells):
        by_task[cell["task"]].append(cell)
    paths = []
    for task, group in by_task.items():
        algos = list(dict.fromkeys(algorithm_name(c) for c in group))
        evcs = group[0]["env"] == "evcs"
        fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(algos) + 1.5), 3.6))
        for i, algo in enumerate(algos):
            scores = np.array([cell_score(c) for c in group if algorithm_name(c) == algo])
            scores = scores * 100 if evcs else scores
            ax.scatter(np.full(len(scores), i), scores, s=14, alpha=0.6, color="C0")
            low, high = mean_interval(scores)
            err = (
                [[0.0], [0.0]]
                if math.isnan(low)
                else [[scores.mean() - low], [high - scores.mean()]]
            )
            ax.errorbar(i, scores.mean(), yerr=err, fmt="o", color="C3", capsize=4)
        ax.set_xticks(range(len(algos)), algos, rotation=30, ha="right")
        ax.set_ylabel("verified NashConv (% of revenue)" if evcs else "evaluation return")
        ax.set_title(f"{task}: per seed (dots), mean and 95 % interval")
        ax.grid(axis="y", alpha=0.3)
        paths.append(_save(fig, folder / f"{task}.png"))
    return paths


def plot_curves(cells: Sequence[Mapping[str, Any]], folder: str | Path) -> list[Path]:
    """NashConv against training evaluations, one figure per EVCS task with curve points.

    Each learner's line joins its mean verified NashConv at each budget (the curve
    points of ``bench_marl.py --curve`` and the grid's cell), with the 95 % interval
    over seeds as a band; the reference rows (library ``reference``) are horizontal
    lines. Saved as ``<task>_curve.png``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tasks = dict.fromkeys(c["task"] for c in cells if c.get("curve") and c["env"] == "evcs")
    paths = []
    for task in tasks:
        group = [c for c in cells if c["task"] == task]
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        learners = dict.fromkeys(algorithm_name(c) for c in group if c["library"] != "reference")
        for i, algo in enumerate(learners):
            by_budget: dict[int, list[float]] = defaultdict(list)
            for c in group:
                if algorithm_name(c) == algo:
                    by_budget[int(c["budget"])].append(100 * cell_score(c))
            xs = sorted(by_budget)
            mean = np.array([np.mean(by_budget[x]) for x in xs])
            bands = np.array([mean_interval(by_budget[x]) for x in xs])
            ax.plot(xs, mean, "o-", color=f"C{i % 10}", label=algo)
            if not np.isnan(bands).all():
                ax.fill_between(xs, bands[:, 0], bands[:, 1], color=f"C{i % 10}", alpha=0.15)
        styles = iter(["--", ":", "-."] * 3)
        for c in group:
            if c["library"] == "reference":
                ax.axhline(100 * cell_score(c), color="0.4", ls=next(styles), lw=1,
                           label=f"{algorithm_name(c)} (no learning)")  # fmt: skip
        ax.set_xlabel("training budget, evaluations (each point its own run)")
        ax.set_ylabel("verified NashConv (% of revenue)")
        ax.set_title(f"{task}: mean over seeds and 95 % interval")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        paths.append(_save(fig, folder / f"{task}_curve.png"))
    return paths
