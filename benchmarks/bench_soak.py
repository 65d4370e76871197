"""Benchmark: a long pool-backed training run while workers are killed (SIGKILL).

MADDPG trains on ``--scenario`` (default ``tiny``) through the vector env for
``--evaluations`` evaluations on a pool of ``--workers`` processes (or Ray actors) with
``crash_retries``. A killer thread SIGKILLs a worker ``--kills`` times at random moments,
half of them while the worker evaluates and half while it is idle. Every evaluation
that passes through the pool is recorded (prices, seed, result). The benchmark reports:

* kills made, evaluations re-run after a crash (``pool.retried``), evaluations lost
  (a ``WorkerCrashedError`` reaching the trainer; the goal is zero);
* whether every recorded result equals the serial evaluation of the same (prices,
  seed) in this process, bit for bit (``--verify all``, or a random sample of ``N``),
  compared by a SHA-256 of the fields ``==`` compares;
* resident memory: the parent's at the start and every 500 evaluations, and the
  workers' (``psutil``), with the parent's growth per 1,000 evaluations;
* the time overhead of recovery: the same training run (same seed, so the same
  evaluations) without kills, and the difference.

Run: ``python benchmarks/bench_soak.py [--evaluations 3000] [--kills 24] [--backend ray]``
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import pickle
import random
import signal
import threading
import time
from concurrent.futures import Future

import numpy as np
import psutil

import evcs_gym
from evcs_gym import ParallelEvaluatorPool
from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
from evcs_gym.baselines.recipe import make_learner
from evcs_gym.wrappers import make_vector_env


def digest(result: evcs_gym.EvalResult) -> str:
    """SHA-256 of the pickled fields that ``==`` compares (not the wall-clock timings):
    equal results, equal digests. Kept instead of the result (about 10 kB each), so that
    the benchmark's own records do not pass for growth of the parent."""
    compared = [getattr(result, f.name) for f in dataclasses.fields(result) if f.compare]
    return hashlib.sha256(pickle.dumps(compared)).hexdigest()


