"""Parallel evaluation: many price profiles at once, on local processes or a Ray cluster.

:class:`ParallelEvaluatorPool` runs :meth:`EVCSRewardEvaluator.evaluate
<evcs_gym.ue.evaluator.EVCSRewardEvaluator.evaluate>` in worker processes, each holding one
evaluator built once from the :class:`~evcs_gym.network.NetworkData` (sent once per
worker, never per task). Results are bit-identical to the serial evaluator: the
evaluation is a pure function of (scenario, prices, seed).

Backends:

* ``"process"`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` whose
  ``initializer`` builds the evaluator; start method ``forkserver`` (``spawn`` where
  there is none), with ``evcs_gym`` preloaded in the fork server so that a new worker
  starts in milliseconds.
* ``"ray"`` (``pip install "evcs-gym[ray]"``): one Ray actor per worker; the
  NetworkData is put in the object store once. ``address=None`` starts a local Ray
  (or uses the one already initialised), ``address="auto"`` / ``"ray://host:10001"``
  joins a cluster.

Example (a script; the ``__main__`` guard is required, see below)::

    import numpy as np
    import evcs_gym

    if __name__ == "__main__":
        nd = evcs_gym.load_scenario("tiny")
        rng = np.random.default_rng(0)
        batch = [{a: rng.uniform(0.8, 1.6, nd.n_periods) for a in nd.agent_names}
                 for _ in range(4)]
        with evcs_gym.ParallelEvaluatorPool(nd, n_workers=2) as pool:
            results = pool.evaluate_batch(batch, seeds=0)        # input order
            for i, res in pool.map_unordered(batch, seeds=0):    # as they complete
                print(i, res.rewards)
            future = pool.submit(batch[0], seed=1)               # concurrent.futures.Future
        assert results[0] == evcs_gym.EVCSRewardEvaluator(nd).evaluate(batch[0], seed=0)

**The** ``if __name__ == "__main__":`` **guard.** Worker processes are started with
``forkserver`` or ``spawn``, which import the main script again in every worker. A
script that creates a pool at module level without the guard would try to start pools
recursively (``RuntimeError: An attempt has been made to start a new process before
the current process has finished its bootstrapping phase``). Notebooks and
``python -c`` need no guard.

**Faults.** Input is validated in the parent: bad prices raise ``PriceError`` (naming
station and period) before anything is sent. An exception raised inside a worker
reaches the caller with its original type and message; in batches it also carries the
task index (``exc.task_index`` and a note). :meth:`~ParallelEvaluatorPool.evaluate_batch`
raises one :class:`~evcs_gym.errors.BatchEvaluationError` holding the completed results
and the failures. A worker that dies (killed, segfault, out of memory) fails the task it
held with :class:`~evcs_gym.errors.WorkerCrashedError` as soon as the death is seen; the
pool starts new workers and re-runs, transparently, the other tasks that the broken
executor had queued or running elsewhere (a ProcessPoolExecutor stops every worker
when one dies). A call with ``timeout`` raises the builtin ``TimeoutError`` and replaces
the workers that ran its unfinished tasks.

**Processes left after** :meth:`~ParallelEvaluatorPool.shutdown`: none of the pool's
workers. With the process backend, Python's multiprocessing keeps two helper processes
for the life of the interpreter, shared with any other user of multiprocessing: the
fork server (``from multiprocessing.forkserver import main``; started by the first
pool, reused by later ones) and the resource tracker
(``from multiprocessing.resource_tracker import main``). A Ray pool that started Ray
stops it, with all its processes; one that joined a running Ray leaves it running.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    CancelledError,
    Future,
    wait,
)
from functools import partial
from typing import TYPE_CHECKING, Any

from evcs_gym.errors import BatchEvaluationError, PoolClosedError
from evcs_gym.network import NetworkData
from evcs_gym.parallel.backend import Backend, Task, settle, usable_cpu_count
from evcs_gym.seeds import broadcast_seeds, check_seed, check_seeds
from evcs_gym.ue.prices import price_matrix
from evcs_gym.ue.result import EvalResult

if TYPE_CHECKING:
    from evcs_gym.ue.averaging import SeedAverage

__all__ = ["ParallelEvaluatorPool", "usable_cpu_count"]

_BACKENDS = ("process", "ray")


def _tag(exc: BaseException, index: int | None) -> BaseException:
    """Attach the task index to a task's exception (attribute ``task_index`` and a note)."""
    if index is None or getattr(exc, "task_index", None) == index:
        return exc
    try:
        exc.task_index = index  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - exceptions with __slots__
        return exc
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(f"(raised by pool task {index})")
    return exc


