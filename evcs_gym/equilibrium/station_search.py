"""One station's converged deviation search: global candidates, then pattern searches.

:func:`station_search` is a generator (it yields candidate price vectors and receives
their scores) that runs, for one station with the others' prices fixed:

1. *global candidates* (:mod:`~evcs_gym.equilibrium.candidates`): the current prices,
   each period alone at either bound, ``grid`` uniform levels, optional starts and
   nearby moves, then the combined move of the improving single-period moves. They give
   the search its reach: a deviation far from the current prices is found here.
2. *live periods*: a period in which the station charges nobody even at its lower bound
   is left alone (its price changes no revenue);
3. *pattern searches* (:func:`~evcs_gym.equilibrium.pattern_search.pattern_search`)
   down to the resolution: from the best global candidate, and from the current prices
   (the revenue along a period's price is a sawtooth of platoons over the logit
   envelope, so two starts climb different hills); with ``rounds`` more, again from the
   best point so far, each finer; then ``restarts`` from uniform-random prices.

It *converged* when every pattern search ended at its resolution, none stopped by the
cap.

Its :class:`~evcs_gym.equilibrium.candidate_memo.CandidateMemo` keeps every price vector
tried: a vector tried before costs nothing, and the spec's cap bounds the distinct ones.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.equilibrium.candidate_memo import CandidateMemo, Score
from evcs_gym.equilibrium.candidates import (
    bound_moves,
    combined_move,
    nearby_moves,
    uniform_levels,
)
from evcs_gym.equilibrium.pattern_search import LocalOutcome, Tolerance, pattern_search
from evcs_gym.equilibrium.search_spec import SearchSpec

__all__ = ["StationOutcome", "station_search"]


@dataclass
class StationOutcome:
    """One station's search: its best deviation and what the search did to find it."""

    prices: np.ndarray
    score: Score
    current: Score
    converged: bool
    stats: dict[str, Any] = field(default_factory=dict)


def station_search(
    x0: np.ndarray,
    low: float,
    high: float,
    spec: SearchSpec,
    *,
    rng: np.random.Generator,
    starts: np.ndarray | None = None,
) -> Generator[np.ndarray, list[Score], StationOutcome]:
    """The converged search of one station from its current prices ``x0``.

    Args:
        x0: the station's current prices.
        low, high: its price bounds.
        spec: the search (``method="converged"``).
        rng: draws the random directions and the restarts' starting prices.
        starts: ``(k, n_periods)`` extra global candidates (a previous best response).
    """
    memo = CandidateMemo(low, high, spec.cap)
    x0 = np.clip(np.asarray(x0, dtype=float), low, high)
    (current,) = yield from memo.ask([x0])
    live, n_global = yield from _global_phase(memo, x0, current, spec, starts)
    first = spec.round_resolutions()[0]
    local = [(yield from _local(memo, live, spec, first, spec.period_step, rng))]
    if spec.from_current:  # the memo answers it for free where the two starts agree
        local.append((yield from _local(memo, live, spec, first, spec.period_step, rng, x0)))
    for resolution in spec.round_resolutions()[1:]:
        local.append((yield from _local(memo, live, spec, resolution, spec.period_step, rng)))
    for _ in range(spec.restarts):
        x = np.where(live, rng.uniform(low, high, size=len(x0)), x0)
        local.append(
            (yield from _local(memo, live, spec, spec.resolution, spec.restart_step, rng, x))
        )
    best_score, best = memo.best()
    converged = all(o.converged for o in local)
    stats = {
        "method": "converged",
        "candidates": memo.used,
        "global_candidates": n_global,
        "starts": 0 if starts is None else len(np.atleast_2d(starts)),
        "live_periods": int(live.sum()),
        "passes": sum(o.passes for o in local),
        "moves": sum(o.moves for o in local),
        "pattern_searches": len(local),
        "converged": bool(converged),
        "resolution": spec.resolution * (high - low),
        "tolerance": float(np.mean([o.tolerance for o in local])),
    }
    return StationOutcome(best, best_score, current, bool(converged), stats)


def _local(
    memo: CandidateMemo,
    live: np.ndarray,
    spec: SearchSpec,
    resolution: float,
    step: float,
    rng: np.random.Generator,
    start: np.ndarray | None = None,
) -> Generator[np.ndarray, list[Score], LocalOutcome]:
    """A pattern search to ``resolution`` from ``start`` (default: the best point so far)."""
    if start is None:
        start_score, start = memo.best()
    else:
        (start_score,) = yield from memo.ask([start])
        if start_score is None:  # the cap is reached
            return LocalOutcome(start, memo.best()[0], False, 0, 0)
    return (
        yield from pattern_search(
            memo,
            start,
            start_score,
            live,
            step=max(step, resolution),
            resolution=resolution,
            tolerance=Tolerance(spec.tolerance_z, spec.min_gain),
            shifts=spec.shifts,
            random_directions=spec.random_directions,
            rng=rng,
        )
    )


def _global_phase(
    memo: CandidateMemo,
    x0: np.ndarray,
    current: Score,
    spec: SearchSpec,
    starts: np.ndarray | None,
) -> Generator[np.ndarray, list[Score], tuple[np.ndarray, int]]:
    """Try the global candidates; return the live periods and how many were tried."""
    n = len(x0)
    bounds = bound_moves(x0, memo.low, memo.high)
    near = nearby_moves(x0, memo.low, memo.high, spec.period_step, spec.moves or 0)
    extra = [] if starts is None else list(np.atleast_2d(np.asarray(starts, dtype=float)))
    if any(s.shape != (n,) for s in extra):
        raise ValueError(f"`starts` must have shape (k, {n}) (n_periods)")
    levels = uniform_levels(memo.low, memo.high, spec.grid, n)
    singles = bounds + near
    scores = yield from memo.ask([x for _, x in bounds] + levels + extra + [x for _, x in near])
    single_scores = scores[: len(bounds)] + scores[len(bounds) + len(levels) + len(extra) :]
    values = [None if s is None else s.value for s in single_scores]
    combined = combined_move(x0, singles, values, current.value)
    if combined is not None:
        yield from memo.ask([combined])
    live = _live_periods(x0, bounds, scores[: len(bounds)], current, memo.low)
    return live, memo.used


def _live_periods(
    x0: np.ndarray,
    bounds: list[tuple[int, np.ndarray]],
    scores: list[Any],
    current: Score,
    low: float,
) -> np.ndarray:
    """Periods in which the station charges somebody at its lower bound there (a period
    that charges nobody even then is dead: its price moves no revenue)."""
    live = np.ones(len(x0), dtype=bool)
    for p in range(len(x0)):
        floor = current if math.isclose(x0[p], low) else None
        for (q, x), s in zip(bounds, scores):
            if q == p and x[p] == low:
                floor = s
        if floor is not None and floor.flows[p] <= 0:
            live[p] = False
    return live
