"""Benchmark: seconds per evaluation, UE iterations and the cost ratio to a raw simulation.

For each scenario (default: siouxfalls and tiny) it times, in one run:

* raw simulation: one World build + ``exec_simulation`` with every platoon on its
  free-flow route and no vehicle logging (median of 3);
* evaluations at a uniform price 1.25 (median of ``--repeats``, default 3);
* evaluations of 4 random uneven price vectors, uniform in [0.8, 1.6] per station
  and period (seeded);

and prints seconds, UE iterations, convergence, the ratio eval / raw simulation and
the share of time spent outside ``exec_simulation``.

Run: ``python benchmarks/bench_evaluator.py [--scenarios siouxfalls tiny] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import uxsim

import evcs_gym
from evcs_gym.simulation import WorldBuilder


def raw_simulation_seconds(nd: evcs_gym.NetworkData, repeats: int = 3) -> float:
    """Median seconds of World build + exec_simulation on free-flow routes, no logging."""
    builder = WorldBuilder(nd)
    free_flow = nd.group_routes[nd.veh_group, 0]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        W = builder.build(free_flow, seed=0)
        W.exec_simulation()
        times.append(time.perf_counter() - t0)
        assert isinstance(W, uxsim.uxsim_cpp_wrapper.CppWorld)
    return statistics.median(times)


def exec_seconds(result: evcs_gym.EvalResult) -> float:
    return result.timings.get("simulate", 0.0)


def bench(name: str, repeats: int, n_random: int) -> dict:
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(name)
    load_s = time.perf_counter() - t0
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    raw = raw_simulation_seconds(nd)
    print(f"\n== {nd.summary()}")
    print(
        f"load {load_s:.2f} s (route sets {nd.route_seconds:.2f} s, warm start "
        f"{nd.timings.get('warm_start', 0.0):.2f} s, "
        f"{nd.warm_start_info.get('iterations', 0)} UE iterations)"
    )
    print(f"raw simulation (build + exec_simulation, free-flow routes): {raw:.3f} s")
    header = (
        f"{'case':<22}{'seconds':>9}{'iters':>7}{'conv':>6}{'gap':>8}{'done':>7}"
        f"{'ratio':>8}{'outside sim':>13}"
    )
    print(header)
    print("-" * len(header))

    def row(label: str, res: evcs_gym.EvalResult, secs: float) -> None:
        outside = 1.0 - res.timings["simulate"] / res.timings["total"]
        print(
            f"{label:<22}{secs:>9.2f}{res.ue_iterations:>7}{str(res.converged):>6}"
            f"{res.ue_stats['relative_gap']:>8.4f}{res.ue_stats['completed_ratio']:>7.3f}"
            f"{secs / raw:>8.1f}{outside:>12.0%}"
        )

    uniform = {a: np.full(nd.n_periods, 1.25) for a in nd.agent_names}
    uni_times = []
    for r in range(repeats):
        res = ev.evaluate(uniform, seed=0)
        uni_times.append(res.timings["total"])
        row(f"uniform 1.25 #{r}", res, res.timings["total"])
    rng = np.random.default_rng(2024)
    rnd_times, rnd_iters, rnd_conv = [], [], []
    for i in range(n_random):
        prices = {a: rng.uniform(0.8, 1.6, nd.n_periods) for a in nd.agent_names}
        res = ev.evaluate(prices, seed=0)
        rnd_times.append(res.timings["total"])
        rnd_iters.append(res.ue_iterations)
        rnd_conv.append(res.converged)
        row(f"random [0.8,1.6] #{i}", res, res.timings["total"])
    med_u, med_r = statistics.median(uni_times), statistics.median(rnd_times)
    print(
        f"median uniform: {med_u:.2f} s, ratio {med_u / raw:.1f} | median random: {med_r:.2f} s, "
        f"ratio {med_r / raw:.1f}, iterations {rnd_iters}, all converged: {all(rnd_conv)}"
    )
    return {"uniform": med_u, "random": med_r, "raw": raw}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["siouxfalls", "tiny"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--random", type=int, default=4)
    args = parser.parse_args()
    for name in args.scenarios:
        bench(name, args.repeats, args.random)


if __name__ == "__main__":
    main()
