"""Study: how rough is a station's payoff along its own price, and what sets the floor of
the certificate?

Along each line through a profile (one station's price in one period moved over a grid,
everything else fixed) it evaluates the station's revenue and fits a quartic to it. The
residual is the payoff's roughness: its standard deviation and its largest spike, as a
share of the station's mean revenue along the line. It also compares two gains from the
profile's price: the raw one (the best grid point's revenue over the current one's) and
the smooth one (the same on the fitted curve). Where the raw gain is mostly spike, a
search of a few hundred candidates finds a spike whatever the profile, and the
certificate cannot fall below it. With ``--seeds 2`` or more it also gives the
correlation of the residuals between seeds: when they agree, held-out seeds do not
remove the spikes either.

The ``--variants`` are the game's levers, each a settings override of the scenario.

Run: ``python benchmarks/studies/payoff_roughness.py --scenario tiny_market --grid 0.90
1.50 0.01 --seeds 2 --workers 2 --out benchmarks/results/payoff_roughness_tiny_market.md``
(without ``--grid`` each line spans ``--around`` its own price, for games whose prices
lie elsewhere, e.g. ``--scenario siouxfalls_market --variants shipped``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.parallel.pool import ParallelEvaluatorPool
from evcs_gym.scenarios.references import load_references

TIGHT_UE = {"ue_charging_gap_threshold": 0.0005, "ue_convergence_threshold": 0.001}
VARIANTS: dict[str, dict[str, Any]] = {
    "shipped": {},
    "one-vehicle platoons": {"deltan": 1},
    "UE 4x tighter": TIGHT_UE,
    "both": {"deltan": 1, **TIGHT_UE},
    "demand x2": {"demand_multiplier": 2.0},
    "taste scale x2": {"station_taste_scale": 24},
}


def line_profiles(base: np.ndarray, i: int, period: int, grid: np.ndarray) -> list[np.ndarray]:
    """The profile itself, then its station ``i``'s price in ``period`` at every grid point."""
    profiles = [base.copy()]
    for x in grid:
        p = base.copy()
        p[i, period] = x
        profiles.append(p)
    return profiles


def roughness(grid: np.ndarray, current: float, x0: float, revenue: np.ndarray) -> dict[str, float]:
    """Residual SD and spike, raw and smooth gains: shares of the mean revenue."""
    coefs = np.polyfit(grid, revenue.mean(axis=0), 4)
    fit = np.polyval(coefs, grid)
    scale = revenue.mean()
    residuals = (revenue - fit) / scale  # (seeds, points)
    mean_residual = residuals.mean(axis=0)
    row = {
        "sd": float(mean_residual.std()),
        "spike": float(mean_residual.max()),
        "raw_gain": float((revenue.mean(axis=0).max() - current) / scale),
        "smooth_gain": float((fit.max() - np.polyval(coefs, x0)) / scale),
    }
    if len(revenue) > 1:
        corr = np.corrcoef(residuals)
        row["seed_correlation"] = float(corr[np.triu_indices(len(revenue), 1)].mean())
    return row


def line_grid(
    grid: np.ndarray | None, around: tuple[float, float], x0: float, bounds: tuple[float, float]
) -> np.ndarray:
    """``grid``, or (``grid`` None) prices within ``around[0]`` of ``x0`` in steps of
    ``around[1]``, clipped to the station's ``bounds``."""
    if grid is not None:
        return grid
    span, step = around
    low, high = max(bounds[0], x0 - span), min(bounds[1], x0 + span)
    return np.round(np.arange(low, high + step / 2, step), 6)


