"""ParallelEvaluatorPool (evcs_gym.parallel.pool): arguments, results bit for bit like the
serial evaluator, futures, bad input and errors, shutdown. Real worker processes, no mocks.

Most tests use the ``tiny`` scenario; the fixtures (``pool``, ``slow_pool``,
``tiny_batch``) are in ``tests/parallel/conftest.py``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from concurrent.futures import Future, as_completed

import numpy as np
import pytest

import evcs_gym
from evcs_gym import (
    BatchEvaluationError,
    DependencyNotInstalled,
    EVCSRewardEvaluator,
    ParallelEvaluatorPool,
    PoolClosedError,
    PriceError,
)
from tests.helpers import (
    AVERAGE_PRICES,
    TASTE_PRICES,
    bad_prices,
    children,
    helper_process,
    price_vectors,
    serial,
)

pytestmark = pytest.mark.timeout(120)


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


def test_pool_gives_the_same_average(tiny):
    serial = evcs_gym.EVCSRewardEvaluator(tiny).evaluate_seeds(AVERAGE_PRICES, seeds=3)
    with evcs_gym.ParallelEvaluatorPool(tiny, n_workers=2) as pool:
        parallel = pool.evaluate_seeds(AVERAGE_PRICES, seeds=3)
    assert serial.results == parallel.results
    assert serial.to_dict() == parallel.to_dict()


def test_parallel_workers_see_the_same_drivers(tasty):
    batch = [TASTE_PRICES, {"A": [0.7] * 4, "B": [1.9] * 4}]
    serial = evcs_gym.EVCSRewardEvaluator(tasty)
    with evcs_gym.ParallelEvaluatorPool(tasty, n_workers=2) as pool:
        results = pool.evaluate_batch(batch, seeds=1)
    assert results == [serial.evaluate(p, seed=1) for p in batch]


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


def test_import_does_not_import_ray():
    code = "import sys, evcs_gym; assert 'ray' not in sys.modules, 'ray imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_ray_raises_dependency_not_installed(tiny, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` -> ImportError
    monkeypatch.delitem(sys.modules, "evcs_gym.parallel.ray_backend", raising=False)
    with pytest.raises(DependencyNotInstalled, match=r'pip install "evcs-gym\[ray\]"'):
        ParallelEvaluatorPool(tiny, n_workers=1, backend="ray")
