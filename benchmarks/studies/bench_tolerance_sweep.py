"""Benchmark: does a tighter stop rule close the free-flow start's lean, and at what cost?

The convergence study finds a free-flow start leaning by 2–4 % for some Sioux Falls
stations at the default tolerances (docs/research/convergence.md, "Which population's
start leans"). This benchmark asks whether that lean is the width of the set of
assignments the stop rule accepts — which tighter tolerances would narrow — and what
tightening costs:

1. **Traces.** For every profile, tolerance scale (``ue_tolerance_scale``: the
   tolerances steer the switching, so each scale is its own loop, with its own warm
   start as the convergence study's ``halved`` condition has) and start (the scenario's
   warm start, or free flow) it records the UE loop at ``--seeds`` seeds to ``--cap``
   iterations, never stopping at convergence or for a stall
   (``EVCSRewardEvaluator.trace``).
2. **Replay.** The switching reads neither the stall stop, the cap nor the number of
   stable rounds, so each trace tells exactly where a stop rule would have ended that
   loop and with which revenues (``UETrace.stop``). Two rules per scale: the scenario's
   own (its stall stop and cap, what an evaluation at that scale returns) and the rule
   alone (no stall stop, cap ``--cap``: how long meeting it takes).
3. **Compare.** Per station: the free-flow start's mean revenue against the warm
   start's, seed by seed (agreeing when ``|difference| ≤ max(3 SE, 2 %)``, as in the
   convergence study), and both against the loops' long-run level (the mean of the
   last half of every trace at the default scale, both starts pooled).

Profiles: named profiles of the wide convergence study at the solver equilibrium
(:func:`evcs_gym.convergence.study_profiles` with four spikes and three training-like
profiles around ``benchmarks/inputs/solve_siouxfalls.json``).

Run: ``python benchmarks/studies/bench_tolerance_sweep.py [--profiles base training_2]
[--scales 1 0.5 0.25] [--seeds 6] [--cap 300] [--workers 2] [--cache DIR] [--out F]``
(about 25 minutes on 2 cores with the defaults; ``--cache`` keeps the traces).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pickle
import time
from concurrent.futures import ProcessPoolExecutor
from itertools import product
from pathlib import Path

import numpy as np

import evcs_gym
from evcs_gym.convergence import agreement_tolerance, study_profiles
from evcs_gym.evaluator import UETrace

BENCHMARKS = Path(__file__).resolve().parents[1]
INPUTS = BENCHMARKS / "inputs"
STARTS = ("warm", "free_flow")
NEVER = 10**9
"""``ue_convergence_stable_rounds`` of traces that must not stop at convergence."""

_networks: dict[tuple, evcs_gym.NetworkData] = {}


def network(scenario: str, start: str, scale: float, cap: int) -> evcs_gym.NetworkData:
    """The scenario at ``scale`` (warm start solved at that scale, as the convergence
    study's ``halved`` does), evaluations capped at ``cap`` without any early stop."""
    key = (scenario, start, scale, cap)
    if key not in _networks:
        nd = evcs_gym.load_scenario(scenario, warm_start=start == "warm", ue_tolerance_scale=scale)
        long = dataclasses.replace(
            nd.settings,
            ue_max_iterations=cap,
            ue_stall_patience=0,
            ue_convergence_stable_rounds=NEVER,
        )
        _networks[key] = dataclasses.replace(nd, settings=long)
    return _networks[key]


def _trace(task: tuple) -> tuple[tuple, UETrace]:
    scenario, cap, profile, prices, scale, start, seed = task
    nd = network(scenario, start, scale, cap)
    return (profile, scale, start, seed), evcs_gym.EVCSRewardEvaluator(nd).trace(prices, seed)


def fingerprint(scenario: str, cap: int, prices) -> str:
    """What a cached trace was recorded under: the scenario's settings (as loaded now),
    the cap and the profile's prices. A trace is reused only under the same fingerprint,
    so a changed default or profile is traced afresh.

    Example:
        >>> fingerprint("tiny", 30, {"A": [1.0]}) == fingerprint("tiny", 30, {"A": [1.0]})
        True
        >>> fingerprint("tiny", 30, {"A": [1.0]}) == fingerprint("tiny", 40, {"A": [1.0]})
        False
    """
    settings = evcs_gym.load_scenario(scenario, warm_start=False).settings
    digest = hashlib.sha256(repr((settings, cap)).encode())
    for agent in sorted(prices):
        digest.update(agent.encode() + np.asarray(prices[agent], dtype=float).tobytes())
    return digest.hexdigest()[:16]


def record(scenario, profiles, scales, seeds, cap, workers, cache: Path | None) -> dict:
    """``{(profile, scale, start, seed): UETrace}``, reusing ``cache`` where it has them
    under the same :func:`fingerprint`."""
    file = None if cache is None else cache / f"traces_{scenario}.pkl"
    cached = pickle.loads(file.read_bytes()) if file is not None and file.exists() else {}
    prints = {p: fingerprint(scenario, cap, profiles[p]) for p in profiles}
    traces = {
        key: cached[(*key, prints[key[0]])]
        for key in product(profiles, scales, STARTS, seeds)
        if (*key, prints[key[0]]) in cached
    }
    tasks = [
        (scenario, cap, p, profiles[p], scale, start, seed)
        for p, scale, start, seed in product(profiles, scales, STARTS, seeds)
        if (p, scale, start, seed) not in traces
    ]
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(workers) if workers > 1 and tasks else None
    try:
        runs = pool.map(_trace, tasks) if pool is not None else map(_trace, tasks)
        for i, (key, tr) in enumerate(runs, 1):
            traces[key] = cached[(*key, prints[key[0]])] = tr
            print(f"  [{i}/{len(tasks)} {time.perf_counter() - t0:5.0f} s] {key}", flush=True)
            if file is not None:
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(pickle.dumps(cached))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    print(f"{len(tasks)} traces recorded, {len(traces) - len(tasks)} from the cache", flush=True)
    return traces


def stop(trace: UETrace, settings) -> tuple[int | None, str]:
    """Where ``settings``' stop rule ends ``trace``: ``(None, "beyond")`` past its end."""
    try:
        return trace.stop(settings)
    except ValueError:
        return None, "beyond"


def compare(warm: np.ndarray, free: np.ndarray, level: np.ndarray) -> dict:
    """Per-station figures of one (profile, scale, rule), revenues (seeds, stations)."""
    diff = free - warm
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(diff))
    ref = np.abs(warm.mean(axis=0))
    return {
        "warm": warm.mean(axis=0).tolist(),
        "free_flow_minus_warm": diff.mean(axis=0).tolist(),
        "difference_se": se.tolist(),
        "agrees": (np.abs(diff.mean(axis=0)) <= agreement_tolerance(se, ref)).tolist(),
        "warm_minus_level": (warm.mean(axis=0) - level).tolist(),
        "free_flow_minus_level": (free.mean(axis=0) - level).tolist(),
    }


