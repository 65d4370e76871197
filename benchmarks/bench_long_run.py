"""Benchmark: does an evaluation answer what its UE loop settles to in the long run?

For each profile and seed it traces the UE loop of the default evaluation for
``--iterations`` iterations (100) without any stop — the stop rule, the stationary stop
and the cap switched off; the switching never reads them, so this is the very loop an
evaluation runs, carried on — and compares, per station:

* the **evaluation's answer**: what the default settings would have returned, replayed
  on the trace (:meth:`UETrace.payoff <evcs_gym.ue.evaluator.UETrace.payoff>`, bit for bit
  what :meth:`~evcs_gym.EVCSRewardEvaluator.evaluate` returns; tested on ``tiny``);
* the **long-run level**: the mean revenue over iterations ``--level-from`` (41) to the
  end.

Over the seeds, each station's mean paired difference must lie within the agreement
band max(3 SE, 3 %) of its level (:func:`evcs_gym.studies.convergence.agreement_tolerance`).
The profiles are the convergence study's (:func:`evcs_gym.studies.convergence.study_profiles`
around the solver's equilibrium in ``benchmarks/inputs/solve_<scenario>.json``, else
mid-bounds: the base, two single-period spikes, two training-like and ``--random``
uniform-random profiles).

Run: ``python benchmarks/bench_long_run.py [--scenario siouxfalls] [--seeds 4]
[--random 5] [--workers 2] [--out FILE.json] [--cache DIR] [--set KEY=VALUE]`` (``--set``
overrides a scenario setting, as on the command line; Sioux Falls at 4 seeds:
40 traces of 100 iterations, 10 minutes on 2 cores). ``--cache`` keeps the traces, keyed
by version, settings, prices and seed, so that a second run only replays them.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pickle
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import evcs_gym
from evcs_gym.cli import parse_settings
from evcs_gym.studies.convergence import agreement_tolerance, study_profiles
from evcs_gym.ue.evaluator import UETrace

INPUTS = Path(__file__).resolve().parent / "inputs"

_NETWORKS: dict[str, evcs_gym.NetworkData] = {}


def long_run_network(nd: evcs_gym.NetworkData, iterations: int) -> evcs_gym.NetworkData:
    """``nd`` with every stop switched off: the loop runs exactly ``iterations``."""
    never = dataclasses.replace(
        nd.settings,
        ue_max_iterations=iterations,
        ue_payoff_precision=0.0,
        ue_convergence_stable_rounds=iterations + 1,
    )
    return dataclasses.replace(nd, settings=never)


def _network(scenario: str, overrides: dict) -> evcs_gym.NetworkData:
    """The scenario with ``overrides`` (``--set``), loaded once per process."""
    key = json.dumps([scenario, overrides], sort_keys=True)
    if key not in _NETWORKS:
        _NETWORKS[key] = evcs_gym.load_scenario(scenario, **overrides)
    return _NETWORKS[key]


def _trace(job: tuple[str, dict, int, dict, int, str | None]) -> UETrace:
    """One long trace; with a cache folder, read from / written to a file keyed by the
    settings, the package version, the prices, the seed and the length."""
    scenario, overrides, iterations, prices, seed, cache = job
    nd = long_run_network(_network(scenario, overrides), iterations)
    path = None
    if cache is not None:
        key = json.dumps(
            [evcs_gym.__version__, nd.settings_hash, seed, {a: list(v) for a, v in prices.items()}],
            sort_keys=True,
            default=float,
        )
        path = Path(cache) / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.pkl"
        if path.exists():
            return pickle.loads(path.read_bytes())
    trace = evcs_gym.EVCSRewardEvaluator(nd).trace(prices, seed=seed)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(trace))
        tmp.replace(path)
    return trace


def profiles(nd: evcs_gym.NetworkData, random: int) -> dict[str, dict[str, np.ndarray]]:
    """The convergence study's profiles around the solver's equilibrium (else mid-bounds)."""
    path = INPUTS / f"solve_{nd.name}.json"
    base = json.loads(path.read_text())["prices"] if path.exists() else None
    return study_profiles(nd, base, deviations=2, training_like=2, random=random)


def compare(
    traces: Sequence[UETrace], settings: evcs_gym.ScenarioSettings, level_from: int
) -> dict:
    """The evaluations' answers against the long-run level, per station, over the seeds."""
    answers, levels, iterations, reasons = [], [], [], []
    for tr in traces:
        n, reason, payoff = tr.payoff(settings)
        energy = settings.charging_demand_per_vehicle
        answers.append((tr.prices * payoff.flows * energy).sum(axis=-1))
        levels.append(tr.revenues[level_from - 1 :].mean(axis=0))
        iterations.append(n)
        reasons.append(reason)
    answers, levels = np.array(answers), np.array(levels)
    diff = answers - levels
    k = len(traces)
    se = diff.std(axis=0, ddof=1) / np.sqrt(k) if k > 1 else np.full(diff.shape[1], np.nan)
    level = levels.mean(axis=0)
    band = agreement_tolerance(np.nan_to_num(se), level)
    return {
        "iterations": iterations,
        "stop_reasons": reasons,
        "level": level.tolist(),
        "answer": answers.mean(axis=0).tolist(),
        "difference": diff.mean(axis=0).tolist(),
        "difference_se": se.tolist(),
        "band": band.tolist(),
        "agrees": (np.abs(diff.mean(axis=0)) <= band).tolist(),
    }


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0..N-1 per profile")
    parser.add_argument("--random", type=int, default=5, help="uniform-random profiles")
    parser.add_argument("--iterations", type=int, default=100, help="length of each trace")
    parser.add_argument("--level-from", type=int, default=41, help="first iteration of the level")
    parser.add_argument("--workers", type=int, default=2, help="processes tracing in parallel")
    parser.add_argument("--out", help="write the comparison as JSON")
    parser.add_argument("--cache", help="folder to keep the traces in (reused when run again)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario setting (repeatable), as on the command line",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.level_from <= args.iterations:
        parser.error(f"--level-from must be in 1..--iterations, got {args.level_from}")

    t0 = time.perf_counter()
    overrides = parse_settings(args.set)
    nd = _network(args.scenario, overrides)
    named = profiles(nd, args.random)
    jobs = [
        (args.scenario, overrides, args.iterations, prices, seed, args.cache)
        for prices in named.values()
        for seed in range(args.seeds)
    ]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            traces = list(pool.map(_trace, jobs))
    else:
        traces = [_trace(job) for job in jobs]
    s = nd.settings
    print(f"{nd.summary()}\nevcs-gym {evcs_gym.__version__}, settings {nd.settings_hash}")
    print(
        f"{len(named)} profiles x {args.seeds} seeds, traced {args.iterations} iterations "
        f"without a stop; level: iterations {args.level_from}-{args.iterations}; answer: "
        f"the default evaluation (stop rule, stationary stop at {s.ue_payoff_precision:.0%}, "
        f"cap {s.ue_max_iterations}) replayed on the trace; band max(3 SE, 3 %)\n"
    )
    width = max(len(p) for p in named) + 2
    head = f"{'profile':<{width}}{'iterations':>16}  {'stops':<12}" + "".join(
        f"{a:>24}" for a in nd.agent_names
    )
    print(head)
    print("-" * len(head))
    rows, all_agree = {}, True
    for i, (name, prices) in enumerate(named.items()):
        row = compare(traces[i * args.seeds : (i + 1) * args.seeds], s, args.level_from)
        row["prices"] = {a: np.asarray(v).tolist() for a, v in prices.items()}
        rows[name] = row
        it = row["iterations"]
        stops = "".join(r[0] for r in row["stop_reasons"])  # c(onverged) s(tationary) m(ax)
        cells = "".join(
            f"{100 * d / lv:>+9.1f}% ±{100 * se / lv:>4.1f} {'ok' if ok else 'NO':>3}  "
            for d, se, lv, ok in zip(
                row["difference"], row["difference_se"], row["level"], row["agrees"]
            )
        )
        print(f"{name:<{width}}{f'{min(it)}-{np.median(it):g}-{max(it)}':>16}  {stops:<12}{cells}")
        all_agree &= all(row["agrees"])
    seconds = time.perf_counter() - t0
    print(
        "\n(iterations: min-median-max of the evaluations over seeds; stops: c = converged, "
        "s = stationary, m = cap; per station: answer minus level, % of the level, ± SE "
        "over seeds)"
    )
    print(f"all agree: {all_agree} ({seconds:.0f} s)")
    out = {
        "scenario": nd.name,
        "version": evcs_gym.__version__,
        "settings_hash": nd.settings_hash,
        "seeds": list(range(args.seeds)),
        "iterations": args.iterations,
        "level_from": args.level_from,
        "agents": list(nd.agent_names),
        "all_agree": all_agree,
        "seconds": seconds,
        "profiles": rows,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
