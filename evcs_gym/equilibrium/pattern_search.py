"""The local half of the converged search: a pattern search run until it stops improving.

:func:`pattern_search` refines one station's prices around a starting point, one period
at a time, with a step per period:

1. *poll*: every direction whose step is still at or above the resolution -- each live
   period alone, and each *shift* between two adjacent live periods (one up, the other
   down: drivers choose their charging period through their route, so a deviation can
   move them from one period to the next) -- is taken by ``−step`` and ``+step``
   (clipped to the bounds), all in one batch;
2. *keep*: a direction whose better move gains more than the tolerance (the noise of
   the two objectives, or a floor: :class:`Tolerance`) keeps its step and records the
   move; every other polled direction halves its step;
3. *combine*: with two or more improving directions their moves are tried added up (a
   period's price mostly reaches the drivers who arrive in that period, so the moves
   nearly add up); the better of the combination and the best single move becomes the
   new centre;
4. repeat until no direction's step is at or above the resolution (*converged*: the last
   pass at the finest step, ``resolution × range``, found no gain above the tolerance),
   or the station's cap on distinct candidates is reached (*capped*).

The search is a generator: it yields the candidates it wants evaluated and receives
their :class:`~evcs_gym.equilibrium.candidate_memo.Score` list, so that a driver can
batch the candidates of every station into one pool call
(:mod:`~evcs_gym.equilibrium.batch_search`).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from evcs_gym.equilibrium.candidate_memo import CandidateMemo, Score

__all__ = ["LocalOutcome", "Tolerance", "pattern_search"]


@dataclass(frozen=True)
class Tolerance:
    """The gain a move must beat: ``max(min_gain × |objective|, z × noise)``.

    The noise is that of the candidate's gain over the centre: the UE's stationary
    standard errors of both objectives over the search seeds, combined
    (:class:`~evcs_gym.equilibrium.candidate_memo.Score`'s ``noise``). It is judged per
    candidate: a move whose UE meets its stop rule (standard error 0) needs only the floor,
    a move that puts the loop into a noisy orbit needs a gain above that orbit's noise.
    The standard errors overstate the noise of a *paired* gain (common random numbers
    make the two runs share much of it), so the rule errs towards stopping early, never
    towards chasing noise; the certification on further seeds measures what was found.

    Example:
        >>> import numpy as np
        >>> from evcs_gym.equilibrium.candidate_memo import Score
        >>> centre = Score(100.0, 3.0, np.zeros(1))
        >>> tol = Tolerance(z=1.0, min_gain=1e-3)
        >>> tol(centre, Score(103.0, 4.0, np.zeros(1))), tol(centre, Score(100.5, 0.0, np.zeros(1)))
        (5.0, 3.0)
        >>> tol.improves(centre, Score(104.0, 0.0, np.zeros(1)))
        True
    """

    z: float = 1.0
    min_gain: float = 1e-4

    def __call__(self, centre: Score, candidate: Score) -> float:
        noise = math.hypot(centre.noise, candidate.noise)
        return max(self.min_gain * abs(centre.value), self.z * noise)

    def improves(self, centre: Score, candidate: Score | None) -> bool:
        """Whether ``candidate`` beats ``centre`` by more than the tolerance."""
        if candidate is None:
            return False
        return candidate.value - centre.value > self(centre, candidate)


@dataclass(frozen=True)
class LocalOutcome:
    """Where one pattern search ended and why."""

    prices: np.ndarray
    score: Score
    converged: bool
    """True: no period's move at the finest step gained; False: the cap was reached."""
    passes: int
    """Polls made (each a batch of single-period moves)."""
    moves: int
    """Accepted moves (single or combined)."""
    tolerance: float = 0.0
    """The largest gain a move of the last poll had to beat."""


def pattern_search(
    memo: CandidateMemo,
    start: np.ndarray,
    start_score: Score,
    live: np.ndarray,
    *,
    step: float,
    resolution: float,
    tolerance: Tolerance,
    shifts: bool = True,
    random_directions: int = 0,
    rng: np.random.Generator | None = None,
) -> Generator[np.ndarray, list[Score], LocalOutcome]:
    """Refine ``start`` until no move of ``resolution`` (or larger) gains.

    Args:
        memo: the station's candidate memo (bounds, cap, evaluated points).
        start: the starting prices; ``start_score`` their score.
        live: a boolean mask of the periods to move (a period where no driver charges at
            any price is left alone).
        step: the first step, as a share of the price range.
        resolution: the last step, as a share of the price range.
        tolerance: the gain a move must beat.
        shifts: also poll the *shifts* of two adjacent live periods (one up, the other
            down by the same step), which move drivers between the periods; a single
            period's move cannot find such a deviation where each half alone loses.
        random_directions: also poll this many random directions each pass (drawn from
            ``rng``, every live period moved at once, the largest move the pass's
            largest step), as mesh-adaptive direct search does: they find the deviations
            that move several periods together, which no fixed direction reaches.
        rng: draws the random directions.

    Returns:
        A :class:`LocalOutcome` (via ``StopIteration.value``; use ``yield from``).
    """
    span = memo.high - memo.low
    directions = poll_directions(live, shifts)
    h = np.full(len(directions), step * span)
    finest = resolution * span * (1 - 1e-9)
    x, score = np.array(start, dtype=float), start_score
    passes = moves = 0
    bound = 0.0
    while True:
        active = [k for k in range(len(directions)) if h[k] >= finest]
        if not active or span <= 0:
            return LocalOutcome(x, score, True, passes, moves, bound)
        moves_now = [(k, directions[k] * h[k]) for k in active]
        if random_directions and rng is not None:
            size = float(h[active].max())
            for j in range(random_directions):
                d = np.where(live, rng.standard_normal(len(x)), 0.0)
                moves_now.append((len(directions) + j, d / max(np.abs(d).max(), 1e-12) * size))
        polls = _polls(x, moves_now, memo.low, memo.high)
        scores = yield from memo.ask([c for _, c in polls])
        passes += 1
        if any(s is None for s in scores):  # the cap cut this pass
            return LocalOutcome(x, score, False, passes, moves, bound)
        best: dict[int, tuple[Score, np.ndarray]] = {}
        for (k, c), s in zip(polls, scores):
            if tolerance.improves(score, s) and (k not in best or s.value > best[k][0].value):
                best[k] = (s, c)
        bound = max((tolerance(score, s) for s in scores if s is not None), default=0.0)
        for k in active:
            if k not in best:
                h[k] /= 2
        if not best:
            continue
        x, score = yield from _accept(memo, x, best, score, tolerance)
        moves += 1


def poll_directions(live: np.ndarray, shifts: bool) -> list[np.ndarray]:
    """The unit moves of a poll: each live period alone, then (with ``shifts``) each pair
    of adjacent live periods, the first up and the second down.

    Example:
        >>> [d.tolist() for d in poll_directions(np.array([True, True, False, True]), True)]
        [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, -1.0, 0.0, 0.0]]
    """
    n = len(live)
    eye = np.eye(n)
    out = [eye[p] for p in range(n) if live[p]]
    if shifts:
        out += [eye[p] - eye[p + 1] for p in range(n - 1) if live[p] and live[p + 1]]
    return out


def _polls(
    x: np.ndarray, moves: list[tuple[int, np.ndarray]], low: float, high: float
) -> list[tuple[int, np.ndarray]]:
    """``(direction, prices)`` for each move taken backwards and forwards from ``x``,
    clipped to the bounds; a move the clipping cancels is dropped."""
    out = []
    for k, move in moves:
        for sign in (-1.0, 1.0):
            c = np.clip(x + sign * move, low, high)
            if not np.array_equal(c, x):
                out.append((k, c))
    return out


def _accept(
    memo: CandidateMemo,
    x: np.ndarray,
    best: dict[int, tuple[Score, np.ndarray]],
    centre: Score,
    tolerance: Tolerance,
) -> Generator[np.ndarray, list[Score], tuple[np.ndarray, Score]]:
    """The new centre: every improving direction's move added up, if that beats the best
    single move (and the old centre), else that single move."""
    single_score, single = max(best.values(), key=lambda t: t[0].value)
    if len(best) < 2:
        return single, single_score
    combined = np.clip(x + sum(c - x for _, c in best.values()), memo.low, memo.high)
    (s,) = yield from memo.ask([combined])
    if s is not None and s.value > single_score.value and tolerance.improves(centre, s):
        return combined, s
    return single, single_score
