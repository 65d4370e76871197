"""ParallelEvaluatorPool: real worker processes and a real local Ray, no mocks.

Most tests use the ``tiny`` scenario. Crash and timeout tests use ``tiny`` with the UE
stop rule made unreachable (``ue_convergence_stable_rounds`` huge), so that every
evaluation runs exactly ``ue_max_iterations`` iterations: a legitimately slow task
(about 0.5 s) whose worker is reliably busy.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, as_completed

import numpy as np
import psutil
import pytest

import evcs_gym
from evcs_gym import (
    BatchEvaluationError,
    DependencyNotInstalled,
    EVCSRewardEvaluator,
    ParallelEvaluatorPool,
    PoolClosedError,
    PriceError,
    WorkerCrashedError,
)

pytestmark = pytest.mark.timeout(120)

SLOW_ITERATIONS = 40


def price_vectors(nd: evcs_gym.NetworkData, n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {a: rng.uniform(0.8, 1.6, nd.n_periods).round(3) for a in nd.agent_names} for _ in range(n)
    ]


def bad_prices(nd: evcs_gym.NetworkData) -> dict:
    prices = {a: np.full(nd.n_periods, 1.0) for a in nd.agent_names}
    prices[nd.agent_names[1]][2] = 99.0
    return prices


def serial(nd: evcs_gym.NetworkData, batch: list[dict], seeds: list) -> list:
    ev = EVCSRewardEvaluator(nd)
    return [ev.evaluate(p, seed=s) for p, s in zip(batch, seeds)]


def helper_process(proc: psutil.Process) -> bool:
    """multiprocessing's fork server and resource tracker (live as long as the interpreter)."""
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return True  # already gone
    return (
        "multiprocessing.forkserver import main" in cmd
        or "multiprocessing.resource_tracker import main" in cmd
    )


def children() -> dict[int, psutil.Process]:
    return {p.pid: p for p in psutil.Process().children(recursive=True)}


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture(scope="module")
def tiny_batch(tiny) -> tuple[list[dict], list, list]:
    batch = price_vectors(tiny, 6, seed=1)
    seeds = [0, 1, 2, None, 0, 7]
    return batch, seeds, serial(tiny, batch, seeds)


@pytest.fixture(scope="module")
def slow_tiny() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario(
        "tiny",
        warm_start=False,
        ue_max_iterations=SLOW_ITERATIONS,
        ue_convergence_stable_rounds=10**6,
    )


@pytest.fixture
def pool(tiny):
    with ParallelEvaluatorPool(tiny, n_workers=2) as p:
        yield p


@pytest.fixture
def slow_pool(slow_tiny):
    with ParallelEvaluatorPool(slow_tiny, n_workers=2) as p:
        yield p


# ================================================================== arguments
def test_argument_errors(tiny):
    with pytest.raises(ValueError, match="`backend` must be one of"):
        ParallelEvaluatorPool(tiny, backend="threads")
    with pytest.raises(ValueError, match="`n_workers` must be a positive integer"):
        ParallelEvaluatorPool(tiny, n_workers=0)
    with pytest.raises(ValueError, match="backend='ray' only"):
        ParallelEvaluatorPool(tiny, address="auto")
    with pytest.raises(TypeError, match="NetworkData"):
        ParallelEvaluatorPool("tiny")


def test_default_n_workers_is_usable_cpus(tiny):
    with ParallelEvaluatorPool(tiny) as p:
        assert p.n_workers == len(os.sched_getaffinity(0))
        assert len(p._worker_pids()) == p.n_workers


# ================================================================== results
def test_process_pool_matches_serial_bit_for_bit(pool, tiny, tiny_batch):
    batch, seeds, expected = tiny_batch
    results = pool.evaluate_batch(batch, seeds=seeds)
    assert results == expected  # EvalResult.__eq__: every field bit for bit but timings
    assert pool.evaluate(batch[0], seed=0) == expected[0]
    # first call or thousandth, any worker: same bits
    assert pool.evaluate_batch([batch[1]] * 4, seeds=1) == [expected[1]] * 4


