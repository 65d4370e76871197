"""Small shared helpers: JSON-ready conversion and pickling of envs with running state."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from gymnasium.utils import EzPickle

__all__ = ["FieldwiseEquality", "RuntimeEzPickle", "same", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """``value`` with numpy arrays/scalars and dataclasses turned into JSON types.

    Non-finite floats become ``None`` (NaN) or ``"inf"`` / ``"-inf"``.

    Example:
        >>> to_jsonable({"a": np.array([1.0, 2.0]), "b": float("inf")})
        {'a': [1.0, 2.0], 'b': 'inf'}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality that understands numpy arrays, containers and dataclasses.

    Arrays must have the same dtype and values (NaN equals NaN); NaN floats are equal.

    Example:
        >>> same({"x": np.array([1.0, np.nan])}, {"x": np.array([1.0, np.nan])})
        True
        >>> same(np.array([1, 2]), np.array([1.0, 2.0]))
        False
    """
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.dtype != b.dtype:
            return False
        return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a) if f.compare
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


class FieldwiseEquality:
    """Mixin for dataclasses holding arrays: ``==`` is :func:`same` over the compared fields."""

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return same(self, other)

    __hash__ = None  # type: ignore[assignment]


class RuntimeEzPickle(EzPickle):
    """``EzPickle`` plus the attributes named in ``_runtime_fields``.

    EzPickle rebuilds an env from its constructor arguments; the running game (seeded
    generators, the last observation, ...) is carried along so that a copy pickled
    mid-episode (SB3 ``SubprocVecEnv``, Gymnasium ``AsyncVectorEnv``) continues it.
    """

    _runtime_fields: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = EzPickle.__getstate__(self)
        state["_runtime"] = {name: getattr(self, name) for name in self._runtime_fields}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        runtime = state.pop("_runtime", None)
        EzPickle.__setstate__(self, state)
        for name, value in (runtime or {}).items():
            setattr(self, name, value)
