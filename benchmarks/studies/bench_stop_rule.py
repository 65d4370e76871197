"""Benchmark: does a candidate stop rule agree across starts and tolerances better?

The convergence study (:mod:`evcs_gym.convergence`) of the payoff-fidelity issue, run
on one set of profiles at the scenario's defaults and at each ``--candidate`` (settings
on top of the scenario's, e.g. ``mean07:ue_convergence_threshold=0.007``), so that the
candidates are compared on the same profiles and seeds in one run. Each candidate's
study table is printed, then one summary line per candidate: comparisons that agree by
the study's rule (``|difference| <= max(3 SE, 2 %)``), the misses, and what the default
condition costs (iterations min-median-max per kind of profile, and how many
evaluations ended unconverged).

Profiles: :func:`evcs_gym.convergence.study_profiles` around ``--equilibrium`` (the
base, ``--deviations`` single-period spikes, ``--training`` training-like and
``--random`` uniform-random profiles), plus ``--bench-training`` training-like profiles
drawn as ``bench_evaluator.py`` draws them (its sample's first ones, as
``bench_stall_stop.py`` uses them).

Run: ``python benchmarks/studies/bench_stop_rule.py
--candidate mean07:ue_convergence_threshold=0.007 [--scenario siouxfalls] [--seeds 6]
[--deviations 4] [--training 3] [--random 1] [--bench-training 5]
[--conditions default free_flow halved] [--workers 2] [--no-defaults] [--out F]``
(Sioux Falls with the defaults: about 20 minutes per candidate on 2 cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.cli import parse_settings
from evcs_gym.convergence import CONDITIONS, ConvergenceStudy, convergence_study, study_profiles

BENCHMARKS = Path(__file__).resolve().parents[1]
INPUTS = BENCHMARKS / "inputs"
KINDS = ("base", "deviation", "training", "random")


def parse_candidate(text: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})`` (values as JSON, else text).

    Example:
        >>> parse_candidate("mean08:ue_convergence_threshold=0.008,ue_stall_patience=0")
        ('mean08', {'ue_convergence_threshold': 0.008, 'ue_stall_patience': 0})
    """
    name, sep, body = text.partition(":")
    if not sep or not name or not body:
        raise ValueError(f"`--candidate` must look like name:key=value[,key=value], got {text!r}")
    try:
        return name, parse_settings(body.split(","))
    except SystemExit as e:  # the CLI's parser exits on a pair without '='
        raise ValueError(f"`--candidate` {text!r}: {e}") from None


def profiles_for(
    nd: evcs_gym.NetworkData, base, deviations: int, training: int, random: int, bench: int
) -> dict[str, dict[str, np.ndarray]]:
    """The study's profiles plus ``bench`` of ``bench_evaluator.py``'s training-like ones."""
    out = study_profiles(nd, base, deviations=deviations, training_like=training, random=random)
    extra = _bench_evaluator().price_sets(nd, bench)["training-like"][:bench] if bench else []
    out.update({f"bench_training_{i}": p for i, p in enumerate(extra)})
    return out


def _bench_evaluator():
    """``bench_evaluator.py``, imported by path (the benchmarks are scripts)."""
    path = BENCHMARKS / "bench_evaluator.py"
    spec = importlib.util.spec_from_file_location("bench_evaluator", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary(study: ConvergenceStudy) -> dict[str, Any]:
    """Agreements, misses and the default condition's iterations per kind of profile."""
    n_ok = n_all = 0
    misses: list[str] = []
    for c in study.conditions[1:]:
        for p in study.profiles:
            for a, row in study.comparison(c, p).items():
                n_all += 1
                n_ok += row["agrees"]
                if not row["agrees"]:
                    rel = row["difference"] / abs(row["default"]) if row["default"] else np.nan
                    misses.append(
                        f"{p} {c} {a} {row['difference']:+.0f} ± {row['difference_se']:.0f} "
                        f"({rel:+.1%})"
                    )
    iterations: dict[str, list[int]] = {}
    unconverged = 0
    for p in study.profiles:
        kind = next((k for k in KINDS if p.startswith(k) or f"_{k}" in p), p)
        avg = study.results["default"][p]
        iterations.setdefault(kind, []).extend(avg.ue_iterations)
        unconverged += sum(not r.converged for r in avg.results)
    return {
        "agree": n_ok,
        "comparisons": n_all,
        "misses": misses,
        "default_iterations": {
            k: (int(min(v)), float(np.median(v)), int(max(v))) for k, v in iterations.items()
        },
        "default_unconverged": unconverged,
        "evaluations": sum(len(study.results["default"][p].results) for p in study.profiles),
        "seconds": study.seconds,
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run the benchmark; returns ``{candidate: summary}`` (``"defaults"`` first unless
    ``--no-defaults``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="siouxfalls")
    ap.add_argument(
        "--equilibrium",
        default=str(INPUTS / "solve_siouxfalls.json"),
        help="JSON with the base profile under 'prices' ('' = the middle of the bounds)",
    )
    ap.add_argument(
        "--candidate",
        action="append",
        default=[],
        type=parse_candidate,
        help="name:key=value[,key=value]: settings on top of the scenario's (repeatable)",
    )
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--deviations", type=int, default=4)
    ap.add_argument("--training", type=int, default=3)
    ap.add_argument("--random", type=int, default=1)
    ap.add_argument("--bench-training", type=int, default=5)
    ap.add_argument(
        "--conditions", nargs="+", default=["default", "free_flow", "halved"], choices=CONDITIONS
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--no-defaults",
        action="store_true",
        help="study the candidates only (the defaults' study is deterministic: reuse a run's)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the summaries as JSON")
    args = ap.parse_args(argv)
    if args.no_defaults and not args.candidate:
        ap.error("--no-defaults needs at least one --candidate")

    nd = evcs_gym.load_scenario(args.scenario)
    base = json.loads(Path(args.equilibrium).read_text())["prices"] if args.equilibrium else None
    profiles = profiles_for(
        nd, base, args.deviations, args.training, args.random, args.bench_training
    )
    print(f"{nd.summary()}\nprofiles: {', '.join(profiles)}; seeds {args.seeds}", flush=True)
    out: dict[str, dict[str, Any]] = {}
    runs = [] if args.no_defaults else [("defaults", {})]
    for name, settings in [*runs, *args.candidate]:
        print(f"\n######## {name}: {settings or 'the scenario settings'}", flush=True)
        t0 = time.perf_counter()
        study = convergence_study(
            args.scenario,
            profiles,
            seeds=args.seeds,
            conditions=args.conditions,
            workers=args.workers,
            progress=True,
            **settings,
        )
        print(study.table())
        out[name] = {"settings": settings, **summary(study)}
        print(f"({time.perf_counter() - t0:.0f} s)", flush=True)

    print("\nsummary (a station agrees when |difference| <= max(3 SE, 2 %)):")
    for name, s in out.items():
        its = "  ".join(
            f"{k} {lo}-{med:g}-{hi}" for k, (lo, med, hi) in s["default_iterations"].items()
        )
        print(
            f"  {name:<10} {s['agree']}/{s['comparisons']} agree; default iterations: {its}; "
            f"unconverged {s['default_unconverged']}/{s['evaluations']}"
        )
        print("    misses: " + ("; ".join(s["misses"]) or "none"))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, default=float))
    return out


if __name__ == "__main__":
    main()
