"""Exceptions raised by evcs-gym.

One small hierarchy, in the spirit of ``gymnasium.error``: everything derives from
:class:`EVCSGymError`; errors about user input also derive from :class:`ValueError` so
generic callers can catch them the usual way.
"""

from __future__ import annotations

from typing import Any

from gymnasium.error import DependencyNotInstalled

__all__ = [
    "BatchEvaluationError",
    "DependencyNotInstalled",
    "EVCSGymError",
    "PoolClosedError",
    "PriceError",
    "ScenarioError",
    "WorkerCrashedError",
]


class EVCSGymError(Exception):
    """Base class of every evcs-gym exception."""


class ScenarioError(EVCSGymError, ValueError):
    """A scenario folder or setting is invalid; the message names file, row/key and value."""


class PriceError(EVCSGymError, ValueError):
    """A price vector is invalid; the message names the station, period and value."""


class WorkerCrashedError(EVCSGymError, RuntimeError):
    """A worker process died (killed, segfault, out of memory) while holding a task."""


class PoolClosedError(EVCSGymError, RuntimeError):
    """A pool was used after :meth:`shutdown`."""


class BatchEvaluationError(EVCSGymError):
    """Some evaluations of a batch failed; the results of the others are kept.

    Attributes:
        results: one entry per task, in input order: the ``EvalResult``, or ``None``
            where the task failed.
        failures: task index -> the exception that task raised (its original type:
            ``PriceError``, ``WorkerCrashedError``, ...).
    """

    def __init__(
        self, message: str, results: list[Any], failures: dict[int, BaseException]
    ) -> None:
        super().__init__(message)
        self.results = results
        self.failures = failures

    def __reduce__(self) -> tuple[Any, ...]:
        # keep the attributes when pickled (e.g. across processes)
        return (type(self), (self.args[0], self.results, self.failures))
