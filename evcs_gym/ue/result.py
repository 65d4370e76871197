"""What an evaluation returns: :class:`EvalResult` and its typed UE statistics.

:class:`UEStats` is a :class:`~typing.TypedDict`: at run time a plain ``dict`` (users
read ``res.ue_stats["relative_gap"]``, env infos carry it, it pickles and serialises as
before), and to a type checker every key with its type, so a misspelt key is an error
where it is written instead of a silent ``NaN``. Its field docstrings are the reference
for every key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import numpy as np

from evcs_gym.utils import FieldwiseEquality, to_jsonable

__all__ = ["EvalResult", "GapSummary", "PayoffKind", "StopReason", "UEStats", "ue_stats_keys"]

StopReason = Literal["converged", "stationary", "max_iterations"]
"""Why a UE loop stopped (:mod:`evcs_gym.ue.stopping`)."""

PayoffKind = Literal["final_iteration", "stationary_mean"]
"""What an evaluation's rewards are: the final iteration or a stationary mean."""


class GapSummary(TypedDict):
    """Relative gaps of a set of platoons at the final iteration
    (:func:`~evcs_gym.ue.stopping.gap_summary`); NaN but ``count`` for an empty set."""

    count: int
    """Number of platoons summarised."""
    mean: float
    """Mean relative gap."""
    p95: float
    """95th percentile."""
    max: float
    """Largest relative gap."""
    share_above_1pct: float
    """Share of platoons whose gap exceeds 1 %."""
    share_above_5pct: float
    """Share above 5 %."""
    share_above_10pct: float
    """Share above 10 %."""


class UEStats(TypedDict):
    """The statistics of one evaluation's UE loop (:attr:`EvalResult.ue_stats`).

    Stations are keyed by agent name; histories have one entry per UE iteration.
    """

    stop_reason: StopReason
    """Why the loop stopped (:mod:`evcs_gym.ue.stopping`)."""
    payoff: PayoffKind
    """What the rewards are: the final iteration (the loop met its rule) or the
    stationary mean of a window of iterations."""
    window: list[int]
    """First and last iteration averaged, 1-based."""
    revenue_se: dict[str, float]
    """Station -> standard error of its revenue (0 for a converged loop;
    :func:`~evcs_gym.ue.stopping.settle_payoff`)."""
    reward_se: dict[str, float]
    """Station -> standard error of its reward."""
    autocorrelation_time: float | None
    """``τ`` of the stationary estimate; ``None`` for a converged loop."""
    relative_gap: float
    """Mean relative gap over completed platoons at the final iteration."""
    completed_ratio: float
    """Share of platoons that completed their trip at the final iteration."""
    charging_relative_gap: float
    """Mean relative gap over completed charging platoons (a stop-rule criterion)."""
    charging_tail_share: float
    """Share of completed charging platoons above the tail gap (a stop-rule criterion)."""
    charging_gap: GapSummary
    """Gap summary of the completed charging platoons."""
    non_charging_gap: GapSummary
    """Gap summary of the completed non-charging platoons."""
    stop_tolerances: dict[str, float]
    """The stop rule's tolerances (:attr:`~evcs_gym.ScenarioSettings.stop_tolerances`)."""
    gap_history: list[float]
    """Mean relative gap per iteration."""
    charging_gap_history: list[float]
    """Mean charging relative gap per iteration."""
    charging_tail_history: list[float]
    """Charging tail share per iteration."""
    completed_history: list[float]
    """Completed ratio per iteration."""
    switch_history: list[int]
    """Platoons that switched route after each iteration."""
    revenue_history: list[list[float]]
    """Per iteration, per station: the revenue that iteration's flows earn."""
    simulated_charging_vehicles: int
    """Charging vehicles simulated (platoons × ``deltan``)."""
    simulated_non_charging_vehicles: int
    """Non-charging vehicles simulated."""
    charging_vehicles_completed: int
    """Charging vehicles that completed their trip at the final iteration."""
    charging_vehicles_charged: float
    """Vehicles that started charging, summed over stations and periods (the payoff's
    flows, so a window mean where the loop did not converge)."""
    travel_time_model_error: float
    """Mean discrepancy between the route-cost model's and the simulated travel times."""
    mean_travel_time: float
    """Mean travel time (s) of completed vehicles at the final iteration."""


def ue_stats_keys() -> tuple[str, ...]:
    """Every key of :class:`UEStats`, in the order an evaluation writes them.

    Example:
        >>> ue_stats_keys()[:3]
        ('stop_reason', 'payoff', 'window')
    """
    return tuple(UEStats.__annotations__)


@dataclass(eq=False)
class EvalResult(FieldwiseEquality):
    """Outcome of one evaluation. Equality compares every field bit for bit except timings.

    Attributes:
        rewards: station -> reward (revenue minus energy cost) in currency.
        flows: station -> (n_periods,) vehicles that started charging in each period
            (a mean over the stationary window where the loop did not converge, so
            not always whole numbers).
        revenues: station -> revenue Σ price × flow × energy.
        prices: station -> the (n_periods,) prices evaluated.
        ue_iterations: simulations run by the UE loop.
        converged: whether the stop rule was met (``stop_reason == "converged"``).
        ue_stats: the UE loop's statistics, a :class:`UEStats` (a ``dict`` with every
            key typed and documented there): stop reason, payoff window and standard
            errors, final gaps, per-iteration histories, vehicle counts.
        seed: the seed used (``None`` resolved to the scenario's default).
        timings: wall-clock seconds by phase (not part of equality).
    """

    rewards: dict[str, float]
    flows: dict[str, np.ndarray]
    revenues: dict[str, float]
    prices: dict[str, np.ndarray]
    ue_iterations: int
    converged: bool
    ue_stats: UEStats
    seed: int
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards.values()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (arrays as lists)."""
        return to_jsonable(dataclasses.asdict(self))
