"""Benchmark: the convergence study — revenues against the UE's start and run length.

For each scenario it evaluates, at ``--seeds`` seeds (default 6), the profiles of
:func:`evcs_gym.studies.convergence.study_profiles` — a base profile (``--prices`` JSON, else
the solver's equilibrium in ``benchmarks/inputs/solve_<scenario>.json`` where there is
one, else the middle of the bounds), two single-period spikes to the upper bound,
``--training`` training-like noisy profiles and ``--random`` uniform-random profiles —
under the default UE, a free-flow start and a doubled cap without the stationary stop,
and prints each station's mean revenue ± SE, the paired differences to the default,
whether they agree (``|difference| <= max(3 SE, 3 % of the revenue)``), UE iterations
and the charging platoons' worst gap statistics. ``evcs-gym convergence`` runs the same
for one scenario.

Run: ``python benchmarks/bench_convergence.py [--scenarios tiny siouxfalls] [--seeds 6]
[--training 2] [--random 3] [--out FILE.json]`` (Sioux Falls at 6 seeds: about 30
minutes on 2 idle cores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import evcs_gym
from evcs_gym.studies.convergence import convergence_study, study_profiles

INPUTS = Path(__file__).resolve().parent / "inputs"


def run(
    name: str, seeds: int, workers: int, prices: str | None, training: int, random: int
) -> dict:
    nd = evcs_gym.load_scenario(name)
    path = Path(prices) if prices else INPUTS / f"solve_{nd.name}.json"
    base = None
    if path.exists():
        raw = json.loads(path.read_text())
        base = raw.get("prices", raw)
    profiles = study_profiles(nd, base, deviations=2, training_like=training, random=random)
    print(f"\n== {nd.summary()}\nevcs-gym {evcs_gym.__version__}, settings {nd.settings_hash}")
    print(f"base: {path if base is not None else 'mid-bounds'}; profiles: {', '.join(profiles)}")
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
    return {**study.to_dict(), "version": evcs_gym.__version__, "settings_hash": nd.settings_hash}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["tiny", "siouxfalls"])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--training", type=int, default=2, help="training-like profiles")
    parser.add_argument("--random", type=int, default=3, help="uniform-random profiles")
    parser.add_argument("--prices", help="base profile JSON (applies to every scenario)")
    parser.add_argument("--out", help="write all studies as JSON")
    args = parser.parse_args(argv)
    out = {
        name: run(name, args.seeds, args.workers, args.prices, args.training, args.random)
        for name in args.scenarios
    }
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
