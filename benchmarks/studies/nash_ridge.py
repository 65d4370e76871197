"""Study: is the Nash reference a point or a ridge, and what does a learner's slack cost?

On ``tiny_market`` our learners end near N in NashConv (1.3–4 %) but with prices 0.1–0.2
below N's in some periods, so that Δ, which measures the stations' total revenue between
N (0) and M (1), falls to −0.5 or below. This script asks the game, not a learner, why a
profile so far below N can verify so close to an equilibrium.

For each station and period it sweeps the station's own price in that period over
``N ± --half-width`` in steps of ``--step``, the rival prices at N except the rival's
price in the same period, which is set to N's plus each of ``--rival-shifts``. Every
point is the station's revenue (all periods), the mean over ``--seeds``. From each curve:

- the **best response** to the rival's shifted price (the vertex of a parabola through
  the grid's best point and its neighbours), and the **best-response slope**
  (least-squares, best response against the rival's price): 0 means the rival's price
  does not move the station's best price, 1 that the station follows it one for one;
- the **slack on the diagonal**: the gain of the best response over pricing at N's price
  plus the same shift as the rival (both stations moved together), in % of the
  station's revenue there. Small slack with a large shift is a ridge: profiles far from
  N that no single move improves by much.

It also gives the stations' **total revenue on the diagonal** (both prices of the period
shifted together) against N's, the quantity that moves Δ. Last, it **verifies profiles on
the diagonal**: N with both stations' prices in ``--diagonal-periods`` moved by each of
``--diagonal-shifts``, each verified as ``evcs-gym exploit --seeds 4`` does (the converged
search) and given its Δ: how far below N a profile can sit while it verifies as close to
an equilibrium as the learners do.

Output in ``--out``: ``nash_ridge.json`` (every curve and verification),
``nash_ridge.md`` (the tables), ``nash_ridge.png`` (the curves, one panel per station and
period) and ``nash_ridge_run.json`` (the command).

Run: ``python benchmarks/studies/nash_ridge.py --out benchmarks/results/price_war_tiny_market``
(about 1,100 evaluations for the curves and 130 per verified profile, 15–20 minutes on 2
cores).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.equilibrium.collusion import collusion_index
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import exploitability
from evcs_gym.scenarios import load_references

Profile = dict[str, np.ndarray]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--rival-shifts", nargs="+", type=float, default=[-0.2, -0.1, 0.0, 0.1])
    p.add_argument("--half-width", type=float, default=0.4, help="own price sweep: N ± this")
    p.add_argument("--step", type=float, default=0.05, help="own price sweep step")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument(
        "--diagonal-shifts", nargs="*", type=float, default=[-0.2, -0.15, -0.1, -0.05, 0.0, 0.1]
    )
    p.add_argument("--diagonal-periods", nargs="+", type=int, default=[2, 3],
                   help="periods (1-based) moved on the verified diagonal")  # fmt: skip
    p.add_argument("--verify-seeds", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/nash_ridge"))
    p.add_argument("--resume", action="store_true",
                   help="keep the curves and verified profiles of OUT/nash_ridge.json "
                   "made with the same game, sweep and seeds")  # fmt: skip
    args = p.parse_args(argv)
    ratio = args.half_width / args.step
    if args.step <= 0 or abs(ratio - round(ratio)) > 1e-9:
        p.error(f"--half-width must be a multiple of --step, got {args.half_width}, {args.step}")
    if len(set(args.rival_shifts)) < 2:
        p.error(f"--rival-shifts needs two or more values (a slope), got {args.rival_shifts}")
    for shift in args.rival_shifts:
        if abs(shift / args.step - round(shift / args.step)) > 1e-9:
            p.error(f"--rival-shifts must be multiples of --step, got {shift}")
    return args


def sweep_profiles(
    nash: Profile, agent: str, rival: str, period: int, shift: float, offsets: np.ndarray
) -> list[Profile]:
    """N with the rival's ``period`` price moved by ``shift``, and ``agent``'s by each offset."""
    profiles = []
    for offset in offsets:
        profile = {a: np.array(v, float) for a, v in nash.items()}
        profile[rival][period] += shift
        profile[agent][period] += offset
        profiles.append(profile)
    return profiles


def vertex(x: np.ndarray, y: np.ndarray) -> float:
    """The argmax of ``y`` refined by a parabola through it and its neighbours."""
    i = int(np.argmax(y))
    if i == 0 or i == len(y) - 1:
        return float(x[i])
    a, b, _ = np.polyfit(x[i - 1 : i + 2], y[i - 1 : i + 2], 2)
    return float(-b / (2 * a)) if a < 0 else float(x[i])


def measure(args: argparse.Namespace, kept: dict[str, Any] | None) -> dict[str, Any]:
    """Evaluate every curve (one pool batch) and verify the diagonal's profiles; what
    ``kept`` (an earlier record of the same game and sweep) already holds is reused."""
    nd = evcs_gym.load_scenario(args.scenario)
    agents = list(nd.agent_names)
    if len(agents) != 2:
        raise SystemExit(f"--scenario {args.scenario!r}: the study needs 2 stations")
    references = load_references(nd)
    if references is None:
        raise SystemExit(f"--scenario {args.scenario!r} ships no Nash reference")
    nash = {a: np.asarray(v, float) for a, v in references.nash.items()}
    n_steps = round(args.half_width / args.step)
    record = {
        "scenario": nd.name,
        "settings_hash": nd.settings_hash,
        "seeds": args.seeds,
        "rival_shifts": args.rival_shifts,
        "nash": {a: v.tolist() for a, v in nash.items()},
        "offsets": (args.step * np.arange(-n_steps, n_steps + 1)).tolist(),
    }
    if kept is not None and any(kept.get(k) != v for k, v in record.items()):
        kept = None  # another game, sweep or seeds: nothing to keep
    done = {
        d["shift"]: d
        for d in (kept or {}).get("diagonal", [])
        if d["periods"] == args.diagonal_periods and d["verify_seeds"] == args.verify_seeds
    }
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
        record["curves"] = kept["curves"] if kept else sweep(pool, record, args.seeds)
        evaluator = BatchEvaluator(pool)  # N's and M's evaluations made once for every Δ
        record["diagonal"] = [
            done.get(shift)
            or verify_shifted(
                evaluator, nash, references, args.diagonal_periods, shift, args.verify_seeds
            )  # fmt: skip
            for shift in args.diagonal_shifts
        ]
    return record


def sweep(pool: Any, record: dict[str, Any], seeds: list[int]) -> list[dict[str, Any]]:
    """Every station's revenue curve along each period's price, per rival shift, each
    point the mean over ``seeds`` (one pool batch)."""
    nash = {a: np.asarray(v, float) for a, v in record["nash"].items()}
    agents, offsets = list(nash), np.asarray(record["offsets"])
    keys, profiles = [], []
    for agent, rival in (agents, agents[::-1]):
        for period in range(len(nash[agent])):
            for shift in record["rival_shifts"]:
                keys.append((agent, rival, period, shift))
                profiles += sweep_profiles(nash, agent, rival, period, shift, offsets)
    results = pool.evaluate_batch(
        [p for p in profiles for _ in seeds], seeds=[s for _ in profiles for s in seeds]
    )
    per_profile = np.array([[r.rewards[a] for a in agents] for r in results]).reshape(
        len(profiles), len(seeds), len(agents)
    ).mean(axis=1)  # fmt: skip
    curves = []
    for k, (agent, rival, period, shift) in enumerate(keys):
        rows = per_profile[k * len(offsets) : (k + 1) * len(offsets)]
        curves.append({
            "agent": agent, "rival": rival, "period": period, "rival_shift": shift,
            "own_prices": (nash[agent][period] + offsets).tolist(),
            "own_revenue": rows[:, agents.index(agent)].tolist(),
            "rival_revenue": rows[:, agents.index(rival)].tolist(),
        })  # fmt: skip
    return curves


def verify_shifted(
    evaluator: BatchEvaluator,
    nash: Profile,
    references: Any,
    periods: list[int],
    shift: float,
    seeds: int,
) -> dict[str, Any]:
    """N with both stations' prices in ``periods`` (1-based) moved by ``shift``: its
    certificate (the converged search) and its Δ, on seeds ``0 .. seeds - 1`` (the
    profile's evaluations, cached by ``evaluator``, serve both)."""
    prices = {a: np.array(v, float) for a, v in nash.items()}
    for a in prices:
        prices[a][[p - 1 for p in periods]] += shift
    res = exploitability(evaluator, prices, seeds=seeds)
    index = collusion_index(evaluator, prices, references, seeds=list(res.seeds))
    return {
        "periods": periods, "shift": shift, "verify_seeds": seeds,
        "prices": {a: v.tolist() for a, v in prices.items()},
        "relative_nash_conv": res.relative_nash_conv,
        "relative_nash_conv_se": res.relative_nash_conv_se,
        "converged": res.converged, "evaluations": res.evaluations,
        "delta": index.delta, "delta_se": index.delta_se,
    }  # fmt: skip


def analyse(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per station and period: best responses, their slope, the diagonal's slack and total."""
    offsets = np.asarray(record["offsets"])
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for c in record["curves"]:
        x, y = np.asarray(c["own_prices"]), np.asarray(c["own_revenue"])
        shift = c["rival_shift"]
        on_diagonal = int(np.argmin(abs(offsets - shift)))
        row = rows.setdefault((c["agent"], c["period"]), {
            "agent": c["agent"], "period": c["period"], "nash_price": float(x[len(x) // 2]),
            "shifts": [], "best_responses": [], "slack": [], "total": [],
        })  # fmt: skip
        row["shifts"].append(shift)
        row["best_responses"].append(vertex(x, y))
        row["slack"].append(float(y.max() / y[on_diagonal] - 1))
        row["total"].append(float(y[on_diagonal] + c["rival_revenue"][on_diagonal]))
    out = []
    for row in rows.values():
        nash_total = row["total"][row["shifts"].index(0.0)] if 0.0 in row["shifts"] else None
        row["slope"] = float(np.polyfit(row["shifts"], row["best_responses"], 1)[0])
        row["total_change"] = [t / nash_total - 1 for t in row["total"]] if nash_total else None
        out.append(row)
    return out


def report(record: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    shifts = rows[0]["shifts"]
    head = ", ".join(f"{s:+.2f}" for s in shifts)
    lines = [
        f"# Is N a point or a ridge? `{record['scenario']}` ({record['settings_hash']}), "
        f"seeds {record['seeds']}",
        "",
        "Best response of each station in each period to the rival's price in that period "
        "at N's plus a shift (the other prices at N), its slope, and the slack on the "
        "diagonal: what the best response gains over matching the rival's shift, in % of "
        "the station's revenue.",
        "",
        f"| station | period | N's price | best response at rival shift {head} | slope | "
        f"slack at shift {head} | total revenue vs N at shift {head} |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["period"], r["agent"])):
        br = ", ".join(f"{b:.2f}" for b in r["best_responses"])
        slack = ", ".join(f"{s:.1%}" for s in r["slack"])
        total = ", ".join(f"{t:+.1%}" for t in r["total_change"] or [])
        lines.append(
            f"| {r['agent']} | {r['period'] + 1} | {r['nash_price']:.2f} | {br} | "
            f"{r['slope']:.2f} | {slack} | {total} |"
        )
    if record.get("diagonal"):
        lines += [
            "",
            "Profiles on the diagonal: N with both stations' prices in periods "
            f"{record['diagonal'][0]['periods']} moved together, verified with the converged "
            "search (gains on 4 seeds), and their Δ.",
            "",
            "| shift | NashConv | Δ | search converged | evaluations |",
            "|---|---|---|---|---|",
        ]
        for d in sorted(record["diagonal"], key=lambda d: d["shift"]):
            lines.append(
                f"| {d['shift']:+.2f} | {d['relative_nash_conv']:.2%} ± "
                f"{d['relative_nash_conv_se']:.2%} | {d['delta']:+.2f} | {d['converged']} | "
                f"{d['evaluations']} |"
            )
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents = list(record["nash"])
    periods = len(record["nash"][agents[0]])
    fig, axes = plt.subplots(
        len(agents), periods, figsize=(3.2 * periods, 2.8 * len(agents)), squeeze=False
    )
    shifts = sorted({c["rival_shift"] for c in record["curves"]})
    colours = dict(zip(shifts, plt.cm.coolwarm(np.linspace(0, 1, len(shifts))), strict=True))
    for c in record["curves"]:
        ax = axes[agents.index(c["agent"])][c["period"]]
        ax.plot(c["own_prices"], c["own_revenue"], color=colours[c["rival_shift"]],
                label=f"rival {c['rival_shift']:+.2f}")  # fmt: skip
        ax.axvline(record["nash"][c["agent"]][c["period"]], color="k", lw=0.8)
        ax.set_title(f"station {c['agent']}, period {c['period'] + 1}", fontsize=9)
        ax.set_xlabel("own price")
    axes[0][0].set_ylabel("own revenue")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(
        f"{record['scenario']}: each station's revenue along its price in one period, the "
        "rival's price in that period at N's plus a shift (black: N)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "nash_ridge.json"
    kept = json.loads(path.read_text()) if args.resume and path.exists() else None
    record = measure(args, kept)
    rows = analyse(record)
    record["analysis"] = rows
    path.write_text(json.dumps(record) + "\n")
    plot(record, args.out / "nash_ridge.png")
    text = report(record, rows)
    (args.out / "nash_ridge.md").write_text(text)
    print(text)
    command = ["python benchmarks/studies/nash_ridge.py", *(sys.argv[1:] if argv is None else argv)]
    (args.out / "nash_ridge_run.json").write_text(
        json.dumps({"command": " ".join(command)}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
