"""Study: does a game's default train command meet its target on every training seed?

Runs ``evcs-gym train --scenario X`` with no flag beyond the scenario (the game's shipped
recipe; ``--extra`` appends flags, e.g. a smoke budget) once per training seed, each in
its own process into ``OUT/runs/seed<S>/`` (not committed: ``runs/`` is ignored), with
its printout in ``OUT/seed<S>.log`` and its ``summary.json`` in ``OUT/seed<S>.json``. Then it
tabulates each seed's verified NashConv ± SE, Δ, wall time and raw simulations, their
mean with a 95 % t interval, the worst seed, and how many seeds meet ``--target`` (% of
total revenue) within ``--minutes``; ``OUT/seeds.md`` and ``OUT/seeds.json`` keep it.
``--resume`` keeps the seeds whose ``OUT/seed<S>.json`` exists.

Run: ``python benchmarks/studies/default_seeds.py --scenario siouxfalls_market --seeds 0
1 2 3 4 5 --out benchmarks/results/default_siouxfalls_market/iddpg-1200 --resume``, and a
candidate learner with ``--out .../mfddpg-400 --resume --extra --algo mfddpg --budget 400``
(``benchmarks/results/default_siouxfalls_market/README.md`` compares them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats


def train_seed(scenario: str, seed: int, out: Path, extra: list[str]) -> dict[str, Any]:
    """Run the default train command on one seed in a new process; return its row."""
    run = out / "runs" / f"seed{seed}"
    argv = ["train", "--scenario", scenario, "--seed", str(seed), "--out", str(run), "--quiet"]
    with open(out / f"seed{seed}.log", "w", encoding="utf-8") as log:
        log.write(f"$ evcs-gym {' '.join(argv + extra)}\n")
        log.flush()
        cmd = [sys.executable, "-m", "evcs_gym.cli", *argv, *extra]
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True)
    summary = (run / "summary.json").read_text()
    (out / f"seed{seed}.json").write_text(summary)
    return seed_row(seed, json.loads(summary))


def seed_row(seed: int, summary: dict[str, Any]) -> dict[str, Any]:
    """The figures of one seed's ``summary.json`` that the study tabulates."""
    verified, split = summary["verified_exploitability"], summary["time_split"]
    delta = summary.get("collusion_index") or {}
    return {
        "seed": seed,
        "algorithm": summary["algorithm"],
        "recipe": (summary.get("recipe") or {}).get("source"),
        "nash_conv_pct": 100 * verified["relative_nash_conv"],
        "nash_conv_se_pct": 100 * verified["relative_nash_conv_se"],
        "delta": delta.get("delta"),
        "minutes": split["total"] / 60,
        "training_minutes": split["training"] / 60,
        "raw_simulations": split["raw_simulations"],
        "seconds_per_raw_simulation": split["seconds_per_raw_simulation"],
    }


def summarize(rows: list[dict[str, Any]], target: float, minutes: float) -> dict[str, Any]:
    """Mean and 95 % t interval of NashConv over the seeds, the worst seed, the hits."""
    values = np.array([r["nash_conv_pct"] for r in rows])
    ci95 = None
    if len(values) > 1:
        half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
        ci95 = [float(values.mean() - half), float(values.mean() + half)]
    hits = [r["seed"] for r in rows if r["nash_conv_pct"] <= target and r["minutes"] <= minutes]
    worst = max(rows, key=lambda r: r["nash_conv_pct"])
    return {
        "seeds": [r["seed"] for r in rows],
        "mean_pct": float(values.mean()),
        "ci95_pct": ci95,
        "worst": {"seed": worst["seed"], "nash_conv_pct": worst["nash_conv_pct"]},
        "meet_target": hits,
        "target_pct": target,
        "minutes": minutes,
    }


def table(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The study as Markdown: one line per seed, then the summary."""
    lines = [
        "| seed | learner (recipe) | verified NashConv ± SE | Δ | minutes (training) | raw sims |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        delta = "–" if r["delta"] is None else f"{r['delta']:.2f}"
        lines.append(
            f"| {r['seed']} | {r['algorithm']} ({r['recipe']}) | {r['nash_conv_pct']:.2f} % ± "
            f"{r['nash_conv_se_pct']:.2f} % | {delta} | {r['minutes']:.1f} "
            f"({r['training_minutes']:.1f}) | {r['raw_simulations']:,.0f} |"
        )
    ci95 = summary["ci95_pct"]
    interval = "" if ci95 is None else f" [{ci95[0]:.2f}, {ci95[1]:.2f}]"
    lines += [
        "",
        f"mean {summary['mean_pct']:.2f} %{interval} over {len(rows)} seeds; worst "
        f"seed {summary['worst']['seed']} at {summary['worst']['nash_conv_pct']:.2f} %; "
        f"{len(summary['meet_target'])} of {len(rows)} at or below {summary['target_pct']:g} % "
        f"within {summary['minutes']:g} minutes",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run or resume the study; print and write its table; return its summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="siouxfalls_market")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--target", type=float, default=5.0, help="NashConv, %% of revenue")
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="flags for train")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        done = args.out / f"seed{seed}.json"
        if args.resume and done.exists():
            rows.append(seed_row(seed, json.loads(done.read_text())))
        else:
            rows.append(train_seed(args.scenario, seed, args.out, args.extra))
        print(f"seed {seed}: {rows[-1]['nash_conv_pct']:.2f} % in {rows[-1]['minutes']:.1f} min")
    summary = summarize(rows, args.target, args.minutes)
    text = table(rows, summary)
    print(text)
    command = " ".join(["evcs-gym train --scenario", args.scenario, *args.extra])
    (args.out / "seeds.md").write_text(f"# `{command}`\n\n{text}\n")
    record = {"argv": sys.argv[1:] if argv is None else argv, "rows": rows, "summary": summary}
    (args.out / "seeds.json").write_text(json.dumps(record, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()
