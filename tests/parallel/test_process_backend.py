"""The process backend (evcs_gym.parallel.process_backend): worker crashes, crash retries,
timeouts and worker clean-up, with real processes killed by SIGKILL.

Crash and timeout tests use ``tiny`` with the UE stop rule made unreachable and the
stationary stop off, so that every evaluation runs exactly ``ue_max_iterations``
iterations: a legitimately slow task (about 0.4 s) whose worker is reliably busy (the
``slow_tiny`` and ``slow_pool`` fixtures of tests/parallel/conftest.py). The first test
checks that premise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from evcs_gym import (
    BatchEvaluationError,
    EVCSRewardEvaluator,
    ParallelEvaluatorPool,
    WorkerCrashedError,
)
from tests.helpers import SLOW_ITERATIONS, price_vectors, serial, wait_for, zombie

pytestmark = pytest.mark.timeout(120)


def _kill_a_busy_worker(pool: ParallelEvaluatorPool, out: dict) -> None:
    """Kill (SIGKILL) the first worker seen running a task."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = pool._backend._running()
        if running:
            pid = next(iter(running.values()))
            out["pid"], out["t"] = pid, time.monotonic()
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.005)


def test_slow_tiny_runs_every_evaluation_to_the_cap(slow_tiny):
    """The timeouts below (0.1 s) rest on every task running the iteration cap."""
    evaluator = EVCSRewardEvaluator(slow_tiny)
    for seed, prices in enumerate(price_vectors(slow_tiny, 4, seed=4)):
        stats = evaluator.evaluate(prices, seed=seed).ue_stats
        assert stats["stop_reason"] == "max_iterations", stats["stop_reason"]
        assert stats["window"][1] == SLOW_ITERATIONS  # the whole run: no early stop


def test_worker_killed_mid_batch(slow_pool, slow_tiny):
    batch = price_vectors(slow_tiny, 6, seed=3)
    expected = serial(slow_tiny, batch, [0] * 6)
    killed: dict = {}
    killer = threading.Thread(target=_kill_a_busy_worker, args=(slow_pool, killed))
    killer.start()
    with pytest.raises(BatchEvaluationError) as info:
        slow_pool.evaluate_batch(batch, seeds=0)
    killer.join()
    err = info.value
    # exactly the task the dead worker held fails; the others were re-run
    assert len(err.failures) == 1
    ((i, exc),) = err.failures.items()
    assert isinstance(exc, WorkerCrashedError)
    assert f"worker process {killed['pid']} died (killed by SIGKILL" in str(exc)
    assert [r for j, r in enumerate(err.results) if j != i] == [
        r for j, r in enumerate(expected) if j != i
    ]
    assert slow_pool.restarts == 1
    assert killed["pid"] not in slow_pool._worker_pids()
    # the pool works again, bit for bit
    assert slow_pool.evaluate_batch(batch[:3], seeds=0) == expected[:3]


def test_crash_retries_rerun_the_killed_task_bit_for_bit(slow_tiny):
    batch = price_vectors(slow_tiny, 6, seed=3)
    expected = serial(slow_tiny, batch, [0] * 6)
    killed: dict = {}
    with ParallelEvaluatorPool(slow_tiny, n_workers=2, crash_retries=1) as pool:
        killer = threading.Thread(target=_kill_a_busy_worker, args=(pool, killed))
        killer.start()
        results = pool.evaluate_batch(batch, seeds=0)
        killer.join()
        assert "pid" in killed
        assert results == expected  # nothing lost: the killed task ran again
        assert pool.retried == 1 and pool.restarts == 1


