"""The Ray backend (evcs_gym.parallel.ray_backend) on a real local Ray: results like the
serial evaluator and the process pool, errors, killed actors, crash retries, timeouts,
shutdown. Marked ``ray``; skipped where Ray is not installed."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest

from evcs_gym import (
    BatchEvaluationError,
    ParallelEvaluatorPool,
    PoolClosedError,
    PriceError,
    WorkerCrashedError,
)
from tests.helpers import bad_prices, children, helper_process, price_vectors, wait_for

# Against hangs, not slowness: each Ray worker actor imports the package and UXsim on
# start, about 1 s on an idle host and over a minute on a loaded 2-core one (a pool of 2
# measured ready after 136 s beside two benchmark runs), and a thread timeout ends the
# whole test run.
pytestmark = pytest.mark.timeout(300)


ray_timeout = pytest.mark.timeout(300, method="thread")


@pytest.fixture(scope="module")
def ray_state():
    """One pool that starts a local Ray with 2 CPUs, shared by the Ray tests."""
    pytest.importorskip("ray")
    state = {"before": children()}
    yield state
    pool = state.get("pool")
    if pool is not None:
        pool.shutdown()


@pytest.fixture
def ray_pool(ray_state, tiny):
    import ray

    pool = ray_state.get("pool")
    if pool is None or pool.closed:
        assert not ray.is_initialized()
        pool = ParallelEvaluatorPool(tiny, n_workers=2, backend="ray")
        ray_state["pool"] = pool
    return pool


@pytest.mark.ray
@ray_timeout
def test_ray_matches_serial_and_process_pool(ray_pool, pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    assert ray_pool._backend._owns_ray
    assert ray_pool.evaluate_batch(batch, seeds=seeds) == expected
    assert pool.evaluate_batch(batch, seeds=seeds) == expected
    assert ray_pool.evaluate(batch[0], seed=0) == expected[0]
    future = ray_pool.submit(batch[1], seed=seeds[1])
    assert isinstance(future, Future) and future.result(timeout=60) == expected[1]
    seen = {i: r for i, r in ray_pool.map_unordered(batch, seeds)}
    assert sorted(seen) == list(range(len(batch)))
    assert [seen[i] for i in range(len(batch))] == expected


@pytest.mark.ray
@ray_timeout
def test_ray_errors_keep_their_type(ray_pool, tiny, tiny_batch):
    batch, seeds, expected = tiny_batch
    mixed = list(batch)
    mixed[2] = bad_prices(tiny)
    with pytest.raises(BatchEvaluationError) as info:
        ray_pool.evaluate_batch(mixed, seeds=seeds)
    assert list(info.value.failures) == [2]
    assert isinstance(info.value.failures[2], PriceError)
    assert info.value.results[0] == expected[0]
    # an error raised inside the actor
    task = ray_pool._make_task(batch[0], 0)
    task.prices["A"] = np.full(tiny.n_periods, np.inf)
    ray_pool._backend.submit(task)
    exc = task.future.exception(timeout=60)
    assert type(exc) is PriceError and "period 0 is not finite" in str(exc)


def _kill_a_busy_actor(pool: ParallelEvaluatorPool, pids: list[int], out: dict) -> None:
    """Kill (SIGKILL) the first Ray actor seen holding a task."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for k, slot in enumerate(pool._backend._slots):
            if slot.task is not None:
                out["pid"] = pids[k]
                os.kill(pids[k], signal.SIGKILL)
                return
        time.sleep(0.002)


@pytest.mark.ray
@ray_timeout
def test_ray_actor_killed_mid_batch(ray_pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    pids = ray_pool._worker_pids()
    restarts = ray_pool.restarts
    killed: dict = {}

    killer = threading.Thread(target=_kill_a_busy_actor, args=(ray_pool, pids, killed))
    killer.start()
    with pytest.raises(BatchEvaluationError) as info:
        ray_pool.evaluate_batch(batch * 2, seeds=seeds * 2)
    killer.join()
    err = info.value
    assert len(err.failures) == 1  # only the task the actor held
    ((i, exc),) = err.failures.items()
    assert isinstance(exc, WorkerCrashedError), exc
    assert [r for j, r in enumerate(err.results) if j != i] == [
        r for j, r in enumerate(expected * 2) if j != i
    ]
    assert ray_pool.restarts == restarts + 1
    assert killed["pid"] not in ray_pool._worker_pids()
    assert ray_pool.evaluate_batch(batch, seeds=seeds) == expected


@pytest.mark.ray
@ray_timeout
def test_ray_crash_retries_lose_nothing(ray_pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    pids = ray_pool._worker_pids()
    retried = ray_pool.retried
    ray_pool.crash_retries = 1  # the tasks made from now on may run twice
    killed: dict = {}

    killer = threading.Thread(target=_kill_a_busy_actor, args=(ray_pool, pids, killed))
    killer.start()
    try:
        assert ray_pool.evaluate_batch(batch * 2, seeds=seeds * 2) == expected * 2
    finally:
        ray_pool.crash_retries = 0
    killer.join()
    assert "pid" in killed and ray_pool.retried == retried + 1


@pytest.mark.ray
@ray_timeout
def test_ray_timeout_replaces_actors(ray_pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    restarts = ray_pool.restarts
    # 6 evaluations, 3 per actor one after the other: cannot finish in 10 ms
    with pytest.raises(TimeoutError, match="evaluate_batch: .* unfinished after 0.01 s"):
        ray_pool.evaluate_batch(batch, seeds=seeds, timeout=0.01)
    assert wait_for(lambda: ray_pool.restarts == restarts + 2)  # both actors were busy
    assert ray_pool.evaluate_batch(batch, seeds=seeds) == expected


@pytest.mark.ray
@ray_timeout
def test_ray_pool_shutdown_stops_the_ray_it_started(ray_state, ray_pool, tiny):
    import ray

    prices = price_vectors(tiny, 1)[0]
    ray_pool.shutdown()
    ray_pool.shutdown()
    assert not ray.is_initialized()
    with pytest.raises(PoolClosedError):
        ray_pool.evaluate(prices)
    with pytest.raises(PoolClosedError):
        ray_pool.submit(prices)

    def only_helpers_left() -> bool:
        new = [p for pid, p in children().items() if pid not in ray_state["before"]]
        return all(helper_process(p) for p in new)

    assert wait_for(only_helpers_left, 20), children()
