"""What a station's search has tried: each candidate's :class:`Score`, and the cap.

A search asks :meth:`CandidateMemo.ask` for the scores of some price vectors; the memo
answers those it has seen from memory and yields the rest, as one batch, to whoever
drives the search (:mod:`~evcs_gym.equilibrium.batch_search`). Vectors are clipped to the
station's bounds and identified after rounding to 1e-9.

Example:
    >>> import numpy as np
    >>> memo = CandidateMemo(0.5, 2.0, cap=2)
    >>> ask = memo.ask([np.array([1.0, 3.0]), np.array([1.0, 1.0]), np.array([0.0, 1.0])])
    >>> batch = next(ask)  # the new vectors, clipped, up to the cap
    >>> batch.tolist()
    [[1.0, 2.0], [1.0, 1.0]]
    >>> try:
    ...     ask.send([Score(v, 0.0, np.zeros(2)) for v in (5.0, 7.0)])
    ... except StopIteration as stop:
    ...     [None if s is None else s.value for s in stop.value]
    [5.0, 7.0, None]
    >>> memo.used, memo.left, memo.best()[0].value
    (2, 0, 7.0)
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CandidateMemo", "Score"]


@dataclass(frozen=True)
class Score:
    """A candidate's objective (mean over the search seeds), its noise and its flows."""

    value: float
    noise: float
    """Standard error of ``value``: the UE's stationary standard errors over the seeds."""
    flows: np.ndarray
    """The station's vehicles charged per period (mean over the search seeds)."""
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """The objective on each search seed (empty: not kept)."""


class CandidateMemo:
    """The price vectors a station's search has tried, their scores and the cap."""

    def __init__(self, low: float, high: float, cap: int) -> None:
        self.low, self.high, self.cap = low, high, cap
        self.scores: dict[bytes, Score] = {}
        self.points: list[tuple[Score, np.ndarray]] = []  # in the order tried

    @property
    def used(self) -> int:
        return len(self.points)

    @property
    def left(self) -> int:
        return self.cap - self.used

    @staticmethod
    def key(x: np.ndarray) -> bytes:
        return (np.round(x, 9) + 0.0).tobytes()  # + 0.0: -0.0 and 0.0 share a key

    def ask(
        self, candidates: Sequence[np.ndarray]
    ) -> Generator[np.ndarray, list[Score], list[Any]]:
        """Scores of ``candidates`` (clipped to the bounds): those tried before from the
        memo, new ones yielded as one ``(k, n_periods)`` batch; None past the cap."""
        xs = [np.clip(np.asarray(c, dtype=float), self.low, self.high) for c in candidates]
        keys = [self.key(x) for x in xs]
        new: dict[bytes, np.ndarray] = {}
        for k, x in zip(keys, xs):
            if k not in self.scores and k not in new and len(new) < self.left:
                new[k] = x
        if new:
            replies = yield np.array(list(new.values()))
            for (k, x), s in zip(new.items(), replies):
                self.scores[k] = s
                self.points.append((s, x))
        return [self.scores.get(k) for k in keys]

    def best(self) -> tuple[Score, np.ndarray]:
        """The best point tried (the first of equals)."""
        return max(self.points, key=lambda t: t[0].value)
