"""Ray backend of :class:`~evcs_gym.parallel.pool.ParallelEvaluatorPool`: one actor per worker.

Imported only when a pool is created with ``backend="ray"``, so ``import evcs_gym``
never imports Ray. The NetworkData is put in the object store once and every actor
receives the reference; each actor builds one evaluator. The pool keeps at most one
task per actor and hands the next queued task to whichever actor finishes first, so
evaluations of uneven cost balance as in a process pool. An actor that dies fails
only the task it held (``WorkerCrashedError``) and is replaced by a new actor. Idle
actors are not watched: one that dies while idle fails the next task sent to it the
same way (Ray cannot tell whether that task had started, so it is not re-run).

Every machine of a cluster needs ``evcs-gym`` installed (same version), or a Ray
``runtime_env`` that provides it (``ray_init_kwargs={"runtime_env": ...}``).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

from evcs_gym.errors import DependencyNotInstalled, PoolClosedError, WorkerCrashedError
from evcs_gym.network import NetworkData
from evcs_gym.parallel.backend import Task, settle, usable_cpu_count
from evcs_gym.ue.evaluator import EVCSRewardEvaluator

try:
    import ray
    from ray import exceptions as ray_exceptions
except ImportError as e:  # pragma: no cover - exercised with Ray hidden
    raise DependencyNotInstalled(
        'backend="ray" needs Ray, which is not installed: pip install "evcs-gym[ray]"'
    ) from e

__all__ = ["RayBackend"]


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a Ray actor (set as its ``__cause__``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _EvaluatorActor:
    """Holds one evaluator; construction errors are reported by every call."""

    def __init__(self, network: NetworkData, clip_prices: bool) -> None:
        try:
            self._evaluator: EVCSRewardEvaluator | None = EVCSRewardEvaluator(
                network, clip_prices=clip_prices
            )
            self._error: BaseException | None = None
        except Exception as e:
            self._evaluator, self._error = None, e

    def ready(self) -> int:
        if self._error is not None:
            raise self._error
        return os.getpid()

    def evaluate(self, prices: Mapping[str, Any], seed: int | None) -> Any:
        if self._error is not None:
            raise self._error
        assert self._evaluator is not None
        return self._evaluator.evaluate(prices, seed)


_RemoteActor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_EvaluatorActor)


class _Slot:
    """One worker position: the current actor and the task it runs."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.ready_ref = handle.ready.remote()  # runs first on the actor: its pid
        self.task: Task | None = None