def measure(
    nd: Any,
    base: np.ndarray,
    grid: np.ndarray | None,
    seeds: list[int],
    workers: int,
    around: tuple[float, float] = (0.3, 0.01),
    lines: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Every station's line in every period (or only ``lines``, ``"STATION:PERIOD"``
    with periods from 1), on ``seeds``."""
    rows = []
    with ParallelEvaluatorPool(nd, workers) as pool:
        evaluator = BatchEvaluator(pool)
        for i, station in enumerate(nd.agent_names):
            for period in range(nd.n_periods):
                if lines is not None and f"{station}:{period + 1}" not in lines:
                    continue
                prices = line_grid(grid, around, base[i, period], nd.price_bounds[station])
                profiles = line_profiles(base, i, period, prices)
                revenue = np.array([evaluator.rewards(profiles, s)[:, i] for s in seeds])
                current = float(revenue[:, 0].mean())
                row = roughness(prices, current, base[i, period], revenue[:, 1:])
                rows.append({"station": station, "period": period + 1, **row})
    return rows


def table(results: dict[str, Any]) -> str:
    """Markdown: one row per variant; the raw and smooth gains of its line of largest gain."""
    lines = [
        "| variant | residual SD (mean of lines) | largest spike | largest raw gain "
        "| that line's smooth gain | seeds' correlation | time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, res in results.items():
        rows = res["lines"]
        top = max(rows, key=lambda r: r["raw_gain"])
        corr = [r["seed_correlation"] for r in rows if "seed_correlation" in r]
        lines.append(
            f"| {name} | {np.mean([r['sd'] for r in rows]):.2%} "
            f"| {max(r['spike'] for r in rows):.2%} "
            f"| {top['raw_gain']:.2%} ({top['station']}, period {top['period']}) "
            f"| {top['smooth_gain']:.2%} "
            f"| {f'{np.mean(corr):.2f}' if corr else '-'} | {res['seconds']:.0f} s |"
        )
    return "\n".join(lines)


def line_table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one row per line of one variant."""
    lines = [
        "| station | period | residual SD | spike | raw gain | smooth gain |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['station']} | {r['period']} | {r['sd']:.2%} | {r['spike']:.2%} "
            f"| {r['raw_gain']:.2%} | {r['smooth_gain']:.2%} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the study; return each variant's lines (what ``--out`` writes as JSON)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--prices", help="JSON {station: prices} (default: the game's Nash reference)")
    p.add_argument(
        "--grid",
        type=float,
        nargs=3,
        default=None,
        metavar=("LOW", "HIGH", "STEP"),
        help="the same prices on every line (default: --around each line's price)",
    )
    p.add_argument(
        "--around",
        type=float,
        nargs=2,
        default=[0.3, 0.01],
        metavar=("SPAN", "STEP"),
        help="each line from its price minus SPAN to plus SPAN, within the bounds",
    )
    p.add_argument("--lines", nargs="+", help="only these lines, STATION:PERIOD (from 1)")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", help="write the table here, and the lines beside it as JSON")
    args = p.parse_args(argv)
    grid = None
    if args.grid is not None:
        low, high, step = args.grid
        grid = np.round(np.arange(low, high + step / 2, step), 6)
    results: dict[str, Any] = {}
    for name in args.variants:
        nd = evcs_gym.load_scenario(args.scenario, **VARIANTS[name])
        prices = json.loads(Path(args.prices).read_text()) if args.prices else None
        if prices is None:
            refs = load_references(evcs_gym.load_scenario(args.scenario))
            assert refs is not None, f"{args.scenario} has no references: pass --prices"
            prices = refs.nash
        base = np.array([prices[a] for a in nd.agent_names], dtype=float)
        t0 = time.perf_counter()
        lines = None if args.lines is None else set(args.lines)
        seeds = list(range(args.seeds))
        rows = measure(nd, base, grid, seeds, args.workers, tuple(args.around), lines)
        results[name] = {
            "overrides": VARIANTS[name],
            "lines": rows,
            "seconds": time.perf_counter() - t0,
        }
        print(table({name: results[name]}).splitlines()[-1], flush=True)
    first = next(iter(results))
    text = f"{table(results)}\n\nThe lines of {first}:\n\n{line_table(results[first]['lines'])}"
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
        Path(args.out).with_suffix(".json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
