"""The global candidates of a station's deviation search: moves that reach far in one step.

Each function returns price vectors of one station (``(n_periods,)`` arrays, clipped to
its bounds), built from its current prices ``x0``:

* :func:`bound_moves`: each period alone set to the lower or the upper bound;
* :func:`nearby_moves`: each period alone moved by ``±k`` steps;
* :func:`uniform_levels`: the same price in every period, at evenly spaced levels;
* :func:`combined_move`: every period that has an improving single-period move set to its
  best one at once (often the joint deviation, since a period's price mostly reaches the
  drivers who arrive in that period).

Example:
    >>> import numpy as np
    >>> x0 = np.array([1.0, 2.0])
    >>> [(p, x.tolist()) for p, x in bound_moves(x0, 0.5, 2.0)]
    [(0, [0.5, 2.0]), (0, [2.0, 2.0]), (1, [1.0, 0.5])]
    >>> [x.tolist() for x in uniform_levels(0.5, 2.0, 3, 2)]
    [[0.5, 0.5], [1.25, 1.25], [2.0, 2.0]]
    >>> moves = bound_moves(x0, 0.5, 2.0)
    >>> combined_move(x0, moves, [11.0, 9.0, 12.0], current=10.0).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "Move",
    "bound_moves",
    "combined_move",
    "nearby_moves",
    "single_period_moves",
    "uniform_levels",
]

Move = tuple[int, np.ndarray]
"""A single-period move: the period moved and the whole price vector after the move."""


def single_period_moves(
    x0: np.ndarray, offsets: Sequence[float], low: float, high: float
) -> list[Move]:
    """Each period alone moved by each offset, clipped to ``[low, high]``; moves that the
    clipping leaves at the current price are dropped."""
    out = []
    for p in range(len(x0)):
        for d in offsets:
            value = min(max(x0[p] + d, low), high)
            if value != x0[p]:
                x = x0.copy()
                x[p] = value
                out.append((p, x))
    return out


def bound_moves(x0: np.ndarray, low: float, high: float) -> list[Move]:
    """Each period alone at the lower and at the upper bound."""
    return single_period_moves(x0, [-math.inf, math.inf], low, high)


def nearby_moves(x0: np.ndarray, low: float, high: float, step: float, k: int) -> list[Move]:
    """Each period alone moved by ``±1 .. ±k`` steps of ``step × (high − low)``."""
    size = step * (high - low)
    out: list[Move] = []
    for j in range(1, k + 1):
        out += single_period_moves(x0, [-j * size, j * size], low, high)
    return out


def uniform_levels(low: float, high: float, grid: int, n_periods: int) -> list[np.ndarray]:
    """``grid`` uniform profiles, evenly spaced from ``low`` to ``high`` inclusive."""
    if grid <= 0:
        return []
    return list(np.repeat(np.linspace(low, high, grid)[:, None], n_periods, axis=1))


def combined_move(
    x0: np.ndarray, moves: Sequence[Move], values: Sequence[float | None], current: float
) -> np.ndarray | None:
    """Every period's best single-period move above ``current``, applied at once.

    Args:
        x0: the current prices.
        moves: single-period moves.
        values: each move's objective (None: not evaluated).
        current: the objective at ``x0``.

    Returns:
        The combined prices, or None when fewer than two periods have an improving move
        (with one, the combination is that move).
    """
    best: dict[int, tuple[float, float]] = {}
    for (p, x), v in zip(moves, values):
        if v is not None and v > current and v > best.get(p, (-math.inf, 0.0))[0]:
            best[p] = (v, float(x[p]))
    if len(best) < 2:
        return None
    out = x0.copy()
    for p, (_, value) in best.items():
        out[p] = value
    return out
