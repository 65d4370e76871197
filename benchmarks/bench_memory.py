"""Benchmark: memory growth over many evaluations, in one process and in a process pool.

Runs ``--n`` (default 1,000) evaluations of ``--scenario`` (default tiny), each with a
different price vector (uniform in the price bounds, seeded) and seed ``i % 10``:

1. serially in this process with one ``EVCSRewardEvaluator``;
2. through ``ParallelEvaluatorPool(nd, n_workers=2)``, in batches of ``--chunk``
   (results are dropped, as a training loop would).

It prints the resident set size (RSS, psutil) of this process and of each worker:
before the first evaluation, after a warm-up (the first ``--warmup`` evaluations, which
settle one-time allocations), every 20 % of the run, and at the end, with the growth
since warm-up and since start. The target is < 20 MB growth everywhere. No explicit
``gc.collect()``: memory is measured as a training loop would leave it.

Run: ``python benchmarks/bench_memory.py [--scenario tiny] [--n 1000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import psutil

import evcs_gym

MB = 1024 * 1024


def rss_mb(pid: int | None = None) -> float:
    return psutil.Process(pid).memory_info().rss / MB


def random_prices(nd: evcs_gym.NetworkData, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {a: rng.uniform(lo, hi, nd.n_periods) for a, (lo, hi) in nd.price_bounds.items()}


def report(label: str, trace: list[tuple[int, float]], warmup: int) -> None:
    start = trace[0][1]
    warm = next(v for i, v in trace if i >= warmup)
    end = trace[-1][1]
    points = "  ".join(f"{i}:{v:.1f}" for i, v in trace)
    print(f"  {label:<24} RSS MB after n evaluations  {points}")
    print(
        f"  {'':<24} growth since warm-up {end - warm:+.1f} MB, since start {end - start:+.1f} MB"
    )


def checkpoints(n: int, warmup: int) -> list[int]:
    marks = {0, warmup, n} | {round(n * k / 5) for k in range(1, 5)}
    return sorted(m for m in marks if 0 <= m <= n)


def serial_run(nd: evcs_gym.NetworkData, n: int, warmup: int) -> None:
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    rng = np.random.default_rng(0)
    marks = checkpoints(n, warmup)
    trace = []
    t0 = time.perf_counter()
    for i in range(n + 1):
        if i in marks:
            trace.append((i, rss_mb()))
        if i < n:
            ev.evaluate(random_prices(nd, rng), seed=i % 10)
    print(f"\n[serial] {n} evaluations in {time.perf_counter() - t0:.1f} s")
    report("this process", trace, warmup)


def pool_run(nd: evcs_gym.NetworkData, n: int, warmup: int, chunk: int, workers: int) -> None:
    rng = np.random.default_rng(0)
    parent_trace = [(0, rss_mb())]
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=workers) as pool:
        pids = pool._worker_pids()
        worker_traces: dict[int, list[tuple[int, float]]] = {p: [(0, rss_mb(p))] for p in pids}
        marks = checkpoints(n, warmup)[1:]
        done = 0
        t0 = time.perf_counter()
        while done < n:
            size = min(chunk, n - done, *(m - done for m in marks if m > done))
            batch = [random_prices(nd, rng) for _ in range(size)]
            pool.evaluate_batch(batch, seeds=[(done + k) % 10 for k in range(size)])
            done += size
            if done in marks:
                parent_trace.append((done, rss_mb()))
                for p in pids:
                    worker_traces[p].append((done, rss_mb(p)))
        seconds = time.perf_counter() - t0
        same_workers = pool._worker_pids() == pids and pool.restarts == 0
    print(
        f"\n[pool, {workers} workers, batches of {chunk}] {n} evaluations in {seconds:.1f} s "
        f"(same worker processes throughout: {same_workers})"
    )
    report("parent", parent_trace, warmup)
    for p, trace in worker_traces.items():
        report(f"worker pid {p}", trace, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="tiny")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"== {nd.summary()}")
    print(f"evaluations: {args.n}, warm-up: {args.warmup}, target growth < 20 MB")
    serial_run(nd, args.n, args.warmup)
    pool_run(nd, args.n, args.warmup, args.chunk, args.workers)


if __name__ == "__main__":
    main()
