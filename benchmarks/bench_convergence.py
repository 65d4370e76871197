"""Benchmark: the convergence study — revenues against UE start and stop-rule tolerance.

For each scenario it evaluates, at ``--seeds`` seeds (default 6), the profiles of
:func:`evcs_gym.convergence.study_profiles` — a base profile (``--prices`` JSON, e.g. the
output of ``evcs-gym solve``, else the middle of the bounds), single-period spikes to
the upper bound, a training-like noisy profile and uniform-random profiles — under the
default UE, a free-flow start, every tolerance halved and the iteration cap doubled,
and prints each station's mean revenue ± SE, the paired differences to the default,
whether they agree
(``|difference| <= max(3 SE, 2 % of the revenue)``), UE iterations and the charging
platoons' worst gap statistics. This is the acceptance study of the payoff-fidelity
issue; ``evcs-gym convergence`` runs the same for one scenario.

Run: ``python benchmarks/bench_convergence.py [--scenarios tiny siouxfalls] [--seeds 6]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import evcs_gym
from evcs_gym.convergence import convergence_study, study_profiles


def run(name: str, seeds: int, workers: int, prices: str | None, random: int) -> dict:
    nd = evcs_gym.load_scenario(name)
    base = None
    if prices:
        raw = json.loads(Path(prices).read_text())
        base = raw.get("prices", raw)
    profiles = study_profiles(nd, base, deviations=2, training_like=1, random=random)
    print(f"\n== {nd.summary()}\nprofiles: {', '.join(profiles)}", flush=True)
    t0 = time.perf_counter()
    study = convergence_study(
        name,
        profiles,
        seeds=seeds,
        workers=workers,
        progress=True,
    )
    print(study.table())
    print(f"({time.perf_counter() - t0:.0f} s)")
    return study.to_dict()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["tiny", "siouxfalls"])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--random", type=int, default=1, help="uniform-random profiles")
    parser.add_argument("--prices", help="base profile JSON (applies to every scenario)")
    parser.add_argument("--out", help="write all studies as JSON")
    args = parser.parse_args(argv)
    out = {
        name: run(name, args.seeds, args.workers, args.prices, args.random)
        for name in args.scenarios
    }
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
