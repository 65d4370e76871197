"""Small shared helpers: JSON-ready conversion and pickling of envs with running state."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from gymnasium.utils import EzPickle

__all__ = ["RuntimeEzPickle", "to_jsonable"]


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
