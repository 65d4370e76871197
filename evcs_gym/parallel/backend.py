"""The contract between :class:`~evcs_gym.parallel.pool.ParallelEvaluatorPool` and its
backends (:mod:`~evcs_gym.parallel.process_backend`, :mod:`~evcs_gym.parallel.ray_backend`).

The pool validates each request into a :class:`Task` that carries the caller's future and
hands it to a :class:`Backend`; the backend runs it on a worker and resolves the future
with :func:`settle`. The pool chooses a backend; the backends import only this module,
never the pool.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = ["Backend", "Task", "settle", "usable_cpu_count"]


def usable_cpu_count() -> int:
    """CPUs this process may run on (its affinity mask), the default ``n_workers``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(eq=False)
class Task:
    """One evaluation in flight: validated input, the caller's future, backend bookkeeping."""

    id: int
    prices: dict[str, np.ndarray]
    seed: int | None
    future: Future
    index: int | None = None
    inner: Any = None
    generation: int = -1
    resubmits: int = 0
    crash_retries: int = 0
    """Runs left after a crash of the worker running this task (then WorkerCrashedError)."""


class Backend(Protocol):
    """What the pool asks of a backend: run tasks, cancel or abandon them, shut down."""

    n_workers: int
    restarts: int
    retried: int

    def submit(self, task: Task) -> None: ...
    def cancel(self, tasks: Sequence[Task]) -> None: ...
    def abandon(self, tasks: Sequence[Task]) -> None: ...
    def worker_pids(self) -> list[int]: ...
    def shutdown(self, wait: bool, cancel_futures: bool) -> None: ...


def settle(future: Future, result: Any = None, exc: BaseException | None = None) -> None:
    """Resolve ``future`` unless it is already done (cancelled, or failed by a timeout)."""
    try:
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)
    except InvalidStateError:
        pass
