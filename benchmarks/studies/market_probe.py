"""Study: what the market's settings do to a scenario, before a market game is calibrated.

For a scenario with overrides (``--set KEY=VALUE``, the same as the CLI's) it prints:

1. **Uniform profiles** across the bounds: each evaluation's UE iterations (raw
   simulations) and stop reason, the stations' total revenue, and how many charging
   vehicles charged on the network (the rest took the outside option). The total's
   maximum is the best uniform profile, a floor for the collusive reference.
2. **Constant guesses**: the verified NashConv of every station at the floor, at
   mid-bounds and at the ceiling (``exploitability`` with ``--search``, by default the
   converged search, ``--grid`` uniform levels among its global candidates, on
   ``--seeds`` seeds), the figures a market game must keep above 5 %.

Run: ``python benchmarks/studies/market_probe.py --scenario tiny --set
station_taste_scale=12 --set station_taste_logit=true --set
station_taste_quasi_random=true --set charging_outside_cost=30 --set
'charging_nodes={"A": [0.4, 2.4], "B": [0.4, 2.4]}'``
(``benchmarks/results/market_probe_tiny.txt``; add ``--set charging_outside_cost=null``
for the same game without the outside option).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.cli.common import parse_settings
from evcs_gym.equilibrium import exploitability


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Print the study; return its figures (``uniform``: per price, ``guesses``: per
    constant guess)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="tiny")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--levels", type=int, default=11, help="uniform profiles across the bounds")
    ap.add_argument(
        "--search",
        default="converged",
        help="the deviation search (a preset name; until evcs-gym 0.3.0 'budget')",
    )
    ap.add_argument(
        "--budget",
        type=int,
        default=None,
        help="its candidates a station at most (None: the search's default)",
    )
    ap.add_argument("--grid", type=int, default=7, help="uniform levels in each search")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    figures: dict[str, Any] = {"uniform": {}, "guesses": {}}

    nd = evcs_gym.load_scenario(args.scenario, **parse_settings(args.set))
    print(nd.summary())
    lows, highs = zip(*nd.price_bounds.values())
    low, high = max(lows), min(highs)
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    print("\nuniform profiles (seed 0):")
    print("  price  iterations  stop          total revenue  charged on the network")
    totals = []
    for price in np.linspace(low, high, args.levels):
        res = ev.evaluate(evcs_gym.uniform_prices(nd.agent_names, nd.n_periods, price), seed=0)
        st = res.ue_stats
        totals.append((sum(res.revenues.values()), price))
        figures["uniform"][float(price)] = {
            "iterations": res.ue_iterations,
            "total": totals[-1][0],
            "charged": st["charging_vehicles_charged"],
            "charging": st["simulated_charging_vehicles"],
        }
        print(
            f"  {price:5.2f}  {res.ue_iterations:10d}  {st['stop_reason']:<12}  "
            f"{totals[-1][0]:13.0f}  {st['charging_vehicles_charged']:.0f} of "
            f"{st['simulated_charging_vehicles']}"
        )
    best_total, best_price = max(totals)
    print(f"best uniform profile: {best_price:.2f} (total revenue {best_total:.0f})")

    cap = "" if args.budget is None else f", <= {args.budget} candidates a station"
    print(f"\nconstant guesses ({args.search} search{cap}, {args.seeds} seeds):")
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
        for name, price in (("floor", low), ("mid-bounds", (low + high) / 2), ("ceiling", high)):
            t0 = time.perf_counter()
            cert = exploitability(
                pool,
                evcs_gym.uniform_prices(nd.agent_names, nd.n_periods, price),
                search=args.search,
                budget=args.budget,
                grid=args.grid,
                seeds=args.seeds,
            )
            figures["guesses"][name] = cert.relative_nash_conv
            best = "; ".join(
                f"{a} " + " ".join(f"{v:.2f}" for v in d.best_prices)
                for a, d in cert.deviations.items()
            )
            print(
                f"  {name:<10} {price:.2f}: NashConv {cert.relative_nash_conv:6.2%} ± "
                f"{cert.relative_nash_conv_se:.2%}  best deviations: {best}  "
                f"({time.perf_counter() - t0:.0f} s)"
            )
    return figures


if __name__ == "__main__":
    main()
