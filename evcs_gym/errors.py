"""Exceptions raised by evcs-gym.

One small hierarchy, in the spirit of ``gymnasium.error``: everything derives from
:class:`EVCSGymError`; errors about user input also derive from :class:`ValueError` so
generic callers can catch them the usual way.
"""

from __future__ import annotations

from gymnasium.error import DependencyNotInstalled

__all__ = [
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
