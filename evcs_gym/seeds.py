"""The seed rules, in one place: what counts as a seed and as a list of seeds.

A seed is a non-negative integer (Python or numpy; ``bool`` is refused, though it is an
``int``). Every evaluation is a pure function of its seed, so the rules are strict: a
seed that is not an integer is an error naming the argument, never silently rounded.

    >>> check_seed(3)
    3
    >>> check_seeds(3), check_seeds([5, 7]), check_seeds(2, start=10)
    ([0, 1, 2], [5, 7], [10, 11])
    >>> broadcast_seeds(4, 2), broadcast_seeds(None, 2)
    ([4, 4], [None, None])
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: `seed` must be a non-negative integer or None, got -1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

import numpy as np

__all__ = ["broadcast_seeds", "check_seed", "check_seeds", "is_integer"]


def is_integer(value: object) -> TypeGuard[int | np.integer[Any]]:
    """``value`` is a Python or numpy integer, and not a ``bool``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` as an ``int``, if it is a non-negative integer.

    Callers that accept ``None`` (the scenario's default seed) resolve it first.

    Raises:
        ValueError: ``seed`` is not a non-negative integer; the message names ``name``.
    """
    if not is_integer(seed) or seed < 0:
        raise ValueError(f"`{name}` must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def check_seeds(seeds: int | Sequence[int], *, start: int = 0, name: str = "seeds") -> list[int]:
    """``seeds`` as a list of distinct non-negative integers.

    An integer ``n`` means ``n`` seeds from ``start``: ``start, ..., start + n - 1``.

    Raises:
        ValueError: a count below 1; an empty, repeated, negative or non-integer sequence;
            the message names ``name`` and the value.
    """
    if is_integer(seeds):
        if seeds < 1:
            raise ValueError(f"`{name}` as a count must be >= 1, got {seeds!r}")
        return list(range(start, start + int(seeds)))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"`{name}` must be an int or a sequence of ints, got {seeds!r}")
    out = list(seeds)
    if not out:
        raise ValueError(f"`{name}` must not be empty")
    for s in out:
        if not is_integer(s) or s < 0:
            raise ValueError(f"`{name}` must hold non-negative integers, got {s!r} in {out!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` must be distinct, got {out!r}")
    return [int(s) for s in out]


def broadcast_seeds(seeds: Any, n: int) -> list[Any]:
    """One seed per item of a batch of ``n``: ``None`` and a single seed are repeated.

    A sequence must have ``n`` entries; its entries are checked where each is used (a
    batch reports a bad entry at its own index).

    Raises:
        ValueError: ``seeds`` is neither ``None``, a seed nor a sequence of ``n`` seeds.
    """
    if seeds is None:
        return [None] * n
    if is_integer(seeds):
        return [check_seed(seeds)] * n
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"`seeds` must be None, an integer or a sequence of seeds, got {seeds!r}")
    out = list(seeds)
    if len(out) != n:
        raise ValueError(f"`seeds` has {len(out)} entries for {n} price profiles")
    return out
