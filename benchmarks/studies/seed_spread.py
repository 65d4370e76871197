"""Study: how much a price profile's revenues vary from seed to seed.

A NashConv certificate averages each station's gain over a few seeds; the standard
error it reports comes from this spread, at the profile and at the deviations. This
study evaluates one profile (a solver's ``--out`` JSON, or any ``{"prices": {station:
[...]}}`` file) on seeds ``0 .. --seeds - 1`` and prints, per station, the mean revenue,
its standard deviation over the seeds and the standard error of a 4-seed mean, with
each evaluation's UE iterations and stop reason. Each ``--variant`` (a
``;``-separated list of ``KEY=VALUE`` overrides, ``-`` for none) is a separate run.

Run: ``python benchmarks/studies/seed_spread.py solve.json --scenario siouxfalls_market
--variant - --variant charging_chargers=null``
(``benchmarks/results/market_calibration_siouxfalls_market.txt``, section 7).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.cli.common import parse_settings


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Print the study; return its figures by variant (``spread``: station -> relative
    sd over the seeds; ``iterations``: per seed)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prices", help="JSON file with a top-level `prices` mapping")
    ap.add_argument("--scenario", default="siouxfalls_market")
    ap.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE;...")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    with open(args.prices, encoding="utf-8") as f:
        prices = {a: np.asarray(v, dtype=float) for a, v in json.load(f)["prices"].items()}
    figures: dict[str, Any] = {}
    for variant in args.variant or ["-"]:
        sets = [] if variant == "-" else [s for s in variant.split(";") if s]
        nd = evcs_gym.load_scenario(args.scenario, **parse_settings(sets))
        seeds = list(range(args.seeds))
        with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
            results = pool.evaluate_batch([prices] * len(seeds), seeds=seeds)
        revenue = np.array([[r.revenues[a] for a in nd.agent_names] for r in results])
        iterations = [r.ue_iterations for r in results]
        print(f"{variant} (settings {nd.settings_hash}): iterations {iterations}, stops", [
            r.ue_stats["stop_reason"] for r in results
        ])  # fmt: skip
        spread = {}
        for j, agent in enumerate(nd.agent_names):
            mean, sd = revenue[:, j].mean(), revenue[:, j].std(ddof=1)
            spread[agent] = float(sd / mean)
            print(
                f"  {agent}: mean {mean:10.1f}  sd over seeds {100 * sd / mean:5.2f} %  "
                f"(SE of 4 seeds {50 * sd / mean:5.2f} %)"
            )
        total = revenue.sum(axis=1)
        print(f"  total {total.mean():.0f}  sd {100 * total.std(ddof=1) / total.mean():.2f} %")
        figures[variant] = {"spread": spread, "iterations": iterations}
    return figures


if __name__ == "__main__":
    main()
