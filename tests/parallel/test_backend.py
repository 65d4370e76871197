"""The pool-backend contract (evcs_gym.parallel.backend): ``settle`` resolves a caller's
future once and never fails on one already done; the default worker count; a Task."""

from __future__ import annotations

import os
from concurrent.futures import Future

import numpy as np
import pytest

from evcs_gym.parallel.backend import Task, settle, usable_cpu_count


def test_settle_resolves_a_pending_future_with_a_result_or_an_error():
    ok, failed = Future(), Future()
    settle(ok, result=42)
    error = ValueError("boom")
    settle(failed, exc=error)
    assert ok.result(timeout=0) == 42
    assert failed.exception(timeout=0) is error
    with pytest.raises(ValueError, match="boom"):
        failed.result(timeout=0)


def test_settle_leaves_a_done_future_as_it_is():
    """A future cancelled by its caller, or already failed by a timeout, keeps its state:
    a late result from a worker is dropped without an error."""
    cancelled = Future()
    assert cancelled.cancel()
    settle(cancelled, result=1)
    settle(cancelled, exc=RuntimeError("late"))
    assert cancelled.cancelled()
    timed_out = Future()
    settle(timed_out, exc=TimeoutError("too slow"))
    settle(timed_out, result="late")
    assert isinstance(timed_out.exception(timeout=0), TimeoutError)


def test_usable_cpu_count_is_this_processs_affinity():
    assert usable_cpu_count() == len(os.sched_getaffinity(0)) >= 1


def test_a_task_starts_with_no_backend_state():
    task = Task(id=7, prices={"A": np.ones(4)}, seed=None, future=Future())
    assert (task.index, task.inner, task.generation) == (None, None, -1)
    assert (task.resubmits, task.crash_retries) == (0, 0)
    assert task != Task(id=7, prices=task.prices, seed=None, future=task.future)  # identity