class RecordingPool(ParallelEvaluatorPool):
    """A pool that keeps every (prices, seed) it is given and its result's digest."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.records: list[list] = []  # [prices, seed, digest or the exception]

    def submit(self, prices, seed=None) -> Future:
        future = super().submit(prices, seed)
        record = [{a: np.array(v, dtype=float) for a, v in prices.items()}, seed, None]
        self.records.append(record)

        def keep(f: Future, record=record) -> None:
            exc = f.exception()
            record[2] = exc if exc is not None else digest(f.result())

        future.add_done_callback(keep)
        return future


def rss_mb(pid: int) -> float:
    try:
        return psutil.Process(pid).memory_info().rss / 1e6
    except psutil.Error:
        return float("nan")


def killer(pool: RecordingPool, kills: int, every: float, rng: random.Random, log: list, stop):
    """SIGKILL a worker ``kills`` times, about every ``every`` s; alternately a busy one
    (evaluating) and any one (mostly idle between evaluations on a 2-worker pool)."""
    while len(log) < kills and not stop.is_set():
        stop.wait(rng.expovariate(1.0 / every))
        if stop.is_set():
            return
        busy = len(log) % 2 == 0
        try:
            if busy and pool.backend == "process":
                running = list(pool._backend._running().values())
                pids = running or pool._worker_pids()
                busy = bool(running)
            else:  # Ray: which actor is busy is not tracked here; any actor
                pids, busy = pool._worker_pids(), False
            pid = rng.choice(pids)
            os.kill(pid, signal.SIGKILL)
            log.append({"t": time.monotonic(), "pid": pid, "busy": busy})
        except (ProcessLookupError, IndexError, OSError):
            continue  # a worker between lives: try again


def train(args, nd, kills: int) -> dict:
    pool = RecordingPool(nd, n_workers=args.workers, backend=args.backend, crash_retries=3)
    venv = make_vector_env(args.num_envs, scenario=nd, rounds=None, pool=pool)
    cls = ALGORITHMS["maddpg"]
    algo = make_learner(cls, venv, cls.config_cls(seed=args.seed))
    trainer = GameTrainer(
        venv,
        algo,
        TrainerConfig(budget=args.evaluations, check_every=10**9, seed=args.seed, progress=False),
    )
    parent = os.getpid()
    memory = [(0, rss_mb(parent), sum(rss_mb(p) for p in pool._worker_pids()))]
    stop = threading.Event()

    def sample_memory():
        while not stop.wait(2.0):
            n = len(pool.records)
            if n - memory[-1][0] >= 500:
                workers = sum(rss_mb(p) for p in pool._worker_pids())
                memory.append((n, rss_mb(parent), workers))

    log: list = []
    threads = [threading.Thread(target=sample_memory, daemon=True)]
    if kills:
        every = args.kill_every
        threads.append(
            threading.Thread(
                target=killer,
                args=(pool, kills, every, random.Random(args.seed), log, stop),
                daemon=True,
            )
        )
    for t in threads:
        t.start()
    lost = 0
    t0 = time.perf_counter()
    try:
        trainer.train()
    except Exception as e:  # noqa: BLE001 - a crash that reached the trainer: the run is lost
        print(f"the training run stopped: {type(e).__name__}: {e}")
        lost += 1
    seconds = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join(timeout=10)
    memory.append((len(pool.records), rss_mb(parent), sum(rss_mb(p) for p in pool._worker_pids())))
    records = pool.records
    retried, restarts = pool.retried, pool.restarts
    failed = sum(1 for *_, d in records if not isinstance(d, str))
    venv.close()
    pool.shutdown()
    return {
        "seconds": seconds,
        "records": records,
        "kills": log,
        "retried": retried,
        "restarts": restarts,
        "lost": lost + failed,
        "memory": memory,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="tiny")
    parser.add_argument("--evaluations", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--backend", choices=("process", "ray"), default="process")
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--kill-every", type=float, default=10.0, help="mean seconds between kills")
    parser.add_argument(
        "--verify", default="all", help="'all', or a number of results checked serially"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without kills")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    nd = evcs_gym.load_scenario(args.scenario)
    print(f"== {nd.summary()}")
    print(
        f"MADDPG, {args.evaluations} evaluations, {args.num_envs} copies on {args.workers} "
        f"{args.backend} workers (crash_retries=3), {args.kills} SIGKILLs"
    )
    run = train(args, nd, args.kills)
    base = None if args.no_baseline else train(args, nd, 0)

    records = run["records"]
    sample = range(len(records))
    if args.verify != "all":
        sample = sorted(random.Random(1).sample(range(len(records)), int(args.verify)))
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    mismatches = 0
    for i in sample:
        prices, seed, kept = records[i]
        if kept != digest(ev.evaluate(prices, seed)):
            mismatches += 1
    same_as_base = base is not None and [r[2] for r in records] == [r[2] for r in base["records"]]
    kills = run["kills"]
    busy = sum(k["busy"] for k in kills)
    mem = run["memory"]
    n_end = mem[-1][0]
    growth = (mem[-1][1] - mem[0][1]) / max(n_end, 1) * 1000
    print(f"evaluations: {len(records)} in {run['seconds']:.1f} s")
    print(
        f"kills: {len(kills)} ({busy} of a worker evaluating, {len(kills) - busy} of any "
        f"worker); workers replaced {run['restarts']}, evaluations re-run {run['retried']}, "
        f"lost {run['lost']}"
    )
    checked = len(sample)
    print(
        f"bit-identical to serial: {checked - mismatches} of {checked} checked "
        f"({'all' if args.verify == 'all' else 'a random sample'})"
    )
    print("resident memory (MB): evaluations, parent, workers (sum)")
    for n, parent, workers in mem:
        print(f"  {n:>6} {parent:8.1f} {workers:8.1f}")
    print(f"parent RSS growth: {growth:+.1f} MB per 1,000 evaluations")
    if base is not None:
        overhead = run["seconds"] - base["seconds"]
        print(
            f"the same run without kills: {base['seconds']:.1f} s; recovery overhead "
            f"{overhead:+.1f} s ({overhead / max(len(kills), 1):+.2f} s per kill); "
            f"same results as with kills: {same_as_base}"
        )
    return {
        "evaluations": len(records),
        "kills": len(kills),
        "retried": run["retried"],
        "lost": run["lost"],
        "mismatches": mismatches,
        "checked": checked,
        "growth_mb_per_1000": growth,
        "same_as_baseline": same_as_base if base is not None else None,
    }


if __name__ == "__main__":
    main()