class ParallelEvaluatorPool:
    """Evaluates price profiles of one scenario in parallel worker processes.

    Each worker holds one :class:`~evcs_gym.ue.evaluator.EVCSRewardEvaluator`; results are
    bit-identical to ``EVCSRewardEvaluator(network_data).evaluate(prices, seed)``.
    Thread-safe. Use it as a context manager, or call :meth:`shutdown`. Scripts must
    create it under ``if __name__ == "__main__":`` (see the module docstring).

    Args:
        network_data: the scenario (:func:`evcs_gym.load_scenario`).
        n_workers: worker processes / actors; default the CPUs this process may use
            (``len(os.sched_getaffinity(0))``), or with ``backend="ray"`` and an
            ``address``, the CPUs of the Ray cluster.
        backend: ``"process"`` (local ``ProcessPoolExecutor``) or ``"ray"``.
        address: Ray only: ``None`` starts a local Ray with ``num_cpus=n_workers``
            unless Ray is already initialised; ``"auto"`` or ``"ray://host:port"`` joins
            a running cluster. A pool stops Ray on shutdown only if it started it.
        clip_prices: clip out-of-bound prices into the bounds instead of raising
            ``PriceError`` (as ``EVCSRewardEvaluator(clip_prices=...)``).
        start_method: process only: multiprocessing start method; default
            ``"forkserver"``, or ``"spawn"`` where there is no fork server.
        ray_init_kwargs: Ray only: extra keyword arguments for ``ray.init`` when the
            pool initialises Ray (e.g. ``runtime_env``, ``object_store_memory``).
        crash_retries: how many times an evaluation whose worker died under it (killed,
            out of memory) is run again on a new worker before the caller gets
            :class:`~evcs_gym.errors.WorkerCrashedError`. Evaluations are pure, so a
            re-run answers the same bits; an evaluation that kills every worker it runs
            on still fails after ``crash_retries + 1`` attempts. Default 0: every crash
            reaches the caller.

    The constructor returns once every worker has built its evaluator.

    Raises:
        ValueError: invalid ``n_workers``, ``backend`` or an option of the other backend.
        DependencyNotInstalled: ``backend="ray"`` without Ray installed.
    """

    def __init__(
        self,
        network_data: NetworkData,
        n_workers: int | None = None,
        backend: str = "process",
        *,
        address: str | None = None,
        clip_prices: bool = False,
        start_method: str | None = None,
        ray_init_kwargs: Mapping[str, Any] | None = None,
        crash_retries: int = 0,
    ) -> None:
        if (
            isinstance(crash_retries, bool)
            or not isinstance(crash_retries, int)
            or crash_retries < 0
        ):
            raise ValueError(
                f"`crash_retries` must be a non-negative integer, got {crash_retries!r}"
            )
        if not isinstance(network_data, NetworkData):
            raise TypeError(
                "`network_data` must be a NetworkData (evcs_gym.load_scenario(...)), "
                f"got {type(network_data).__name__}"
            )
        if backend not in _BACKENDS:
            raise ValueError(f"`backend` must be one of {list(_BACKENDS)}, got {backend!r}")
        if n_workers is not None and (
            isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1
        ):
            raise ValueError(f"`n_workers` must be a positive integer or None, got {n_workers!r}")
        if backend != "ray" and (address is not None or ray_init_kwargs is not None):
            raise ValueError("`address` and `ray_init_kwargs` apply to backend='ray' only")
        if backend != "process" and start_method is not None:
            raise ValueError("`start_method` applies to backend='process' only")
        self.network = network_data
        self.clip_prices = bool(clip_prices)
        self.crash_retries = crash_retries
        self.backend = backend
        self._ids = itertools.count()
        self._closed = False
        self._close_lock = threading.Lock()
        self._backend: Backend
        if backend == "process":
            from evcs_gym.parallel.process_backend import _ProcessBackend

            self._backend = _ProcessBackend(
                network_data, n_workers or usable_cpu_count(), self.clip_prices, start_method
            )
        else:
            from evcs_gym.parallel.ray_backend import (
                RayBackend,  # lazy: `import evcs_gym` needs no Ray
            )

            self._backend = RayBackend(
                network_data,
                n_workers,
                self.clip_prices,
                address=address,
                init_kwargs=ray_init_kwargs,
            )

    # ------------------------------------------------------------------ properties
    @property
    def n_workers(self) -> int:
        """Number of worker processes (or Ray actors)."""
        return self._backend.n_workers

    @property
    def closed(self) -> bool:
        """Whether :meth:`shutdown` has been called."""
        return self._closed

    @property
    def restarts(self) -> int:
        """How many times workers were replaced after a crash or a timeout."""
        return self._backend.restarts

    @property
    def retried(self) -> int:
        """How many evaluations were run again after their worker died
        (``crash_retries``)."""
        return self._backend.retried

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"ParallelEvaluatorPool({self.network.name!r}, n_workers={self.n_workers}, "
            f"backend={self.backend!r}, {state})"
        )

    # ------------------------------------------------------------------ API
    def submit(self, prices: Mapping[str, Any], seed: int | None = None) -> Future:
        """Start one evaluation; return a :class:`concurrent.futures.Future` of its EvalResult.

        Prices and seed are validated now: invalid input raises here (``PriceError``,
        ``ValueError``) and nothing is sent. Errors inside the worker, a crashed worker
        (``WorkerCrashedError``) included, resolve the future with that exception.
        Cancelling the future drops the task if it has not started.
        """
        self._check_open()
        task = self._make_task(prices, seed)
        self._backend.submit(task)
        return task.future

    def evaluate(
        self, prices: Mapping[str, Any], seed: int | None = None, timeout: float | None = None
    ) -> EvalResult:
        """Evaluate one price profile in a worker (same result as the serial evaluator).

        Args:
            prices: ``{station: (n_periods,) prices}``.
            seed: non-negative integer; ``None`` the scenario's default seed.
            timeout: seconds to wait; then ``TimeoutError`` and the worker running the
                task is replaced.

        Raises:
            PriceError: invalid prices (before anything is sent).
            WorkerCrashedError: the worker died during the evaluation.
            TimeoutError: ``timeout`` exceeded.
            Exception: whatever the evaluation raised in the worker, with its own type.
        """
        self._check_open()
        _check_timeout(timeout)
        task = self._make_task(prices, seed)
        self._backend.submit(task)
        self._wait([task], timeout, "evaluate")
        return task.future.result()

    def evaluate_batch(
        self,
        prices_list: Iterable[Mapping[str, Any]],
        seeds: int | Sequence[int | None] | None = None,
        timeout: float | None = None,
    ) -> list[EvalResult]:
        """Evaluate many price profiles at once; results in input order.

        All tasks are submitted at once and the pool balances them over its workers.

        Args:
            prices_list: price mappings, one per task.
            seeds: ``None`` (the scenario's default seed for all), one integer for all,
                or one seed per task.
            timeout: seconds for the whole batch; then ``TimeoutError`` and the workers
                running unfinished tasks are replaced.

        Raises:
            BatchEvaluationError: one or more tasks failed (invalid prices, an error in a
                worker, a crashed worker); ``.results`` holds the completed results
                (``None`` where failed), ``.failures`` maps task index -> exception. The
                valid tasks of the batch are still evaluated.
            TimeoutError: ``timeout`` exceeded.
        """
        _check_timeout(timeout)
        tasks = self._submit_many(prices_list, seeds)
        self._wait(tasks, timeout, "evaluate_batch")
        results: list[EvalResult | None] = []
        failures: dict[int, BaseException] = {}
        for i, task in enumerate(tasks):
            exc = _exception_of(task.future)
            if exc is None:
                results.append(task.future.result())
            else:
                results.append(None)
                failures[i] = _tag(exc, i)
        if failures:
            shown = "; ".join(
                f"task {i}: {type(e).__name__}: {e}" for i, e in list(failures.items())[:3]
            )
            more = f"; and {len(failures) - 3} more" if len(failures) > 3 else ""
            raise BatchEvaluationError(
                f"{len(failures)} of {len(tasks)} evaluations failed: {shown}{more}",
                results,
                failures,
            ) from next(iter(failures.values()))
        return results  # type: ignore[return-value]

    def evaluate_seeds(
        self,
        prices: Mapping[str, Any],
        seeds: int | Sequence[int] = 6,
        timeout: float | None = None,
    ) -> SeedAverage:
        """Evaluate one profile at several seeds in parallel: means and standard errors.

        Same numbers as :meth:`EVCSRewardEvaluator.evaluate_seeds`.

        Args:
            prices: ``{station: (n_periods,) prices}``.
            seeds: distinct non-negative seeds, or a count ``n`` for ``0..n-1``.
            timeout: as for :meth:`evaluate_batch`.

        Returns:
            :class:`evcs_gym.ue.averaging.SeedAverage`.
        """
        from evcs_gym.ue.averaging import SeedAverage

        seed_list = check_seeds(seeds)
        results = self.evaluate_batch([prices] * len(seed_list), seeds=seed_list, timeout=timeout)
        return SeedAverage(results)

    def map_unordered(
        self,
        prices_list: Iterable[Mapping[str, Any]],
        seeds: int | Sequence[int | None] | None = None,
        *,
        timeout: float | None = None,
        return_exceptions: bool = False,
    ) -> Iterator[tuple[int, EvalResult]]:
        """Submit all tasks now; iterate ``(index, EvalResult)`` in order of completion.

        Each index is yielded once. A failed task raises its exception (tagged with
        ``task_index``) from the iterator, or with ``return_exceptions=True`` is yielded
        as ``(index, exception)``. Leaving the loop early cancels the tasks not started.

        Args:
            prices_list, seeds: as in :meth:`evaluate_batch`.
            timeout: seconds from this call for all results; then ``TimeoutError`` and
                the workers running unfinished tasks are replaced.
        """
        _check_timeout(timeout)
        tasks = self._submit_many(prices_list, seeds)
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._iter_unordered(tasks, deadline, timeout, return_exceptions)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers. Safe to call twice; later calls raise ``PoolClosedError``.

        Args:
            wait: wait for tasks in flight to finish and for the workers to exit.
            cancel_futures: cancel the tasks that have not started.

        A runaway task holds ``shutdown(wait=True)`` until it ends: bound evaluations
        with ``timeout``. A Ray pool stops Ray only if it started it.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._backend.shutdown(wait, cancel_futures)

    def __enter__(self) -> ParallelEvaluatorPool:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.shutdown(wait=True, cancel_futures=exc_type is not None)

    def _worker_pids(self) -> list[int]:
        """Process ids of the current workers (for tests and benchmarks)."""
        self._check_open()
        return self._backend.worker_pids()

    # ------------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise PoolClosedError("this ParallelEvaluatorPool has been shut down")

    def _make_task(self, prices: Mapping[str, Any], seed: Any, index: int | None = None) -> Task:
        nd = self.network
        matrix = price_matrix(
            prices, nd.agent_names, nd.n_periods, nd.price_bounds, clip=self.clip_prices
        )
        seed = None if seed is None else check_seed(seed)
        task = Task(
            id=next(self._ids),
            prices={a: matrix[i] for i, a in enumerate(nd.agent_names)},
            seed=seed,
            future=Future(),
            index=index,
            crash_retries=self.crash_retries,
        )
        task.future.add_done_callback(partial(self._on_outer_done, task))
        return task

    def _on_outer_done(self, task: Task, future: Future) -> None:
        if future.cancelled():  # cancelled by the caller: drop the task if not started
            # we own this future (no executor does it for us): move it to
            # CANCELLED_AND_NOTIFIED so concurrent.futures.wait / as_completed see it done
            future.set_running_or_notify_cancel()
            self._backend.cancel([task])

    def _submit_many(
        self,
        prices_list: Iterable[Mapping[str, Any]],
        seeds: int | Sequence[int | None] | None,
    ) -> list[Task]:
        self._check_open()
        if isinstance(prices_list, Mapping):
            raise TypeError(
                "`prices_list` must be a sequence of price mappings, got one mapping "
                "(use evaluate() for a single profile)"
            )
        items = list(prices_list)
        seed_list = broadcast_seeds(seeds, len(items))
        tasks = []
        for i, (prices, seed) in enumerate(zip(items, seed_list)):
            try:
                task = self._make_task(prices, seed, index=i)
            except ValueError as e:  # PriceError or bad seed: this task fails, others run
                task = Task(id=next(self._ids), prices={}, seed=None, future=Future(), index=i)
                task.future.set_exception(_tag(e, i))
            else:
                self._backend.submit(task)
            tasks.append(task)
        return tasks

    def _wait(self, tasks: list[Task], timeout: float | None, what: str) -> None:
        _check_timeout(timeout)
        futures = [t.future for t in tasks]
        try:
            _, not_done = wait(futures, timeout)
        except BaseException:  # KeyboardInterrupt: stop the work this call owns
            self._abandon([t for t in tasks if not t.future.done()])
            raise
        if not_done:
            late = [t for t in tasks if not t.future.done()]
            msg = _timeout_message(what, late, len(tasks), timeout)
            self._abandon(late, TimeoutError(msg))
            raise TimeoutError(msg)

    def _abandon(self, tasks: list[Task], exc: BaseException | None = None) -> None:
        """Fail ``tasks`` with ``exc`` (cancel them if None); replace the workers running them."""
        for t in tasks:
            if exc is None:
                t.future.cancel()
            else:
                settle(t.future, exc=exc)
        if tasks and not self._closed:
            self._backend.abandon(tasks)

    def _iter_unordered(
        self,
        tasks: list[Task],
        deadline: float | None,
        timeout: float | None,
        return_exceptions: bool,
    ) -> Iterator[tuple[int, Any]]:
        pending = {t.future: i for i, t in enumerate(tasks)}
        try:
            while pending:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    done, _ = wait(list(pending), remaining, return_when=FIRST_COMPLETED)
                except BaseException:  # KeyboardInterrupt: stop the work this iterator owns
                    late = [tasks[i] for i in pending.values()]
                    pending.clear()
                    self._abandon(late)
                    raise
                if not done:
                    late = [tasks[i] for i in pending.values()]
                    msg = _timeout_message("map_unordered", late, len(tasks), timeout)
                    pending.clear()
                    self._abandon(late, TimeoutError(msg))
                    raise TimeoutError(msg)
                for future in sorted(done, key=pending.__getitem__):
                    i = pending.pop(future)
                    exc = _exception_of(future)
                    if exc is None:
                        yield i, future.result()
                    elif return_exceptions:
                        yield i, _tag(exc, i)
                    else:
                        raise _tag(exc, i)
        finally:
            if pending:  # left early or a task failed: drop what has not started
                left = [tasks[i] for i in pending.values()]
                for t in left:
                    t.future.cancel()


def _check_timeout(timeout: Any) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ValueError(f"`timeout` must be None or a non-negative number, got {timeout!r}")


def _exception_of(future: Future) -> BaseException | None:
    return CancelledError("the task was cancelled") if future.cancelled() else future.exception()


def _timeout_message(what: str, late: list[Task], total: int, timeout: float | None) -> str:
    idx = [t.index for t in late if t.index is not None]
    which = f" (tasks {idx[:10]}{' ...' if len(idx) > 10 else ''})" if idx else ""
    return (
        f"{what}: {len(late)} of {total} evaluation(s){which} unfinished after {timeout} s; "
        "the workers running them were replaced"
    )
