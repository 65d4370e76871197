"""Process backend of :class:`~evcs_gym.parallel.pool.ParallelEvaluatorPool`.

A :class:`concurrent.futures.ProcessPoolExecutor` whose ``initializer`` builds one
:class:`~evcs_gym.ue.evaluator.EVCSRewardEvaluator` per worker (the NetworkData travels once
per worker, in the initializer's arguments). A small shared-memory table of
(pid, running task) tells a dead worker from the live ones when the executor breaks, so
only the task the dead worker held fails (``WorkerCrashedError``) and the others are
re-run on a rebuilt executor. See :mod:`evcs_gym.parallel.pool` for the behaviour users see.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import (
    Future,
    ProcessPoolExecutor,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from multiprocessing.context import BaseContext
from typing import Any

import numpy as np

from evcs_gym.errors import PoolClosedError, WorkerCrashedError
from evcs_gym.network import NetworkData
from evcs_gym.parallel.backend import Task, settle
from evcs_gym.ue.evaluator import EVCSRewardEvaluator

__all__: list[str] = []

# Worker side. One evaluator per worker process, built by the executor's initializer.
# Two arrays in shared memory link parent and workers:
# * `slots`: [pid, running task id] per worker, written by the worker, so that when a
#   worker dies the parent knows which task it held;
# * `cancelled`: a ring of cancelled task ids (id at position id % size), written by the
#   parent; a worker skips a task found there. The parent never cancels the executor's
#   own futures: on Python 3.11 a future cancelled while still queued makes a later
#   BrokenProcessPool crash the executor's manager thread (InvalidStateError in
#   terminate_broken), which would leave every other future pending forever.

_MAX_RESUBMITS = 3
"""How often a task is re-run after its executor broke while it was queued or running on
another worker (not on the worker that died) before it fails with WorkerCrashedError."""
_READY_TIMEOUT = 600.0
_IDLE = -1
_CANCEL_RING = 4096
"""Size of the shared ring of cancelled task ids that workers check before starting."""


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {
            "SIGKILL": " (e.g. the out-of-memory killer, or kill -9)",
            "SIGSEGV": " (segmentation fault)",
        }.get(name, "")
        return f"killed by {name}{hint}"
    return f"exit code {code}"


@dataclass
class _WorkerState:
    evaluator: EVCSRewardEvaluator | None
    error: BaseException | None
    slots: Any
    slot: int
    ready: Any
    cancelled: Any


_STATE: _WorkerState | None = None


def _exit_with_parent(parent_pid: int, interval: float = 1.0) -> None:
    """Worker thread: end this process once the process that made the pool is gone.

    A pool's owner killed by a signal (``kill``, ``timeout``, a job scheduler) runs no
    clean-up, and ``ProcessPoolExecutor`` workers block forever on a task queue whose
    write end they hold themselves: without this they would outlive it.
    """
    while _process_exists(parent_pid):
        time.sleep(interval)
    os._exit(1)


def _process_exists(pid: int) -> bool:
    """Whether ``pid`` names a live process (signal 0 probes without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    return True


def _init_worker(
    network: NetworkData,
    clip_prices: bool,
    slots: Any,
    ready: Any,
    cancelled: Any,
    parent_pid: int | None = None,
) -> None:
    global _STATE
    if parent_pid is not None:
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    try:
        evaluator, error = EVCSRewardEvaluator(network, clip_prices=clip_prices), None
    except Exception as e:  # reported by every task instead of breaking the executor
        evaluator, error = None, e
    with ready.get_lock():
        slot = ready.value
        ready.value += 1
    if slot < len(slots) // 2:
        slots[2 * slot + 1] = _IDLE
        slots[2 * slot] = os.getpid()
    else:  # pragma: no cover - more processes than slots: not tracked
        slot = -1
    _STATE = _WorkerState(evaluator, error, slots, slot, ready, cancelled)


def _worker_ready(n_workers: int) -> int:
    """Start-up barrier: returns once ``n_workers`` workers have run their initializer."""
    st = _STATE
    assert st is not None
    deadline = time.monotonic() + _READY_TIMEOUT
    while st.ready.value < n_workers and time.monotonic() < deadline:
        time.sleep(0.005)
    if st.error is not None:
        raise st.error
    return os.getpid()


def _evaluate_in_worker(task_id: int, prices: dict[str, np.ndarray], seed: int | None) -> Any:
    st = _STATE
    assert st is not None
    if st.error is not None:
        raise st.error
    assert st.evaluator is not None
    if st.slot >= 0:
        st.slots[2 * st.slot + 1] = task_id  # first: the parent reads this, then kills
    try:
        if st.cancelled[task_id % len(st.cancelled)] == task_id:
            return None  # cancelled or abandoned before it started
        return st.evaluator.evaluate(prices, seed)
    finally:
        if st.slot >= 0:
            st.slots[2 * st.slot + 1] = _IDLE


def _mp_context(start_method: str | None) -> BaseContext:
    ctx: BaseContext
    if start_method is None:
        try:
            ctx = multiprocessing.get_context("forkserver")
        except ValueError:  # pragma: no cover - no fork server (Windows)
            ctx = multiprocessing.get_context("spawn")
    else:
        ctx = multiprocessing.get_context(start_method)
    if ctx.get_start_method() == "forkserver":
        # Import evcs_gym (numpy, UXsim) once in the fork server rather than in each
        # worker. Only takes effect if the fork server is not running yet.
        from multiprocessing import forkserver

        current = list(getattr(forkserver._forkserver, "_preload_modules", ["__main__"]))
        if "evcs_gym.ue.evaluator" not in current:
            ctx.set_forkserver_preload([*current, "evcs_gym.ue.evaluator"])
    return ctx


class _ProcessBackend:
    """ProcessPoolExecutor, rebuilt when it breaks; knows which task each worker runs."""

    def __init__(
        self, network: NetworkData, n_workers: int, clip_prices: bool, start_method: str | None
    ) -> None:
        self.n_workers = n_workers
        self.restarts = 0
        self.retried = 0
        self._network = network
        self._clip = clip_prices
        self._ctx = _mp_context(start_method)
        self._lock = threading.RLock()
        self._tasks: dict[int, Task] = {}  # submitted, not yet settled by the backend
        self._killed: set[int] = set()  # pids we killed on purpose (timeouts)
        self._retired: list[ProcessPoolExecutor] = []
        self._cancelled = self._ctx.RawArray("q", _CANCEL_RING)
        for k in range(_CANCEL_RING):
            self._cancelled[k] = _IDLE
        self._closed = False
        self._generation = 0
        self._executor, self._slots = self._new_executor()
        self._wait_ready()

    # ---------------------------------------------------------------- executor
    def _new_executor(self) -> tuple[ProcessPoolExecutor, Any]:
        slots = self._ctx.RawArray("q", 2 * self.n_workers)
        for k in range(self.n_workers):
            slots[2 * k + 1] = _IDLE
        ready = self._ctx.Value("i", 0)
        executor = ProcessPoolExecutor(
            max_workers=self.n_workers,
            mp_context=self._ctx,
            initializer=_init_worker,
            initargs=(self._network, self._clip, slots, ready, self._cancelled, os.getpid()),
        )
        return executor, slots

    def _wait_ready(self) -> None:
        futures = [
            self._executor.submit(_worker_ready, self.n_workers) for _ in range(self.n_workers)
        ]
        try:
            for f in futures:
                f.result()
        except BrokenProcessPool as e:
            self._executor.shutdown(wait=True)
            raise WorkerCrashedError(f"a worker process died while starting: {e}") from e
        except BaseException:
            self._executor.shutdown(wait=True, cancel_futures=True)
            raise

    def worker_pids(self) -> list[int]:
        with self._lock:
            slots = self._slots
            return [int(slots[2 * k]) for k in range(self.n_workers) if slots[2 * k] > 0]

    def _running(self) -> dict[int, int]:
        """task id -> pid of the worker running it (current executor)."""
        slots = self._slots
        out = {}
        for k in range(self.n_workers):
            pid, task_id = int(slots[2 * k]), int(slots[2 * k + 1])
            if pid > 0 and task_id != _IDLE:
                out[task_id] = pid
        return out

    # ---------------------------------------------------------------- tasks
    def submit(self, task: Task) -> None:
        with self._lock:
            if self._closed:
                raise PoolClosedError("this ParallelEvaluatorPool has been shut down")
            self._tasks[task.id] = task
            self._dispatch(task)

    def _dispatch(self, task: Task) -> None:  # lock held
        try:
            inner = self._executor.submit(_evaluate_in_worker, task.id, task.prices, task.seed)
        except BrokenProcessPool:  # broke while idle, or its callbacks are waiting for us
            self._on_broken(self._generation)
            try:
                inner = self._executor.submit(_evaluate_in_worker, task.id, task.prices, task.seed)
            except (BrokenProcessPool, RuntimeError) as e:  # closed, or no new executor
                self._tasks.pop(task.id, None)
                settle(task.future, exc=WorkerCrashedError(f"no worker processes: {e}"))
                return
        task.inner = inner
        task.generation = self._generation
        inner.add_done_callback(partial(self._inner_done, task, self._generation))

    def _inner_done(self, task: Task, generation: int, inner: Future) -> None:
        # Runs in the executor's manager thread. Never let an exception escape: the
        # caller's future would never resolve.
        try:
            exc = inner.exception()
            if isinstance(exc, BrokenProcessPool):
                self._on_broken(generation)
                return
            with self._lock:
                if self._tasks.get(task.id) is task and task.inner is inner:
                    del self._tasks[task.id]
            if exc is not None:
                settle(task.future, exc=exc)
            elif inner.result() is None:  # skipped by the worker: cancelled
                task.future.cancel()
            else:
                settle(task.future, inner.result())
        except Exception as e:  # pragma: no cover - defensive
            settle(task.future, exc=e)

    def _on_broken(self, generation: int) -> None:
        """The executor of ``generation`` broke: fail the dead worker's task, re-run the rest.

        Called from the first callback of a broken executor, before the executor
        terminates its surviving workers, so the dead ones are told apart from the live.
        """
        failed: list[tuple[Task, BaseException]] = []
        with self._lock:
            if generation != self._generation:
                return  # already handled
            old = self._executor
            dead = _dead_workers(old)
            running = self._running()
            killed = self._killed
            self._killed = set()
            victims = [t for t in self._tasks.values() if t.generation == generation]
            self._retired.append(old)
            restart_error: BaseException | None = None
            if not self._closed:
                try:
                    self._executor, self._slots = self._new_executor()
                    self._generation += 1
                    self.restarts += 1
                except Exception as e:  # pragma: no cover - e.g. out of file descriptors
                    restart_error = e
            for t in victims:
                if t.future.done():
                    self._tasks.pop(t.id, None)
                    continue
                pid = running.get(t.id)
                err: BaseException | None = None
                crashed_here = pid is not None and pid in dead and pid not in killed
                if (
                    crashed_here
                    and t.crash_retries > 0
                    and not self._closed
                    and restart_error is None
                ):
                    t.crash_retries -= 1  # pure evaluation: run it again on a new worker
                    self.retried += 1
                    self._dispatch(t)
                    continue
                if crashed_here:
                    assert pid is not None  # as `crashed_here` says
                    err = WorkerCrashedError(
                        f"worker process {pid} died ({_exit_reason(dead[pid])}) while "
                        f"evaluating this task (seed={t.seed}); the pool started new workers"
                    )
                elif self._closed or restart_error is not None:
                    err = WorkerCrashedError(
                        "a worker process died while this task was queued or running and "
                        "the pool could not start new workers"
                        + (f": {restart_error}" if restart_error else " (pool shut down)")
                    )
                elif t.resubmits >= _MAX_RESUBMITS:
                    err = WorkerCrashedError(
                        f"worker processes died {t.resubmits + 1} times while this task was "
                        "queued or running; giving up"
                    )
                if err is None:
                    t.resubmits += 1
                    self._dispatch(t)
                else:
                    self._tasks.pop(t.id, None)
                    failed.append((t, err))
        for t, err in failed:
            settle(t.future, exc=err)

    def _mark_cancelled(self, tasks: Sequence[Task]) -> None:
        ring = self._cancelled
        for t in tasks:
            ring[t.id % _CANCEL_RING] = t.id

    def cancel(self, tasks: Sequence[Task]) -> None:
        """Skip ``tasks`` if they have not started; running ones finish (result dropped)."""
        self._mark_cancelled(tasks)

    def abandon(self, tasks: Sequence[Task]) -> None:
        """Forget ``tasks`` (their futures are settled) and kill the workers running them."""
        with self._lock:
            self._mark_cancelled(tasks)  # first: then a worker either skips it or shows it
            running = self._running()
            kill = set()
            for t in tasks:
                self._tasks.pop(t.id, None)
                pid = running.get(t.id)
                if pid is not None and t.generation == self._generation:
                    kill.add(pid)
            self._killed |= kill
        for pid in kill:
            try:
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            except (ProcessLookupError, PermissionError):
                pass

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        with self._lock:
            self._closed = True
            executor = self._executor
            retired, self._retired = self._retired, []
            queued = list(self._tasks.values()) if cancel_futures else []
        if queued:
            running = set(self._running())
            queued = [t for t in queued if t.id not in running]
            self._mark_cancelled(queued)
            for t in queued:
                t.future.cancel()
        # a broken executor, or one shut down with wait, should have no worker left
        _shut_down(executor, wait, reap=wait or bool(getattr(executor, "_broken", False)))
        for old in retired:  # broken
            _shut_down(old, wait, reap=True)


def _worker_processes(executor: ProcessPoolExecutor) -> dict[int, Any]:
    """pid -> worker process of the executor (empty once it is shut down)."""
    return dict(getattr(executor, "_processes", None) or {})


def _shut_down(executor: ProcessPoolExecutor, wait: bool, reap: bool) -> None:
    """``executor.shutdown(wait=wait)``, then with ``reap`` kill its workers still alive."""
    processes = list(_worker_processes(executor).values())  # shutdown drops them
    executor.shutdown(wait=wait)
    if reap:
        _kill_leftovers(processes)


def _kill_leftovers(processes: Sequence[Any], grace: float = 1.0) -> None:
    """Kill the processes of a broken or shut-down executor that are still alive.

    A broken ``ProcessPoolExecutor`` terminates the workers it knows, but (CPython
    3.11's ``terminate_broken``) it marks itself broken without its lock: a ``submit``
    racing with the break can spawn a worker after that. Such a worker waits on its task
    queue forever, and the interpreter's exit joins it (a CI run hung so, under load).
    """
    deadline = time.monotonic() + grace
    for proc in processes:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(grace)


def _dead_workers(executor: ProcessPoolExecutor) -> dict[int, int | None]:
    """pid -> exit code of the executor's worker processes that have exited."""
    processes = _worker_processes(executor)
    if not processes:
        return {}
    sentinels = {p.sentinel: (pid, p) for pid, p in processes.items()}
    ready = multiprocessing.connection.wait(list(sentinels), timeout=0)
    out: dict[int, int | None] = {}
    for s in ready:
        pid, p = sentinels[s]
        p.join(timeout=1.0)
        out[pid] = p.exitcode
    return out
