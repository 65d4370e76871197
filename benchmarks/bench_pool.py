"""Benchmark: a batch of evaluations serial vs ParallelEvaluatorPool (processes, Ray).

A batch of ``--n`` (default 8) different price vectors on ``--scenario`` (default
siouxfalls), uniform in [0.8, 1.6] per station and period (seeded), seeds 0..n-1, is
evaluated

* serially with one ``EVCSRewardEvaluator`` in this process;
* with ``ParallelEvaluatorPool(nd, n_workers=2)`` (process backend);
* with ``ParallelEvaluatorPool(nd, n_workers=2, backend="ray")`` on a local Ray with
  2 CPUs (skipped if Ray is not installed or with ``--no-ray``).

The whole batch is submitted at once and the pool balances it (evaluations differ in
cost: their UE iteration counts differ). Pool start-up (worker processes or Ray +
actors, evaluators built) is timed separately and excluded from the batch time.
Speed-ups are ratios measured in this run. Each pool's results are compared bit for bit
with the serial ones. The "balance bound" is the best speed-up possible for these
evaluation costs on the given workers: serial time / max(serial time / workers,
slowest evaluation).

Run: ``python benchmarks/bench_pool.py [--scenario siouxfalls] [--n 8] [--workers 2]``
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

import evcs_gym


def price_batch(nd: evcs_gym.NetworkData, n: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{a: rng.uniform(0.8, 1.6, nd.n_periods) for a in nd.agent_names} for _ in range(n)]


def run_pool(
    nd: evcs_gym.NetworkData,
    batch: list,
    seeds: list[int],
    workers: int,
    backend: str,
) -> tuple[float, float, list[evcs_gym.EvalResult]]:
    t0 = time.perf_counter()
    pool = evcs_gym.ParallelEvaluatorPool(nd, n_workers=workers, backend=backend)
    startup = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        results = pool.evaluate_batch(batch, seeds=seeds)
        seconds = time.perf_counter() - t0
    finally:
        pool.shutdown()
    return startup, seconds, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument("--n", type=int, default=8, help="evaluations in the batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2024, help="seed of the price vectors")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray backend")
    args = parser.parse_args()

    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"== {nd.summary()}")
    print(f"load (route sets + warm start): {time.perf_counter() - t0:.2f} s")
    batch = price_batch(nd, args.n, args.seed)
    seeds = list(range(args.n))

    ev = evcs_gym.EVCSRewardEvaluator(nd)
    serial_results, costs = [], []
    t0 = time.perf_counter()
    for prices, seed in zip(batch, seeds):
        t1 = time.perf_counter()
        serial_results.append(ev.evaluate(prices, seed=seed))
        costs.append(time.perf_counter() - t1)
    serial = time.perf_counter() - t0
    bound = serial / max(serial / args.workers, max(costs))
    print(
        f"\nserial evaluations (s): {' '.join(f'{c:.2f}' for c in costs)}; "
        f"UE iterations: {' '.join(str(r.ue_iterations) for r in serial_results)}"
    )
    print(f"balance bound for {args.workers} workers: {bound:.2f}x")

    rows = [("serial", 0.0, serial, True)]
    backends = ["process"]
    if not args.no_ray:
        if importlib.util.find_spec("ray") is None:
            print('Ray not installed (pip install "evcs-gym[ray]"): skipping the Ray backend')
        else:
            backends.append("ray")
    for backend in backends:
        startup, seconds, results = run_pool(nd, batch, seeds, args.workers, backend)
        rows.append((f"{backend} x{args.workers}", startup, seconds, results == serial_results))

    header = f"{'':<12}{'start-up s':>11}{'batch s':>9}{'speed-up':>10}{'bit-identical':>15}"
    print(f"\nbatch of {args.n} on {args.scenario}, seeds 0..{args.n - 1}")
    print(header)
    print("-" * len(header))
    for name, startup, seconds, same in rows:
        start = f"{startup:.2f}" if name != "serial" else "-"
        print(f"{name:<12}{start:>11}{seconds:>9.2f}{serial / seconds:>9.2f}x{str(same):>15}")


if __name__ == "__main__":
    main()