class RayBackend:
    """Actors holding evaluators, with a queue that feeds whichever actor is free."""

    def __init__(
        self,
        network: NetworkData,
        n_workers: int | None,
        clip_prices: bool,
        *,
        address: str | None,
        init_kwargs: Mapping[str, Any] | None,
    ) -> None:
        self._owns_ray = False
        if not ray.is_initialized():
            kwargs = dict(init_kwargs or {})
            if address is None:
                kwargs.setdefault("num_cpus", n_workers or usable_cpu_count())
                kwargs.setdefault("include_dashboard", False)
            else:
                kwargs["address"] = address
            ray.init(**kwargs)
            self._owns_ray = True
        if n_workers is None:
            if address is None:
                n_workers = usable_cpu_count()
            else:
                n_workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        free = ray.available_resources().get("CPU", 0.0)
        if n_workers > free:
            warnings.warn(
                f"n_workers={n_workers} but the Ray cluster has {free:g} free CPUs; each "
                "worker actor needs one, so the pool waits until enough CPUs are free",
                stacklevel=3,
            )
        self.n_workers = n_workers
        self.restarts = 0
        self.retried = 0
        self._clip = clip_prices
        self._lock = threading.RLock()
        self._pending: deque[Task] = deque()
        self._closed = False
        self._stopped = False
        # Ray runs future callbacks on its own threads; handle completions on ours.
        self._events = ThreadPoolExecutor(1, thread_name_prefix="evcs-ray-pool")
        self._network_ref = ray.put(network)
        self._slots = [_Slot(self._new_actor()) for _ in range(n_workers)]
        try:
            ray.get([s.ready_ref for s in self._slots])
        except BaseException as e:
            self._stop()
            if isinstance(e, ray_exceptions.RayTaskError):
                raise _unwrap(e) from None
            if isinstance(e, ray_exceptions.RayError):
                raise WorkerCrashedError(f"a Ray worker actor failed to start: {e}") from e
            raise
        self._idle: deque[_Slot] = deque(self._slots)

    def _new_actor(self) -> Any:
        return _RemoteActor.options(scheduling_strategy="SPREAD").remote(
            self._network_ref, self._clip
        )

    def worker_pids(self) -> list[int]:
        with self._lock:
            refs = [s.ready_ref for s in self._slots]
        return [int(pid) for pid in ray.get(refs)]

    # ---------------------------------------------------------------- tasks
    def submit(self, task: Task) -> None:
        with self._lock:
            if self._closed:
                raise PoolClosedError("this ParallelEvaluatorPool has been shut down")
            self._pending.append(task)
            self._pump()

    def _pump(self) -> None:  # lock held
        while self._idle and self._pending:
            task = self._pending.popleft()
            if task.future.done():  # cancelled or timed out before it started
                continue
            slot = self._idle.popleft()
            slot.task = task
            ref = slot.handle.evaluate.remote(task.prices, task.seed)
            task.inner = ref
            ref.future().add_done_callback(lambda f, s=slot, t=task: self._post(s, t, f))

    def _post(self, slot: _Slot, task: Task, future: Future) -> None:
        try:
            self._events.submit(self._done, slot, task, future)
        except RuntimeError:  # pool stopped: nothing left to update
            pass

    def _done(self, slot: _Slot, task: Task, future: Future) -> None:
        try:
            exc = future.exception()
            crashed = isinstance(exc, ray_exceptions.RayError) and not isinstance(
                exc, ray_exceptions.RayTaskError
            )
            retry = crashed and task.crash_retries > 0 and not task.future.done()
            with self._lock:
                slot.task = None
                if crashed and not self._stopped:
                    self._replace(slot)
                retry = retry and not self._stopped and not self._closed
                if retry:  # pure evaluation: run it again on the new actor
                    task.crash_retries -= 1
                    self.retried += 1
                    self._pending.appendleft(task)
                if not self._stopped:
                    self._idle.append(slot)
                    self._pump()
            if retry:
                return
            if exc is None:
                settle(task.future, future.result())
            elif isinstance(exc, ray_exceptions.RayTaskError):
                settle(task.future, exc=_unwrap(exc))
            else:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                err = WorkerCrashedError(
                    f"the Ray worker actor died while evaluating this task (seed={task.seed}): "
                    f"{type(exc).__name__}: {first}; the pool replaced the actor"
                )
                err.__cause__ = exc
                settle(task.future, exc=err)
        except Exception as e:  # pragma: no cover - defensive: never leave a future pending
            settle(task.future, exc=e)

    def _replace(self, slot: _Slot) -> None:  # lock held
        try:
            ray.kill(slot.handle, no_restart=True)
        except Exception:  # already gone
            pass
        slot.handle = self._new_actor()
        slot.ready_ref = slot.handle.ready.remote()
        self.restarts += 1

    def cancel(self, tasks: Sequence[Task]) -> None:
        pass  # queued tasks whose future is done are skipped; running ones finish

    def abandon(self, tasks: Sequence[Task]) -> None:
        """Kill the actors running ``tasks`` (their futures are settled); they are replaced."""
        ids = {id(t) for t in tasks}
        with self._lock:
            for slot in self._slots:
                if slot.task is not None and id(slot.task) in ids:
                    try:
                        ray.kill(slot.handle, no_restart=True)
                    except Exception:  # pragma: no cover - already gone
                        pass

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                for task in self._pending:
                    task.future.cancel()
                self._pending.clear()
        if wait:
            self._finish()
        else:
            threading.Thread(target=self._finish, name="evcs-ray-pool-shutdown").start()

    def _finish(self) -> None:
        """Wait for the tasks in flight, then stop the actors (and Ray, if ours)."""
        with self._lock:
            outstanding = [t.future for t in self._pending]
            outstanding += [s.task.future for s in self._slots if s.task is not None]
        wait_futures(outstanding)
        self._stop()

    def _stop(self) -> None:
        with self._lock:
            self._stopped = True
            slots = list(getattr(self, "_slots", []))
        for slot in slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:  # pragma: no cover - already gone
                pass
        self._events.shutdown(wait=True)
        if self._owns_ray:
            ray.shutdown()


def _unwrap(exc: Any) -> BaseException:
    """The application exception inside a ``RayTaskError``, with the remote traceback."""
    cause = getattr(exc, "cause", None)
    if not isinstance(cause, BaseException):
        return exc
    if cause.__cause__ is None:
        cause.__cause__ = RemoteTraceback(getattr(exc, "traceback_str", "") or str(exc))
    return cause