def spread(stops: list[tuple[int | None, str]]) -> str:
    """``min-median-max`` iterations, how many met the rule (``c``) and how many went
    beyond the trace (the scenario's cap lies past ``--cap``)."""
    done = sorted(n for n, _ in stops if n is not None)
    text = f"{done[0]}-{np.median(done):g}-{done[-1]}" if done else "-"
    text += f" {sum(r == 'converged' for _, r in stops)}c"
    beyond = len(stops) - len(done)
    return text + (f" +{beyond} beyond" if beyond else "")


CHECKPOINTS = (3, 5, 10, 20, 30, 40, 50, 75, 100, 150, 200, 300)
"""Iterations at which :func:`transient` reads every loop."""


def transient(traces, profile, scale, seeds, cap, level, agents) -> dict:
    """Each start's revenues had its loop been stopped at fixed iterations, against the
    long-run level: how long the free-flow start takes to forget where it began."""
    out = {}
    print(f"  transient at scale {scale:g}: revenue at iteration k minus the level, % (± SE)")
    print(f"  {'k':>5} {'start':<10}" + "".join(f"{a:>16}" for a in agents))
    for k in [k for k in CHECKPOINTS if k <= cap]:
        for start in STARTS:
            rev = np.array(
                [traces[(profile, scale, start, seed)].revenues[k - 1] for seed in seeds]
            )
            diff = 100 * (rev - level) / level
            mean, se = diff.mean(axis=0), diff.std(axis=0, ddof=1) / np.sqrt(len(seeds))
            out[f"{start}@{k}"] = {"mean_pct": mean.tolist(), "se_pct": se.tolist()}
            print(
                f"  {k:>5} {start:<10}" + "".join(f"{m:+9.1f} ±{e:4.1f}" for m, e in zip(mean, se))
            )
    return out


