"""Benchmark: how long must the stall stop wait before the revenues have settled?

A stalled UE loop (``ue_stall_patience``; docs/research/stall-stop.md) ends with the
revenues of its last iteration. Stop too early and they depend on where the loop
started. This benchmark measures that on Sioux Falls, at the scenario's defaults:

1. **Traces.** For every profile and seed it records the UE loop of the convergence
   study's three conditions (the default, the free-flow start, all tolerances halved)
   to ``--cap`` iterations with the stall stop off (``EVCSRewardEvaluator.trace``).
2. **Replay.** The switching never reads the stall stop or the cap, so each trace
   tells exactly where a stall rule would have stopped that loop and with which
   revenues (``UETrace.stop``). For each ``--patience`` it replays the scenario's stop
   rule with that patience and its own cap, and compares each station's revenue with
   the default's, seed by seed, as the convergence study does (a station *agrees* when
   ``|mean difference| ≤ max(3 SE, 2 % of its default revenue)``): the free-flow start,
   halved tolerances, and the long run (the default's trace at its end, ``--cap``
   iterations without a stall stop). It also counts loops that converge without the
   stall stop and that the rule would cut.
3. **Orbit averages.** Where a loop runs to the cap (it never converges, or every loop
   with ``--stable-rounds``) its revenues move from iteration to iteration around a
   stationary level. The mean over the last ``--tail`` iterations of each trace is
   compared across the conditions the same way; each condition's evaluations are set
   against their own loop's level (which start stops off it); and for the evaluations
   the scenario's stall stop ends, the revenues reported (and their mean over the last
   few iterations) are set against that level.

Profiles: those of the convergence study at the solver equilibrium
(``benchmarks/inputs/solve_siouxfalls.json``: the base profile, station 10's period 4
at the bound, a training-like and a uniform-random one), ``--random`` more
uniform-random profiles and ``--training`` more training-like ones, drawn as
``bench_evaluator.py`` draws them (its ``price_sets(nd, n)`` with ``n`` = ``--random``,
resp. ``--training``: its default sample's first training-like profiles, but other
uniform-random ones unless ``n`` is its default 6).

Run: ``python benchmarks/studies/bench_stall_stop.py [--seeds 6] [--random 5] [--training 3]
[--cap 200] [--patience 10 15 20 25 30] [--workers 2] [--cache DIR]
[--stable-rounds N]`` (about 35 minutes on 2 cores with the defaults; ``--cache`` keeps
the traces, so a second run only replays). ``--stable-rounds N`` replays the stop rule
with ``ue_convergence_stable_rounds = N`` instead of the scenario's: the traces then run
on through convergence to ``--cap`` (the switching does not read that setting either).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import pickle
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import evcs_gym
from evcs_gym.convergence import agreement_tolerance, study_profiles
from evcs_gym.evaluator import UETrace

BENCHMARKS = Path(__file__).resolve().parents[1]
INPUTS = BENCHMARKS / "inputs"
CONDITIONS = {
    "default": {},
    "free_flow": {"warm_start": False},
    "halved": {"ue_tolerance_scale": 0.5},
}

NEVER = 10**9
"""``ue_convergence_stable_rounds`` of traces that must not stop at convergence."""

_evaluators: dict[tuple[str, str, int, bool], evcs_gym.EVCSRewardEvaluator] = {}


def bench_evaluator_profiles(nd: evcs_gym.NetworkData, kind: str, n: int) -> list[dict]:
    """The first ``n`` profiles of ``kind`` in ``bench_evaluator.py``'s sample."""
    path = BENCHMARKS / "bench_evaluator.py"
    spec = importlib.util.spec_from_file_location("bench_evaluator", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.price_sets(nd, max(n, 1))[kind][:n]


def _evaluator(
    scenario: str, condition: str, cap: int, through: bool = False
) -> evcs_gym.EVCSRewardEvaluator:
    """The condition's scenario with a cap of ``cap`` and no stall stop (one per process).

    ``through``: loops do not stop at convergence either (every trace runs to ``cap``),
    so that other ``ue_convergence_stable_rounds`` can be replayed. Evaluation-only: the
    warm start is the scenario's own.
    """
    key = (scenario, condition, cap, through)
    if key not in _evaluators:
        nd = evcs_gym.load_scenario(scenario, **CONDITIONS[condition])
        long = dataclasses.replace(nd.settings, ue_max_iterations=cap, ue_stall_patience=0)
        if through:
            long = dataclasses.replace(long, ue_convergence_stable_rounds=NEVER)
        _evaluators[key] = evcs_gym.EVCSRewardEvaluator(dataclasses.replace(nd, settings=long))
    return _evaluators[key]


def _trace(task: tuple) -> tuple[tuple[str, str, int], UETrace, float]:
    scenario, condition, cap, through, profile, prices, seed = task
    t0 = time.perf_counter()
    tr = _evaluator(scenario, condition, cap, through).trace(prices, seed=seed)
    return (profile, condition, seed), tr, time.perf_counter() - t0


def trace_fingerprint(settings, condition: str, cap: int, through: bool, prices) -> str:
    """What a cached trace was recorded under: the scenario's settings, the condition,
    the cap, ``through`` and the profile's prices. A cached trace is reused only under
    the same fingerprint, so a changed stop rule or profile is traced afresh.

    Example:
        >>> s = evcs_gym.load_scenario("tiny", warm_start=False).settings
        >>> p = {"A": [1.0, 1.0]}
        >>> trace_fingerprint(s, "default", 60, False, p) == trace_fingerprint(
        ...     s, "default", 60, False, {"A": [1.0, 1.0]})
        True
        >>> trace_fingerprint(s, "default", 60, False, p) == trace_fingerprint(
        ...     dataclasses.replace(s, ue_convergence_threshold=0.001), "default", 60, False, p)
        False
    """
    digest = hashlib.sha256(repr((settings, CONDITIONS[condition], cap, through)).encode())
    for agent in sorted(prices):
        digest.update(agent.encode() + np.asarray(prices[agent], dtype=float).tobytes())
    return digest.hexdigest()[:16]


def record(
    scenario, profiles, seeds, cap, workers, cache: Path | None, through=False, settings=None
) -> dict:
    """``{(profile, condition, seed): UETrace}``, from ``cache`` where it has them.

    ``settings``: the scenario's (default: loaded); the cache keeps each trace under its
    :func:`trace_fingerprint` and hands back only those recorded under the same one.
    """
    if settings is None:
        settings = evcs_gym.load_scenario(scenario, warm_start=False).settings
    fingerprint = {
        (p, c): trace_fingerprint(settings, c, cap, through, profiles[p])
        for p in profiles
        for c in CONDITIONS
    }
    cached: dict = {}
    file = "traces_through.pkl" if through else "traces.pkl"
    if cache is not None and (cache / file).exists():
        cached = pickle.loads((cache / file).read_bytes())
    traces = {
        key[:3]: tr  # (profile, condition, seed); caches of older runs have no fingerprint
        for key, tr in cached.items()
        if len(key) == 4 and fingerprint.get(key[:2]) == key[3]
    }
    tasks = [
        (scenario, c, cap, through, p, profiles[p], s)
        for p in profiles
        for c in CONDITIONS
        for s in seeds
        if (p, c, s) not in traces
    ]
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    runs = pool.map(_trace, tasks) if pool is not None else map(_trace, tasks)
    try:
        for i, (key, tr, secs) in enumerate(runs, 1):
            traces[key] = tr
            cached[(*key, fingerprint[key[:2]])] = tr
            print(
                f"  [{i}/{len(tasks)} {time.perf_counter() - t0:6.0f} s] {key[0]} {key[1]} "
                f"seed {key[2]}: {tr.iterations} iterations ({tr.stop_reason}), {secs:.0f} s",
                flush=True,
            )
            if cache is not None and (i % 10 == 0 or i == len(tasks)):
                cache.mkdir(parents=True, exist_ok=True)
                (cache / file).write_bytes(pickle.dumps(cached))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return traces


def agreement(base: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per station: agrees (max(3 SE, 2 %) on paired differences), difference / revenue."""
    diff = other - base
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(diff))
    ref = np.abs(base.mean(axis=0))
    rel = diff.mean(axis=0) / np.where(ref > 0, ref, 1.0)
    return np.abs(diff.mean(axis=0)) <= agreement_tolerance(se, ref), rel


def replay(traces, profiles, seeds, settings, patience: int) -> dict:
    """Stops, revenues and agreement under the scenario's stop rule with ``patience``."""
    out = {}
    for p in profiles:
        stops, revenues = {}, {}
        for c in CONDITIONS:
            rule = dataclasses.replace(settings[c], ue_stall_patience=patience)
            runs = [traces[(p, c, s)] for s in seeds]
            stops[c] = [tr.stop(rule) for tr in runs]
            revenues[c] = np.array([tr.revenues[n - 1] for tr, (n, _) in zip(runs, stops[c])])
        no_stall = dataclasses.replace(settings["default"], ue_stall_patience=0)
        long = np.array([_long_run(traces[(p, "default", s)], no_stall) for s in seeds])
        cut = sum(
            why == "stalled" and traces[(p, "default", s)].stop(no_stall)[1] == "converged"
            for s, (_, why) in zip(seeds, stops["default"])
        )
        comparisons = {
            "free_flow": agreement(revenues["default"], revenues["free_flow"]),
            "halved": agreement(revenues["default"], revenues["halved"]),
            "long": agreement(revenues["default"], long),
        }
        out[p] = {"stops": stops, "comparisons": comparisons, "cut": cut}
    return out


def _long_run(tr: UETrace, no_stall) -> np.ndarray:
    """Revenues of the loop run to the trace's cap without the stall stop (doubled cap)."""
    n, _ = tr.stop(dataclasses.replace(no_stall, ue_max_iterations=tr.iterations))
    return tr.revenues[n - 1]


def orbit_averages(traces, profiles, seeds, tail: int) -> dict:
    """Agreement of the mean revenue over each trace's last ``tail`` iterations.

    Only profiles whose traces all ran to the cap have an orbit: those that never
    converge, or all of them when the traces run through convergence (``--stable-rounds``).
    """
    out = {}
    for p in profiles:
        runs = {c: [traces[(p, c, s)] for s in seeds] for c in CONDITIONS}
        if not _has_orbit(runs):
            continue
        mean = {c: np.array([tr.revenues[-tail:].mean(axis=0) for tr in runs[c]]) for c in runs}
        out[p] = {c: agreement(mean["default"], mean[c]) for c in ("free_flow", "halved")}
    return out


def _has_orbit(runs: dict[str, list[UETrace]]) -> bool:
    """Whether every trace ran to the cap (none stopped at convergence)."""
    return not any(tr.stop_reason == "converged" for trs in runs.values() for tr in trs)


def evaluations_against_orbit(traces, profiles, seeds, tail: int, settings, patience) -> dict:
    """Each condition's evaluation against its own loop's long-run level.

    For every profile with an orbit (:func:`orbit_averages`) and every condition: the
    revenues the scenario's stop rule with ``patience`` reports (:func:`replay`) against
    the mean over the same trace's last ``tail`` iterations, seed by seed, by the
    study's rule. Where the orbits agree across the conditions, this says which
    condition's evaluations stop off the common level, and by how much.
    """
    out = {}
    for p in profiles:
        runs = {c: [traces[(p, c, s)] for s in seeds] for c in CONDITIONS}
        if not _has_orbit(runs):
            continue
        out[p] = {}
        for c, trs in runs.items():
            rule = dataclasses.replace(settings[c], ue_stall_patience=patience)
            evaluated = np.array([tr.revenues[tr.stop(rule)[0] - 1] for tr in trs])
            level = np.array([tr.revenues[-tail:].mean(axis=0) for tr in trs])
            out[p][c] = agreement(level, evaluated)
    return out


def stalled_revenue_error(traces, settings, patience: int, windows=(1, 5, 10, 20)) -> dict:
    """How far a stalled evaluation's revenues are from its loop's long-run level.

    For every trace that ``patience`` stops without convergence, and that never
    converges in the trace: the mean of the revenues over the last ``k`` iterations up
    to that stop (``k = 1``: what the evaluation reports) against the mean over the
    trace's second half, per station, as a share of the latter. Returns per condition
    ``{k: (rms, mean)}`` of those relative errors and the number of evaluations.
    """
    out: dict = {}
    for c in CONDITIONS:
        rule = dataclasses.replace(settings[c], ue_stall_patience=patience)
        errors: dict[int, list[np.ndarray]] = {k: [] for k in windows}
        for (_, cond, _), tr in traces.items():
            if cond != c or tr.stop_reason == "converged":
                continue
            n, why = tr.stop(rule)
            if why == "converged":
                continue
            level = tr.revenues[tr.iterations // 2 :].mean(axis=0)
            for k in windows:
                errors[k].append(tr.revenues[max(0, n - k) : n].mean(axis=0) / level - 1)
        if errors[windows[0]]:
            out[c] = {
                "evaluations": len(errors[windows[0]]),
                **{
                    k: (float(np.sqrt(np.mean(np.square(e)))), float(np.mean(e)))
                    for k, e in errors.items()
                },
            }
    return out


def _fmt(comp: tuple[np.ndarray, np.ndarray]) -> str:
    ok, rel = comp
    return " ".join(f"{r:+6.1%}{' ' if o else '!'}" for o, r in zip(ok, rel))


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; returns ``{patience: replay}`` and ``"orbit"``: the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="siouxfalls")
    ap.add_argument(
        "--equilibrium",
        default=str(INPUTS / "solve_siouxfalls.json"),
        help="JSON with the base profile under 'prices' ('' = the middle of the bounds)",
    )
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--random", type=int, default=5, help="extra uniform-random profiles")
    ap.add_argument("--training", type=int, default=3, help="extra training-like profiles")
    ap.add_argument("--cap", type=int, default=200)
    ap.add_argument("--tail", type=int, default=50, help="iterations of the orbit averages")
    ap.add_argument("--patience", type=int, nargs="+", default=[10, 15, 20, 25, 30])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the traces in")
    ap.add_argument(
        "--stable-rounds",
        type=int,
        default=None,
        help="replay with this ue_convergence_stable_rounds (traces then run through "
        "convergence to --cap)",
    )
    args = ap.parse_args(argv)

    nd = evcs_gym.load_scenario(args.scenario)
    base = json.loads(Path(args.equilibrium).read_text())["prices"] if args.equilibrium else None
    profiles = dict(study_profiles(nd, base, deviations=1, training_like=1, random=1))
    for kind, tag, n in (
        ("uniform-random", "random", args.random),
        ("training-like", "training", args.training),
    ):
        extra = bench_evaluator_profiles(nd, kind, n)
        profiles.update({f"bench_{tag}_{i}": p for i, p in enumerate(extra)})
    seeds = list(range(args.seeds))
    s = nd.settings
    print(
        f"{args.scenario}: {len(profiles)} profiles x {len(CONDITIONS)} conditions x "
        f"{len(seeds)} seeds, traced to {args.cap} iterations without the stall stop; "
        f"replayed with the cap {s.ue_max_iterations}, stall min excess "
        f"{s.ue_stall_min_excess:g}, min improvement {s.ue_stall_min_improvement:g}, "
        f"stable rounds {args.stable_rounds or s.ue_convergence_stable_rounds}"
        + (" (traces run through convergence)" if args.stable_rounds is not None else ""),
        flush=True,
    )
    t0 = time.perf_counter()
    through = args.stable_rounds is not None
    traces = record(
        args.scenario,
        profiles,
        seeds,
        args.cap,
        args.workers,
        args.cache,
        through=through,
        settings=nd.settings,
    )
    print(f"traces: {time.perf_counter() - t0:.0f} s", flush=True)
    settings = {c: _evaluator(args.scenario, c, args.cap).network.settings for c in CONDITIONS}
    settings = {
        c: dataclasses.replace(v, ue_max_iterations=s.ue_max_iterations)
        for c, v in settings.items()
    }
    if through:
        settings = {
            c: dataclasses.replace(v, ue_convergence_stable_rounds=args.stable_rounds)
            for c, v in settings.items()
        }

    agents = nd.agent_names
    summary = []
    figures: dict = {}
    for patience in args.patience:
        print(f"\n== ue_stall_patience={patience} ==")
        figures[patience] = replay(traces, profiles, seeds, settings, patience)
        lines, line = report(figures[patience], agents)
        print("\n".join(lines), flush=True)
        summary.append(f"  patience {patience}: {line}")

    print(
        f"\n== orbit averages: mean revenue over the last {args.tail} of {args.cap} iterations =="
    )
    orbit = orbit_averages(traces, profiles, seeds, args.tail)
    _print_comparisons(orbit, "  (every profile has a loop that converged)")
    patience = nd.settings.ue_stall_patience or 20
    print(
        f"\n== evaluations (patience {patience}) against their own loop's long-run level "
        f"(mean of its last {args.tail} iterations) =="
    )
    against = evaluations_against_orbit(traces, profiles, seeds, args.tail, settings, patience)
    _print_comparisons(against, "  (every profile has a loop that converged)")
    print(
        f"\n== stalled evaluations (patience {patience}): revenues of the last k iterations "
        f"before the stop against the loop's long-run level (mean of the trace's second half) =="
    )
    noise = stalled_revenue_error(traces, settings, patience)
    for c, row in noise.items():
        cells = "  ".join(
            f"k={k}: rms {row[k][0]:.1%}, mean {row[k][1]:+.1%}" for k in row if k != "evaluations"
        )
        print(f"  {c:<10} {row['evaluations']:>3} evaluations   {cells}")
    print("\nsummary (a station agrees when |difference| <= max(3 SE, 2 %); '!' marks a miss):")
    print("\n".join(summary))
    figures["orbit"] = orbit
    figures["against_orbit"] = against
    figures["stalled_revenue_error"] = noise
    return figures


def _print_comparisons(table: dict, empty: str) -> None:
    """``{profile: {condition: agreement}}`` as lines, and the share that agree."""
    for p, comps in table.items():
        print(f"  {p:<18}" + "  ".join(f"{c}: {_fmt(comps[c])}" for c in comps))
    oks = [ok for comps in table.values() for ok, _ in comps.values()]
    n_ok, n_all = sum(int(ok.sum()) for ok in oks), sum(len(ok) for ok in oks)
    print(f"  {n_ok}/{n_all} agree" if table else empty)


def report(res: dict, agents: tuple[str, ...]) -> tuple[list[str], str]:
    """Table lines of one patience's replay, and its one-line summary."""
    compared = ("free_flow", "halved", "long")
    head = "  ".join(f"{c + ' (' + ' '.join(agents) + ')':<36}" for c in compared)
    lines = [f"  {'profile':<18}{'default iterations':>20}{'stalled':>9}  {head}"]
    n_ok = n_all = cut = 0
    random_its: list[int] = []
    misses: list[str] = []
    for p, r in res.items():
        its = [n for n, _ in r["stops"]["default"]]
        stalled = sum(why == "stalled" for _, why in r["stops"]["default"])
        if "random" in p:
            random_its += its
        spread = f"{min(its)}-{np.median(its):g}-{max(its)}"
        cells = "  ".join(f"{_fmt(r['comparisons'][c]):<36}" for c in compared)
        lines.append(f"  {p:<18}{spread:>20}{stalled:>5}/{len(its)}    {cells}")
        for c, (ok, rel) in r["comparisons"].items():
            n_ok += int(ok.sum())
            n_all += len(ok)
            misses += [f"{p} {c} {agents[j]} {rel[j]:+.1%}" for j in np.flatnonzero(~ok)]
        cut += r["cut"]
    line = (
        f"{n_ok}/{n_all} agree; uniform-random iterations median {np.median(random_its):g}; "
        f"converging loops cut: {cut}"
    )
    lines.append(f"  {line}" + ("; misses: " + "; ".join(misses) if misses else ""))
    return lines, line


if __name__ == "__main__":
    main()