def test_evaluate_batch_keeps_input_order(pool, tiny):
    batch = price_vectors(tiny, 8, seed=2)
    results = pool.evaluate_batch(batch, seeds=list(range(8)))
    for i, (prices, res) in enumerate(zip(batch, results)):
        assert res.seed == i
        for a in tiny.agent_names:
            np.testing.assert_array_equal(res.prices[a], prices[a])


def test_seeds_forms(pool, tiny, tiny_batch):
    batch, _, _ = tiny_batch
    ev = EVCSRewardEvaluator(tiny)
    assert pool.evaluate_batch(batch[:2], seeds=3) == [ev.evaluate(p, seed=3) for p in batch[:2]]
    default = tiny.settings.default_seed
    assert [r.seed for r in pool.evaluate_batch(batch[:2])] == [default, default]
    with pytest.raises(ValueError, match="`seeds` has 1 entries for 2"):
        pool.evaluate_batch(batch[:2], seeds=[0])
    with pytest.raises(ValueError, match="`seed`"):
        pool.evaluate_batch(batch[:2], seeds=-1)
    with pytest.raises(TypeError, match="sequence of price mappings"):
        pool.evaluate_batch(batch[0])


def test_submit_returns_futures(pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    futures = [pool.submit(p, seed=s) for p, s in zip(batch, seeds)]
    assert all(isinstance(f, Future) for f in futures)
    done = list(as_completed(futures, timeout=60))
    assert len(done) == len(futures)
    assert [f.result() for f in futures] == expected


def test_cancelled_futures_are_skipped(slow_pool, slow_tiny):
    batch = price_vectors(slow_tiny, 6, seed=6)
    futures = [slow_pool.submit(p, seed=0) for p in batch]
    assert all(f.cancel() for f in futures[2:])
    assert all(f.cancelled() for f in futures[2:])
    assert [f.result(timeout=60) for f in futures[:2]] == serial(slow_tiny, batch[:2], [0, 0])
    # leaving map_unordered early drops what has not started; the pool carries on
    for _ in slow_pool.map_unordered(batch, seeds=0):
        break
    assert slow_pool.evaluate(batch[5], seed=0) == serial(slow_tiny, batch[5:], [0])[0]
    assert slow_pool.restarts == 0


def test_map_unordered_yields_each_index_once(pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    seen = []
    for i, res in pool.map_unordered(batch, seeds):
        assert res == expected[i]
        seen.append(i)
    assert sorted(seen) == list(range(len(batch)))


def test_map_unordered_failures(pool, tiny, tiny_batch):
    batch, seeds, expected = tiny_batch
    mixed = [batch[0], bad_prices(tiny), batch[2]]
    out = dict(pool.map_unordered(mixed, [seeds[0], 0, seeds[2]], return_exceptions=True))
    assert sorted(out) == [0, 1, 2]
    assert isinstance(out[1], PriceError) and out[1].task_index == 1
    assert out[0] == expected[0] and out[2] == expected[2]
    with pytest.raises(PriceError, match="period 2"):
        for _ in pool.map_unordered(mixed, 0):
            pass


# ================================================================== bad input and errors
def test_invalid_prices_fail_fast_in_parent(pool, tiny):
    with pytest.raises(PriceError, match=r"prices\['B'\] period 2 = 99.0 is outside"):
        pool.evaluate(bad_prices(tiny))
    with pytest.raises(PriceError, match="missing station"):
        pool.submit({"A": [1.0] * tiny.n_periods})
    with pytest.raises(ValueError, match="`seed`"):
        pool.submit(price_vectors(tiny, 1)[0], seed=-3)
    with pytest.raises(ValueError, match="`timeout` must be None or a non-negative"):
        pool.evaluate(price_vectors(tiny, 1)[0], timeout=-1)


def test_batch_with_one_invalid_task(pool, tiny, tiny_batch):
    batch, seeds, expected = tiny_batch
    mixed = list(batch)
    mixed[3] = bad_prices(tiny)
    with pytest.raises(BatchEvaluationError, match="1 of 6 evaluations failed: task 3") as info:
        pool.evaluate_batch(mixed, seeds=seeds)
    err = info.value
    assert list(err.failures) == [3]
    assert isinstance(err.failures[3], PriceError)
    assert err.failures[3].task_index == 3
    assert err.results[3] is None
    assert [r for i, r in enumerate(err.results) if i != 3] == [
        r for i, r in enumerate(expected) if i != 3
    ]


def test_exception_inside_worker_keeps_type_message_and_index(pool, tiny):
    # Input the parent would reject cannot reach a worker through the public API, so
    # corrupt a validated task on its way: the worker's evaluator raises.
    task = pool._make_task(price_vectors(tiny, 1)[0], 0, index=5)
    task.prices["A"] = np.full(tiny.n_periods, np.nan)
    pool._backend.submit(task)
    exc = task.future.exception(timeout=60)
    assert type(exc) is PriceError
    assert "prices['A'] period 0 is not finite" in str(exc)
    assert "Traceback" in str(exc.__cause__)  # the worker's traceback travels along
    from evcs_gym.parallel.pool import _tag

    assert _tag(exc, 5).task_index == 5


def test_worker_that_cannot_build_its_evaluator(tiny):
    broken = dataclasses.replace(tiny, initial_route_choice=tiny.initial_route_choice + 10**6)
    with pytest.raises(ValueError, match="initial_route_choice"):
        ParallelEvaluatorPool(broken, n_workers=1)


# ================================================================== crashes and timeouts
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
    """A task whose workers keep dying fails after crash_retries + 1 attempts."""
    batch = price_vectors(slow_tiny, 1, seed=4)
    with ParallelEvaluatorPool(slow_tiny, n_workers=1, crash_retries=2) as pool:
        future = pool.submit(batch[0], seed=0)
        kills = 0
        deadline = time.monotonic() + 120
        while not future.done() and time.monotonic() < deadline:
            running = pool._backend._running()
            if running:
                os.kill(next(iter(running.values())), signal.SIGKILL)
                kills += 1
                wait_for(lambda: not pool._backend._running() or future.done(), 30)
            time.sleep(0.005)
        exc = future.exception(timeout=60)
        assert isinstance(exc, WorkerCrashedError), exc
        assert kills == 3 and pool.retried == 2


def test_crash_retries_argument(tiny):
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="crash_retries"):
            ParallelEvaluatorPool(tiny, n_workers=1, crash_retries=bad)


def test_idle_worker_killed_is_transparent(pool, tiny_batch):
    batch, seeds, expected = tiny_batch
    victim = pool._worker_pids()[0]
    os.kill(victim, signal.SIGKILL)
    assert wait_for(lambda: not psutil.pid_exists(victim) or _zombie(victim), 10)
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


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


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


# ================================================================== shutdown
def test_shutdown_twice_and_use_after_shutdown(tiny):
    p = ParallelEvaluatorPool(tiny, n_workers=1)
    prices = price_vectors(tiny, 1)[0]
    p.evaluate(prices)
    p.shutdown()
    p.shutdown()
    assert p.closed
    with pytest.raises(PoolClosedError):
        p.evaluate(prices)
    with pytest.raises(PoolClosedError):
        p.submit(prices)
    with pytest.raises(PoolClosedError):
        p.evaluate_batch([prices])
    with pytest.raises(PoolClosedError):
        p.map_unordered([prices])


def test_no_child_processes_left(tiny):
    before = children()
    with ParallelEvaluatorPool(tiny, n_workers=2) as p:
        workers = p._worker_pids()
        assert set(workers) <= set(children())
        p.evaluate_batch(price_vectors(tiny, 2))
    after = children()
    assert not set(workers) & set(after)
    new = [proc for pid, proc in after.items() if pid not in before]
    assert all(helper_process(proc) for proc in new), new


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


def test_import_does_not_import_ray():
    code = "import sys, evcs_gym; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_ray_raises_dependency_not_installed(tiny, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` -> ImportError
    monkeypatch.delitem(sys.modules, "evcs_gym.parallel.ray_backend", raising=False)
    with pytest.raises(DependencyNotInstalled, match=r'pip install "evcs-gym\[ray\]"'):
        ParallelEvaluatorPool(tiny, n_workers=1, backend="ray")


# ================================================================== Ray
# pytest-timeout's default SIGALRM cannot interrupt a blocking ray.get: use its thread
# method (dump stacks, end the run) so that a hang fails instead of blocking.
ray_timeout = pytest.mark.timeout(120, method="thread")


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