def test_crash_retries_are_bounded(slow_tiny):
    """A task whose workers keep dying fails after crash_retries + 1 attempts. Each
    worker is killed once: a dead worker's slot can still name the task for a moment,
    and killing that pid again must not count as a kill."""
    batch = price_vectors(slow_tiny, 1, seed=4)
    with ParallelEvaluatorPool(slow_tiny, n_workers=1, crash_retries=2) as pool:
        future = pool.submit(batch[0], seed=0)
        killed: set[int] = set()
        deadline = time.monotonic() + 120
        while not future.done() and time.monotonic() < deadline:
            fresh = [pid for pid in pool._backend._running().values() if pid not in killed]
            if fresh:
                os.kill(fresh[0], signal.SIGKILL)
                killed.add(fresh[0])
            time.sleep(0.005)
        exc = future.exception(timeout=60)
        assert isinstance(exc, WorkerCrashedError), exc
        assert len(killed) == 3 and pool.retried == 2


def test_crash_retries_argument(tiny):
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="crash_retries"):
            ParallelEvaluatorPool(tiny, n_workers=1, crash_retries=bad)


def test_idle_worker_killed_is_transparent(pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    victim = pool._worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    assert wait_for(lambda: not psutil.pid_exists(victim) or zombie(victim), 10)
    assert pool.evaluate_batch(batch, seeds=seeds) == expected  # no task was held


def test_shutdown_kills_a_worker_the_broken_executor_left_behind(tiny, tiny_batch):
    """A ``submit`` racing with a break can spawn a worker after the broken executor
    terminated the others (CPython 3.11 marks it broken without its lock). That worker
    waits on its task queue forever and the interpreter's exit joins it: a CI run hung
    so. Here a live process stands in for it in the retired executor."""
    batch, seeds, expected = tiny_batch
    pool = ParallelEvaluatorPool(tiny, n_workers=1)
    try:
        backend = pool._backend
        os.kill(pool._worker_pids()[0], signal.SIGKILL)
        assert pool.evaluate_batch(batch[:2], seeds=seeds[:2]) == expected[:2]
        assert pool.restarts == 1
        (broken,) = backend._retired
        assert wait_for(lambda: not broken._executor_manager_thread.is_alive(), 30)
        straggler = backend._ctx.Process(target=time.sleep, args=(600,))
        straggler.start()
        broken._processes[straggler.pid] = straggler
    finally:
        pool.shutdown()
    assert not straggler.is_alive()
    assert straggler.exitcode == -signal.SIGKILL


def test_timeout_replaces_the_stuck_worker(slow_pool, slow_tiny):
    batch = price_vectors(slow_tiny, 3, seed=4)
    expected = serial(slow_tiny, batch, [0, 0, 0])
    other = slow_pool.submit(batch[1], seed=0)  # a task of another caller, no timeout
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="evaluate: 1 of 1 evaluation"):
        slow_pool.evaluate(batch[0], seed=0, timeout=0.1)
    assert time.monotonic() - t0 < 30
    assert wait_for(lambda: slow_pool.restarts == 1)
    assert other.result(timeout=60) == expected[1]  # re-run, not failed
    assert slow_pool.evaluate(batch[0], seed=0) == expected[0]
    with pytest.raises(TimeoutError, match=r"evaluate_batch: 3 of 3 evaluation\(s\) \(tasks"):
        slow_pool.evaluate_batch(batch, seeds=0, timeout=0.1)
    assert slow_pool.evaluate_batch(batch, seeds=0) == expected


def test_workers_exit_when_the_pool_owner_is_killed():
    """A pool owner killed by SIGKILL runs no clean-up; its workers must not outlive it."""
    code = (
        "import sys, time, evcs_gym\n"
        "pool = evcs_gym.ParallelEvaluatorPool(evcs_gym.load_scenario('tiny'), n_workers=2)\n"
        "print(*pool._worker_pids(), flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        workers = [psutil.Process(int(pid)) for pid in owner.stdout.readline().split()]
        assert len(workers) == 2 and all(w.is_running() for w in workers)
    finally:
        owner.kill()
        owner.wait()
    gone, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, f"workers outlived their killed owner: {alive}"