def analyse(scenario, traces, profiles, scales, seeds, cap) -> dict:
    nd = evcs_gym.load_scenario(scenario, warm_start=False)
    base, agents = nd.settings, nd.agent_names
    out: dict = {}
    for p in profiles:
        tail = cap // 2
        level = np.mean(
            [
                traces[(p, scales[0], s, seed)].revenues[tail:].mean(axis=0)
                for s in STARTS
                for seed in seeds
            ],
            axis=0,
        )
        print(
            f"\n[{p}] long-run level (iterations {tail + 1}-{cap}, scale {scales[0]:g}, "
            "both starts): " + ", ".join(f"{a} {v:,.0f}" for a, v in zip(agents, level))
        )
        head = f"  {'scale':>5} {'rule':<14} {'iterations warm':<22} {'free flow':<22}"
        print(head + "".join(f"{a:>24}" for a in agents))
        out[p] = {"level": level.tolist(), "rows": []}
        for scale in scales:
            rules = {
                "scenario's": dataclasses.replace(base, ue_tolerance_scale=scale),
                "rule alone": dataclasses.replace(
                    base,
                    ue_tolerance_scale=scale,
                    ue_stall_patience=0,
                    ue_max_iterations=cap,
                ),
            }
            for rule_name, settings in rules.items():
                stops = {
                    s: [stop(traces[(p, scale, s, seed)], settings) for seed in seeds]
                    for s in STARTS
                }
                ok = [
                    i for i in range(len(seeds)) if all(stops[s][i][0] is not None for s in STARTS)
                ]
                rev = {
                    s: np.array(
                        [traces[(p, scale, s, seeds[i])].revenues[stops[s][i][0] - 1] for i in ok]
                    )
                    for s in STARTS
                }
                row = {
                    "scale": scale,
                    "rule": rule_name,
                    "iterations": {s: [n for n, _ in stops[s]] for s in STARTS},
                    "reasons": {s: [r for _, r in stops[s]] for s in STARTS},
                }
                line = (
                    f"  {scale:>5g} {rule_name:<14} "
                    f"{spread(stops['warm']):<22} "
                    f"{spread(stops['free_flow']):<22}"
                )
                if len(ok) >= 2:
                    row.update(compare(rev["warm"], rev["free_flow"], level))
                    for j in range(len(agents)):
                        pct = 100 * row["free_flow_minus_warm"][j] / row["warm"][j]
                        se = 100 * row["difference_se"][j] / row["warm"][j]
                        mark = "ok" if row["agrees"][j] else "NO"
                        line += f"{pct:+13.1f} ±{se:4.1f} % {mark}"
                print(line)
                out[p]["rows"].append(row)
        out[p]["transient"] = transient(traces, p, scales[0], seeds, cap, level, agents)
    print(
        "\n(iterations: min-median-max over seeds, Nc: N loops met the rule, 'beyond': "
        "the scenario's rule had not stopped the loop by --cap; per station: free flow "
        "minus warm start, mean ± SE in % of the warm start's revenue, ok when within "
        "max(3 SE, 2 %))"
    )
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument("--prices", default=str(INPUTS / "solve_siouxfalls.json"))
    parser.add_argument("--profiles", nargs="+", default=["base", "training_2"])
    parser.add_argument("--scales", nargs="+", type=float, default=[1.0, 0.5, 0.25])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--cap", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    nd = evcs_gym.load_scenario(args.scenario, warm_start=False)
    raw = json.loads(Path(args.prices).read_text()) if args.prices else {}
    every = study_profiles(
        nd, raw.get("prices", raw) or None, deviations=4, training_like=3, random=0
    )
    unknown = sorted(set(args.profiles) - set(every))
    if unknown:
        raise ValueError(f"profiles={unknown} not among {sorted(every)}")
    profiles = {p: every[p] for p in args.profiles}
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    traces = record(args.scenario, profiles, args.scales, seeds, args.cap, args.workers, args.cache)
    out = analyse(args.scenario, traces, profiles, args.scales, seeds, args.cap)
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.out:
        args.out.write_text(
            json.dumps(
                {"scenario": args.scenario, "cap": args.cap, "seeds": seeds, "profiles": out},
                indent=2,
            )
        )
    return out


if __name__ == "__main__":
    main()
