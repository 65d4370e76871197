"""Price validation: user price mappings -> a checked ``(n_agents, n_periods)`` array."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from evcs_gym.errors import PriceError

__all__ = ["price_matrix", "uniform_prices"]


def uniform_prices(agents: Iterable[str], n_periods: int, price: float) -> dict[str, np.ndarray]:
    """Every station at ``price`` in every period.

    Example:
        >>> uniform_prices(["A", "B"], 2, 1.25)["B"].tolist()
        [1.25, 1.25]
    """
    return {a: np.full(n_periods, float(price)) for a in agents}


def price_matrix(
    prices: Mapping[str, Any],
    agents: tuple[str, ...],
    n_periods: int,
    bounds: Mapping[str, tuple[float, float]],
    *,
    clip: bool = False,
    tolerance: float = 1e-9,
) -> np.ndarray:
    """Validate ``{station: prices per period}`` and stack it in agent order.

    Args:
        prices: one entry per station; each a sequence of ``n_periods`` numbers.
        agents: station names in agent order.
        n_periods: pricing periods.
        bounds: station -> (low, high).
        clip: clip finite out-of-bound prices into the bounds instead of raising.
        tolerance: out-of-bound slack accepted (float round-off), then clipped.

    Raises:
        PriceError: missing or unknown station, wrong length, NaN/inf, outside bounds.
            The message names the station, period and value.
    """
    if not isinstance(prices, Mapping):
        raise PriceError(
            f"prices must be a mapping {{station: prices per period}}, got {type(prices).__name__}"
        )
    unknown = sorted(str(k) for k in prices if k not in agents)
    if unknown:
        raise PriceError(f"prices name unknown station(s) {unknown}; stations are {list(agents)}")
    missing = [a for a in agents if a not in prices]
    if missing:
        raise PriceError(f"prices are missing station(s) {missing}; stations are {list(agents)}")
    out = np.empty((len(agents), n_periods), dtype=np.float64)
    for i, agent in enumerate(agents):
        raw = prices[agent]
        try:
            row = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError):
            raise PriceError(f"prices[{agent!r}] is not numeric: {raw!r}") from None
        if row.ndim == 0:
            raise PriceError(
                f"prices[{agent!r}] must have one price per period ({n_periods}), got scalar "
                f"{raw!r}"
            )
        if row.shape != (n_periods,):
            raise PriceError(
                f"prices[{agent!r}] must have shape ({n_periods},) (one price per period), "
                f"got shape {row.shape}"
            )
        low, high = bounds[agent]
        for p, value in enumerate(row.tolist()):
            if not math.isfinite(value):
                raise PriceError(f"prices[{agent!r}] period {p} is not finite: {value}")
            if not clip and not (low - tolerance <= value <= high + tolerance):
                raise PriceError(
                    f"prices[{agent!r}] period {p} = {value} is outside the bounds [{low}, {high}]"
                )
        out[i] = np.clip(row, low, high)
    return out
