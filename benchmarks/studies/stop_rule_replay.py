"""Study: which stop rule makes the answer independent of the UE's start.

The convergence study compares each profile's answer from the warm start with the answer
from free-flow routes (and with a doubled cap). This study traces the same loops once,
for ``--iterations`` iterations without any stop (``ue_convergence_stable_rounds`` and
the stationary stop off: the switching never reads them), from both starts, at the
convergence study's profiles and seeds. It then prints

* the *long-run level* of each start (the mean over the second half of the trace) and
  whether the two starts agree there, which says whether the UE has one level to find;
* for each candidate stop rule (``--rule``, a JSON object of stop settings: the
  scenario's own, and any of ``ue_convergence_stable_rounds``,
  ``ue_stop_settled_ratio``, ``ue_payoff_*``), the convergence study's comparisons
  replayed on the traces (:meth:`evcs_gym.ue.evaluator.UETrace.payoff`, exact: the same
  bits as evaluating under that rule), and the warm start's and free-flow start's median
  iterations.

Run: ``python benchmarks/studies/stop_rule_replay.py --scenario siouxfalls_market
--rule '{"ue_convergence_stable_rounds": 6}' --rule '{"ue_stop_settled_ratio": 2}'``
(``benchmarks/results/market_calibration_siouxfalls_market.txt``, section 21; 96 traces
of 120 iterations, about 10 minutes on 2 idle cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.studies.convergence import agreement_tolerance, study_profiles
from evcs_gym.ue.evaluator import EVCSRewardEvaluator, UETrace

INPUTS = Path(__file__).resolve().parents[1] / "inputs"


def profiles(name: str, training: int, random: int) -> dict[str, dict[str, np.ndarray]]:
    """The convergence study's profiles (``benchmarks/bench_convergence.py``)."""
    nd = evcs_gym.load_scenario(name)
    path = INPUTS / f"solve_{nd.name}.json"
    base = json.loads(path.read_text())["prices"] if path.exists() else None
    return study_profiles(nd, base, deviations=2, training_like=training, random=random)


def trace(job: tuple[str, str, dict[str, Any], int, bool, int]) -> UETrace:
    """One loop without a stop, from the warm start or from free-flow routes."""
    name, _, prices, seed, warm, iterations = job
    nd = evcs_gym.load_scenario(name, warm_start=warm)
    unstopped = dataclasses.replace(
        nd.settings,
        ue_max_iterations=iterations,
        ue_payoff_precision=0.0,
        ue_convergence_stable_rounds=iterations + 1,
    )
    ev = EVCSRewardEvaluator(dataclasses.replace(nd, settings=unstopped))
    return ev.trace(prices, seed=seed)


def answer(tr: UETrace, settings: Any) -> tuple[int, np.ndarray]:
    """Iterations and per-station revenue of the loop under ``settings``' stop rule."""
    n, _, payoff = tr.payoff(settings)
    return n, (tr.prices * payoff.flows * settings.charging_demand_per_vehicle).sum(-1)


def agree(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The convergence study's rule on paired (seeds, stations) arrays."""
    d = x - ref
    se = d.std(axis=0, ddof=1) / np.sqrt(len(d))
    return np.abs(d.mean(axis=0)) <= agreement_tolerance(se, ref.mean(axis=0))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="siouxfalls_market")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--training", type=int, default=2)
    parser.add_argument("--random", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=120)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rule", action="append", default=[], help="stop settings, JSON")
    args = parser.parse_args(argv)
    profs = profiles(args.scenario, args.training, args.random)
    jobs = [
        (args.scenario, p, prices, s, warm, args.iterations)
        for p, prices in profs.items()
        for s in range(args.seeds)
        for warm in (True, False)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        traces = {(j[1], j[3], j[4]): tr for j, tr in zip(jobs, pool.map(trace, jobs))}
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"{nd.summary()}\nevcs-gym {evcs_gym.__version__}, settings {nd.settings_hash}")
    print(f"{len(jobs)} loops traced for {args.iterations} iterations without a stop\n")

    half = args.iterations // 2
    level_ok = 0
    print(f"long-run level (iterations {half + 1}-{args.iterations}), free-flow vs warm:")
    for p in profs:
        level = {
            w: np.array([traces[(p, s, w)].revenues[half:].mean(0) for s in range(args.seeds)])
            for w in (True, False)
        }
        diff = (level[False] - level[True]).mean(0) / level[True].mean(0)
        ok = agree(level[False], level[True])
        level_ok += int(ok.sum())
        print(f"  {p:<18} " + "  ".join(f"{100 * d:+5.1f}%" for d in diff))
    print(f"  agree: {level_ok} of {len(profs) * len(nd.agent_names)}\n")

    out: dict[str, Any] = {"level_agree": level_ok, "rules": {}}
    cap = {"ue_max_iterations": 2 * nd.settings.ue_max_iterations, "ue_payoff_precision": 0.0}
    for text in ["{}", *args.rule]:
        rule = dataclasses.replace(nd.settings, **json.loads(text))
        doubled = dataclasses.replace(rule, **cap)
        ok, misses, its = 0, [], {True: [], False: []}
        for p in profs:
            runs = {w: [answer(traces[(p, s, w)], rule) for s in range(args.seeds)] for w in its}
            for w in its:
                its[w] += [n for n, _ in runs[w]]
            warm = np.array([r for _, r in runs[True]])
            others = {
                "free_flow": np.array([r for _, r in runs[False]]),
                "doubled_cap": np.array(
                    [answer(traces[(p, s, True)], doubled)[1] for s in range(args.seeds)]
                ),
            }
            for cond, x in others.items():
                a = agree(x, warm)
                ok += int(a.sum())
                rel = (x - warm).mean(0) / warm.mean(0)
                misses += [
                    f"{cond} {p} {nd.agent_names[i]} {100 * rel[i]:+.1f}%"
                    for i in np.flatnonzero(~a)
                ]
        total = 2 * len(profs) * len(nd.agent_names)
        print(
            f"rule {text}: agree {ok} of {total}; iterations (median) warm start "
            f"{np.median(its[True]):.0f}, free-flow {np.median(its[False]):.0f}"
        )
        for m in misses:
            print(f"    miss: {m}")
        out["rules"][text] = {"agree": ok, "of": total, "misses": misses}
    return out


if __name__ == "__main__":
    main()
