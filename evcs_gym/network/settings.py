"""Scenario settings: the typed, validated form of ``<name>_settings.json``.

Every key of the settings file maps to one field of :class:`ScenarioSettings`; unknown
keys raise :class:`~evcs_gym.errors.ScenarioError` so that a typo cannot pass silently.
Keyword overrides given to :func:`evcs_gym.load_scenario` go through the same checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from evcs_gym.errors import ScenarioError

__all__ = ["FAST_STOP_SETTINGS", "STOP_SETTINGS", "ScenarioSettings", "StationOverride"]

STOP_SETTINGS: tuple[str, ...] = (
    "ue_max_iterations",
    "ue_payoff_precision",
    "ue_payoff_min_iterations",
    "ue_payoff_min_iterations_near",
    "ue_payoff_near_excess",
    "ue_payoff_min_window",
    "ue_payoff_floor",
    "ue_stop_settled_ratio",
)
"""The settings that only say when a UE loop stops and what it answers: the cap and the
stationary stop. The switching never reads them, so a loop run under other values of
them is the same loop cut elsewhere (:meth:`UETrace.payoff
<evcs_gym.ue.evaluator.UETrace.payoff>`), and the warm start never reads them either:
:meth:`NetworkData.with_stop_settings <evcs_gym.network.NetworkData.with_stop_settings>`
changes them on a loaded scenario without preparing it again."""

FAST_STOP_SETTINGS: Mapping[str, Any] = MappingProxyType(
    {
        "ue_payoff_min_iterations": 10,
        "ue_payoff_min_iterations_near": 10,
        "ue_payoff_precision": 0.05,
    }
)
"""A cheaper stationary stop for *training* evaluations (``evcs-gym train
--train-payoffs fast``): loops that do not meet the stop rule may end after 10
iterations, once every station's revenue is known to 5 % (the game's payoff: 30, or 20
near the rule, and 3 %). The same loops, cut earlier. On 32 price profiles of the
README's Sioux Falls training run (8 of its random warm-up, 24 after), traced and cut
both ways: 17.6 instead of 41.2 UE iterations on the warm-up's, 17.0 instead of 33.3
after; a station's revenue moved by 2.7 % on average (90th percentile 4.8 %, 3.0 % on
the learners' profiles) of ``max(revenue, 0.25 × mean revenue per station)``, about
the game payoff's own standard error. Not the default: the one Sioux Falls run trained
on it so far verified at a higher NashConv than the run on the game's payoff (the
research notes, "Training on fast payoffs")."""


@dataclass(frozen=True)
class StationOverride:
    """Per-station properties of the charging link (``None`` = scenario default)."""

    length: float | None = None
    """Charging link length in m (with the speed it sets the charging time)."""
    free_flow_speed: float | None = None
    """Charging link free-flow speed in m/s."""
    number_of_lanes: int | None = None
    """Parallel chargers: lanes of the charging link (capacity scales with it)."""


@dataclass(frozen=True)
class ScenarioSettings:
    """All settings of a scenario, with units (the docs' settings reference lists them)."""

    network_name: str = "unnamed"
    """Human-readable scenario name."""
    simulation_time: float = 7200.0
    """Simulated horizon in s; trips unfinished by then count as not completed."""
    deltan: int = 5
    """UXsim platoon size: vehicles per simulated platoon."""
    demand_multiplier: float = 1.0
    """Scales every demand rate ``q``."""
    charging_car_rate: float = 0.1
    """Share of each OD's demand that must charge exactly once on the way."""
    charging_link_length: float = 3000.0
    """Length of the charging self-loop link in m."""
    charging_link_free_flow_speed: float = 10.0
    """Speed on the charging link in m/s (length / speed = charging time)."""
    charging_periods: int = 8
    """Number of equal pricing periods over ``simulation_time``."""
    charging_nodes: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Station node name -> (price_min, price_max) in currency per kWh."""
    routes_per_od: int = 10
    """k: routes kept per OD pair and class (k shortest by free-flow time)."""
    time_value_coefficient: float = 0.005
    """Value of time in currency per s."""
    charging_demand_per_vehicle: float = 50.0
    """Energy bought per charging vehicle in kWh."""
    ue_convergence_threshold: float = 0.01
    """UE stop rule: mean relative cost gap over all completed platoons. Sioux Falls sets
    0.008: at 0.01 an evaluation from a free-flow start could meet the rule while the
    non-charging traffic, and the charging split that follows it, was still settling
    (docs/research/stop-rule.md)."""
    ue_charging_gap_threshold: float = 0.01
    """UE stop rule: mean relative cost gap over the completed *charging* platoons (their
    station and period choices are the revenues; on Sioux Falls they are 10 % of the
    platoons, so the all-platoon mean alone hides them)."""
    ue_charging_tail_gap: float = 0.05
    """UE stop rule, tail: a completed charging platoon whose relative gap exceeds this
    counts as mis-assigned ..."""
    ue_charging_tail_share: float = 0.02
    """... and at most this share of the completed charging platoons may be mis-assigned."""
    ue_tolerance_scale: float = 1.0
    """Multiplies every stop-rule tolerance at once: ``ue_convergence_threshold``,
    ``ue_charging_gap_threshold``, ``ue_charging_tail_gap``, ``ue_charging_tail_share``
    and the allowed share of uncompleted trips ``1 - ue_min_completed_ratio``. 0.5 halves
    them all; it never loosens the switching rule's own parameters."""
    ue_convergence_stable_rounds: int = 3
    """UE stop rule: consecutive iterations the gap and completion criteria must hold."""
    ue_max_iterations: int = 100
    """UE iteration cap (then ``converged=False``)."""
    ue_payoff_precision: float = 0.03
    """Stationary stop: a loop that has not met its stop rule ends once every station's
    revenue is known to this relative standard error (``ue_stats["revenue_se"]``), and
    the evaluation returns the mean over the loop's stationary window
    (:mod:`evcs_gym.ue.stopping`). A station's size is its revenue, or
    ``ue_payoff_floor`` times the mean revenue per station where that is larger. 0 turns
    the stationary stop off: such loops run to ``ue_max_iterations`` and return the
    stationary mean of the whole run."""
    ue_payoff_min_iterations: int = 30
    """Stationary stop: no loop far from its stop rule ends on it before this many
    iterations. At uniform-random prices the start leaves a transient of 15–30
    iterations on Sioux Falls (a station 10 % off its level for 20 iterations) that a
    shorter run cannot tell from the orbit."""
    ue_payoff_min_iterations_near: int = 20
    """Stationary stop: the minimum for a loop *near* its rule (``ue_payoff_near_excess``),
    whose transient is short."""
    ue_payoff_near_excess: float = 2.0
    """Stationary stop: a loop is near its rule when the median over its stationary
    window of each iteration's excess (the largest ratio of a stop-rule criterion to
    its tolerance) is at most this. On Sioux Falls near-equilibrium, spike and
    training-like profiles sit at 0.6–2.3, uniform-random ones at 3–15."""
    ue_payoff_min_window: int = 10
    """Stationary stop: the stationary window (after the MSER truncation) must hold at
    least this many iterations."""
    ue_payoff_floor: float = 0.25
    """Stationary stop: a station is judged on ``max(revenue, floor × mean revenue per
    station)``, so a station with few customers does not hold the loop to a relative
    precision its few platoons can never give."""
    ue_stop_settled_ratio: float | None = None
    """A loop may end — on its stop rule or on the stationary stop — only once its
    revenues have been settled for at least this many times as long as their transient
    lasted: ``n − d ≥ ratio · d`` after ``n`` iterations, ``d`` the MSER truncation of
    the revenue history (:func:`~evcs_gym.ue.stationary.mser_truncation`), checked from
    ``ue_payoff_min_window`` iterations on. A loop started far from its equilibrium (from
    free-flow routes) meets the gap tolerances while the stations' shares still drift,
    and without this it can stop a few per cent short of the level it reaches later;
    a loop that starts near it (the warm start) has no transient and is not held.
    ``None`` (the default, and every 0.2.0 game's): not checked. The warm start's own
    solve never checks it."""
    ue_min_completed_ratio: float = 0.95
    """UE stop rule: minimum share of trips completed."""
    ue_switch_memory: float = 0.5
    """Switching: weight of the past in the smoothed route costs
    ``c̄ ← (1 − memory)·c + memory·c̄`` (0 = latest costs only)."""
    ue_switch_sensitivity: float = 3.0
    """Switching: a platoon with smoothed relative gap g (that is eligible)
    switches with probability ``min(1, sensitivity * g) / (1 + decay * n)``."""
    ue_switch_decay: float = 0.0
    """Switching: step-size decay per iteration n."""
    ue_switch_budget: float = 0.01
    """Targeted rule: share of platoons eligible to switch per iteration — those with the
    largest smoothed gaps (in (0, 1]; 0.01 ≈ 75 of Sioux Falls' ~7,500 platoons)."""
    ue_switch_charging_budget: float = 0.05
    """Targeted rule: share of the *charging* platoons eligible to switch per iteration,
    ranked among themselves (0.05 ≈ 38 of Sioux Falls' 750 charging platoons); the
    non-charging ones get ``ue_switch_budget`` of their own number."""
    ue_switch_charging_sensitivity: float = 20.0
    """Targeted rule: ``ue_switch_sensitivity`` for the charging platoons. Their gaps are
    real unilateral savings (a moved platoon realises the predicted cost to within a
    few per cent), so an eligible charging platoon with a smoothed gap of 5 % or more
    moves for sure: at 3, a platoon 6 % from its best route stayed for 20 iterations."""
    ue_switch_charging_max_prob: float = 0.5
    """Targeted rule: a charging platoon moves with probability at most this."""
    ue_switch_charging_memory: float = 0.5
    """Targeted rule: ``ue_switch_memory`` for the charging platoons."""
    ue_price_aware_start: bool = True
    """Before the first simulation of an evaluation, move every charging platoon whose
    route has a relative gap above the charging mean-gap tolerance to its cheapest route
    under the *new* prices, costed on the link travel times of the start (the reference
    equilibrium kept at load). The start then carries none of the reference's station
    and period choices that the new prices make wrong."""
    ue_price_aware_start_gap: float | None = None
    """The price-aware start moves a charging platoon whose relative gap exceeds this.
    ``None`` (the default, and every 0.2.0 game's): the charging mean-gap tolerance
    (``ue_charging_gap_threshold``). With logit tastes many platoons sit within that
    tolerance of another station, so a price change moves too few of them at the start
    and the loop can meet its stop rule near the reference's shares; 0 moves every
    platoon that has a cheaper alternative at the new prices."""
    ue_switch_budget_min: int = 50
    """Targeted rule: at least this many platoons are eligible per iteration (small
    scenarios: 50 of the tiny scenario's 450 platoons)."""
    ue_uncompleted_switch_prob: float = 0.3
    """Probability that a vehicle which did not complete its trip moves to its cheapest route."""
    flow_scale_factor: float = 100.0
    """Normalisation constant for observed flows (vehicles per period)."""
    reward_scale: float = 10000.0
    """Fixed normalisation constant for rewards (currency) used by envs and baselines."""
    energy_cost_per_kwh: float = 0.0
    """Station's cost per kWh sold; rewards are ``(price - energy_cost) * energy * flow``."""
    default_seed: int = 0
    """Seed used when an evaluation is asked for with ``seed=None``."""
    station_taste_scale: float = 0.0
    """Heterogeneous drivers: every charging platoon carries a fixed taste for every
    station, in currency, added to the cost of the routes through it — Gumbel draws of
    this scale, shifted so that each platoon's smallest is 0. Identical platoons then
    split between stations as in a logit model of this scale instead of all being
    near-indifferent at once. 0 (the dataclass default, and Berlin's and Anaheim's):
    identical drivers. Sioux Falls and ``tiny`` set 4. The tastes enter choices and
    gaps, never revenues."""
    station_taste_seed: int = 0
    """Seed of the taste draws (``station_taste_scale``): part of the scenario, not of an
    evaluation's seed, so every evaluation faces the same drivers."""
    station_taste_logit: bool = False
    """Draw the tastes so that shares follow the multinomial logit over any number of
    alternatives: each alternative costs its route cost *minus* a Gumbel draw of scale
    ``station_taste_scale`` (utility plus Gumbel noise). ``False`` (the default, and every
    0.2.0 game's) adds the draws instead, which is the logit between two alternatives but
    not among three or more: at equal costs the three-way shares come out even, yet a
    dearer third alternative keeps less than its logit share (a cost 3 above two others,
    at scale 4: 15.7 % instead of 19.1 %). The market games turn it on."""
    station_taste_quasi_random: bool = False
    """Draw the tastes from a scrambled Halton sequence (quasi-Monte Carlo, seeded by
    ``station_taste_seed``) mapped through the Gumbel quantile function, instead of from
    pseudo-random numbers. The charging platoons' tastes then fill the distribution
    evenly: shares follow the logit model to within a few platoons, not to a sampling
    error of order √n, and a station's revenue is a smooth function of its prices
    instead of a lumpy one whose best responses jump. ``False`` (the default, and every
    0.2.0 game's): pseudo-random draws."""
    charging_outside_cost: float | None = None
    """The outside option of charging drivers, in currency: a charging platoon may skip
    the network's stations, drive one of its trip's non-charging routes and pay this
    fixed cost instead (charging elsewhere: at home, at work, at another operator's
    station). It is chosen in the same UE as routes and stations, earns no station
    anything, and with ``station_taste_scale`` > 0 carries a taste draw of its own, so
    shares follow a logit model with an outside good. ``None`` (the default, and every
    0.2.0 game's): no outside option, every charging driver charges on the network."""
    charging_chargers: float | None = None
    """Chargers at each station: vehicles that charge at once. The charging link then
    discharges at most ``chargers / charging time`` vehicles per s (UXsim's
    ``capacity_out``; the charging time is the link's free-flow time), so arrivals above
    that rate queue on it, and the queue's wait is part of every charging route's cost
    in the UE. ``None`` (the default, and every 0.2.0 game's): the link's
    fundamental-diagram capacity, far above any station's arrivals (no queues)."""
    warm_start_price: float | None = None
    """Uniform reference price whose equilibrium, computed once when the scenario loads,
    is every evaluation's starting assignment. ``None``: the middle of the common
    price bounds. Set ``warm_start=False`` in :func:`load_scenario` for a free-flow start."""
    warm_start_max_iterations: int = 100
    """Iteration cap of the warm start's own UE solve (it never stops on the stationary
    stop: its final assignment is the start of every evaluation)."""
    warm_start_gap_ratio: float = 0.5
    """The warm start is solved to a mean relative gap of this times
    ``ue_convergence_threshold`` (same stop rule otherwise). A start tighter than the stop
    rule lets evaluations near the reference price pass it from their first iterations
    instead of hovering at the threshold (Sioux Falls, training-noise prices: 3.0 instead
    of 3.9 iterations on average, and far less spread between evaluations)."""
    station_overrides: dict[str, StationOverride] = field(default_factory=dict)
    """Station node name -> :class:`StationOverride` (charging-link length, speed, lanes)."""

    @property
    def stop_tolerances(self) -> dict[str, float]:
        """The stop rule's tolerances after ``ue_tolerance_scale``.

        Keys: ``mean_gap``, ``charging_mean_gap``, ``charging_tail_gap``,
        ``charging_tail_share``, ``min_completed_ratio``.

        Example:
            >>> t = ScenarioSettings(ue_tolerance_scale=0.5).stop_tolerances
            >>> t["charging_mean_gap"], t["min_completed_ratio"]
            (0.005, 0.975)
        """
        k = self.ue_tolerance_scale
        return {
            "mean_gap": k * self.ue_convergence_threshold,
            "charging_mean_gap": k * self.ue_charging_gap_threshold,
            "charging_tail_gap": k * self.ue_charging_tail_gap,
            "charging_tail_share": k * self.ue_charging_tail_share,
            "min_completed_ratio": max(0.0, 1.0 - k * (1.0 - self.ue_min_completed_ratio)),
        }

    @property
    def digest(self) -> str:
        """A short hash (12 hex digits) of every setting: the game these settings define.

        Results files, env infos and run records carry it next to the package version,
        so that a figure names the game it was measured on; any change of a setting
        changes it. A setting added after 0.2.0 counts only when it is on, so a 0.2.0
        game keeps its digest.

        Example:
            >>> a = ScenarioSettings(charging_nodes={"A": (0.5, 2.0)})
            >>> a.digest == ScenarioSettings(charging_nodes={"A": (0.5, 2.0)}).digest
            True
            >>> a.digest == dataclasses.replace(a, ue_payoff_precision=0.02).digest
            False
        """
        from evcs_gym.utils import to_jsonable

        fields = dataclasses.asdict(self)
        for name, off in _ADDED_SINCE_0_2_0.items():
            if fields[name] == off:  # off: the 0.2.0 game, whose digest stands
                del fields[name]
        text = json.dumps(to_jsonable(fields), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def period_length(self) -> float:
        """Length of one pricing period in s."""
        return self.simulation_time / self.charging_periods

    @classmethod
    def from_mapping(cls, raw: dict[str, Any], source: str = "settings") -> ScenarioSettings:
        """Build validated settings from a plain mapping (e.g. parsed JSON plus overrides).

        Raises:
            ScenarioError: unknown key, wrong type or value out of range; the message
                names ``source``, the key and the value.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ScenarioError(
                f"{source}: unknown setting key(s) {unknown}; known keys are {sorted(known)}"
            )
        kwargs: dict[str, Any] = {}
        for name, value in raw.items():
            kwargs[name] = convert_setting(name, value, source)
        settings = cls(**kwargs)
        settings.validate(source)
        return settings

    def validate(self, source: str = "settings") -> None:
        """Check every value's range.

        Raises:
            ScenarioError: the first value out of range, named with ``source``.
        """
        for names, within, what in _RANGES:
            for name in names:
                value = getattr(self, name)
                if not within(value):
                    raise ScenarioError(f"{source}: `{name}` {what}, got {value!r}")
        for name, within, what in _OPTIONAL_RANGES:
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and within(value)):
                raise ScenarioError(f"{source}: `{name}` {what} or null, got {value!r}")
        self._validate_stations(source)
        self._validate_size(source)
        for node in self.station_overrides:
            if node not in self.charging_nodes:
                raise ScenarioError(
                    f"{source}: `station_overrides` names {node!r}, which is not in "
                    f"`charging_nodes` {sorted(self.charging_nodes)}"
                )

    def _validate_stations(self, source: str) -> None:
        """At least one station, each with finite bounds ``0 <= price_min <= price_max``."""
        if not self.charging_nodes:
            raise ScenarioError(f"{source}: `charging_nodes` must name at least one station")
        for node, (low, high) in self.charging_nodes.items():
            if not (math.isfinite(low) and math.isfinite(high)):
                raise ScenarioError(
                    f"{source}: `charging_nodes[{node!r}]` bounds must be finite, got {[low, high]}"
                )
            if low > high:
                raise ScenarioError(
                    f"{source}: `charging_nodes[{node!r}]` has price_min {low} > price_max {high}"
                )
            if low < 0:
                raise ScenarioError(
                    f"{source}: `charging_nodes[{node!r}]` has negative price_min {low}"
                )

    def _validate_size(self, source: str) -> None:
        """Bounds that keep a simulation within memory and time: an absurd value fails
        here, naming its key, rather than inside the engine."""
        steps = self.simulation_time / self.deltan
        limits = [
            ("simulation_time", steps, MAX_STEPS, f"{MAX_STEPS:,} steps of `deltan` s"),
            (
                "charging_periods",
                self.charging_periods,
                steps,
                "one period per simulation step (`simulation_time` / `deltan`)",
            ),
            ("routes_per_od", self.routes_per_od, MAX_ROUTES_PER_OD, f"{MAX_ROUTES_PER_OD}"),
            ("ue_max_iterations", self.ue_max_iterations, MAX_ITERATIONS, f"{MAX_ITERATIONS:,}"),
            (
                "warm_start_max_iterations",
                self.warm_start_max_iterations,
                MAX_ITERATIONS,
                f"{MAX_ITERATIONS:,}",
            ),
        ]
        lengths = {"charging_link_length": self.charging_link_length}
        for node, ov in self.station_overrides.items():
            if ov.length:
                lengths[f"station_overrides[{node!r}].length"] = ov.length
        for key, length in lengths.items():
            cells = link_cells(length, self.charging_link_free_flow_speed, self.deltan)
            limits.append((key, cells, MAX_LINK_CELLS, f"{MAX_LINK_CELLS:,} cells of a link"))
        for key, value, limit, what in limits:
            if value > limit:
                raise ScenarioError(
                    f"{source}: `{key}` = {getattr(self, key, value)!r} exceeds {what}"
                )


_RANGES: tuple[tuple[tuple[str, ...], Callable[[Any], bool], str], ...] = (
    (
        (
            "simulation_time",
            "deltan",
            "charging_link_length",
            "charging_link_free_flow_speed",
            "charging_periods",
            "routes_per_od",
            "charging_demand_per_vehicle",
            "ue_convergence_threshold",
            "ue_convergence_stable_rounds",
            "ue_max_iterations",
            "ue_payoff_min_iterations",
            "ue_payoff_min_iterations_near",
            "ue_payoff_near_excess",
            "warm_start_max_iterations",
            "ue_switch_budget_min",
            "ue_charging_gap_threshold",
            "ue_charging_tail_gap",
            "ue_tolerance_scale",
            "flow_scale_factor",
            "reward_scale",
        ),
        lambda v: v > 0,
        "must be positive",
    ),
    (
        (
            "demand_multiplier",
            "time_value_coefficient",
            "ue_switch_sensitivity",
            "ue_switch_charging_sensitivity",
            "ue_switch_decay",
            "energy_cost_per_kwh",
            "station_taste_scale",
            "station_taste_seed",
        ),
        lambda v: v >= 0,
        "must be >= 0",
    ),
    (("ue_payoff_precision", "ue_payoff_floor"), lambda v: 0 <= v < 1, "must be in [0, 1)"),
    (("ue_payoff_min_window",), lambda v: v >= 2, "must be >= 2"),
    (
        ("ue_switch_budget", "ue_switch_charging_budget", "warm_start_gap_ratio"),
        lambda v: 0 < v <= 1,
        "must be in (0, 1]",
    ),
    (
        (
            "charging_car_rate",
            "ue_min_completed_ratio",
            "ue_uncompleted_switch_prob",
            "ue_switch_memory",
            "ue_switch_charging_memory",
            "ue_switch_charging_max_prob",
            "ue_charging_tail_share",
        ),
        lambda v: 0 <= v <= 1,
        "must be in [0, 1]",
    ),
)
"""Each group of settings, the range its values must be in, and the error's wording
(a NaN fails every range)."""

_OPTIONAL_RANGES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("charging_outside_cost", lambda v: v >= 0, "must be >= 0"),
    ("ue_price_aware_start_gap", lambda v: v >= 0, "must be >= 0"),
    ("ue_stop_settled_ratio", lambda v: v > 0, "must be > 0"),
    ("charging_chargers", lambda v: v > 0, "must be > 0"),
)
"""Settings that may be null (off), else finite and in range."""

MAX_STEPS = 2_000_000
"""Most simulation steps (``simulation_time / deltan``) a scenario may take."""
MAX_ROUTES_PER_OD = 50
MAX_ITERATIONS = 100_000
MAX_LINK_CELLS = 100_000
"""Most cells (length / (free-flow speed × ``deltan``)) one link may have."""


def link_cells(length: float, free_flow_speed: float, deltan: float) -> float:
    """Cells of a link in the simulation: its length over the distance a vehicle covers
    at free flow in one step of ``deltan`` s (a reaction time of 1 s per vehicle)."""
    return length / (free_flow_speed * deltan)


_ADDED_SINCE_0_2_0: dict[str, Any] = {
    "station_taste_logit": False,
    "station_taste_quasi_random": False,
    "charging_outside_cost": None,
    "charging_chargers": None,
    "ue_price_aware_start_gap": None,
    "ue_stop_settled_ratio": None,
}
"""Settings added after 0.2.0, each with the value that turns it off (the 0.2.0 game)."""

_INT_KEYS = {
    "deltan",
    "charging_periods",
    "routes_per_od",
    "ue_convergence_stable_rounds",
    "ue_max_iterations",
    "ue_payoff_min_iterations",
    "ue_payoff_min_iterations_near",
    "ue_payoff_min_window",
    "warm_start_max_iterations",
    "ue_switch_budget_min",
    "default_seed",
    "station_taste_seed",
}
_FLOAT_KEYS = {
    "simulation_time",
    "demand_multiplier",
    "charging_car_rate",
    "charging_link_length",
    "charging_link_free_flow_speed",
    "time_value_coefficient",
    "charging_demand_per_vehicle",
    "ue_convergence_threshold",
    "ue_charging_gap_threshold",
    "ue_charging_tail_gap",
    "ue_charging_tail_share",
    "ue_tolerance_scale",
    "ue_payoff_precision",
    "ue_payoff_near_excess",
    "ue_payoff_floor",
    "ue_switch_charging_budget",
    "ue_switch_charging_sensitivity",
    "ue_switch_charging_memory",
    "ue_switch_charging_max_prob",
    "ue_min_completed_ratio",
    "ue_uncompleted_switch_prob",
    "ue_switch_memory",
    "warm_start_gap_ratio",
    "ue_switch_sensitivity",
    "ue_switch_decay",
    "ue_switch_budget",
    "flow_scale_factor",
    "reward_scale",
    "energy_cost_per_kwh",
    "station_taste_scale",
}


def convert_setting(name: str, value: Any, source: str = "settings") -> Any:
    """``value`` of setting ``name`` in the field's type (e.g. JSON's ``10.0`` for an int).

    Raises:
        ScenarioError: a value of the wrong type, named with ``source`` and ``name``.
    """
    where = f"{source}: `{name}`"
    for keys, convert in _CONVERTERS:
        if name in keys:
            return convert(value, where)
    raise AssertionError(f"unhandled settings key {name}")  # pragma: no cover


def _to_int(value: Any, where: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise ScenarioError(f"{where} must be an integer, got {value!r}")
    return int(value)


def _to_float(value: Any, where: str, kind: str = "a number") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{where} must be {kind}, got {value!r}")
    if not math.isfinite(value):
        raise ScenarioError(f"{where} must be finite, got {value!r}")
    return float(value)


def _to_optional_float(value: Any, where: str) -> float | None:
    return None if value is None else _to_float(value, where, "a number or null")


def _to_bool(value: Any, where: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ScenarioError(f"{where} must be true or false, got {value!r}")
    return bool(value)


def _to_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"{where} must be a string, got {value!r}")
    return value


def _to_price_bounds(value: Any, where: str) -> dict[str, tuple[float, float]]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{where} must map station node -> [price_min, price_max]")
    out: dict[str, tuple[float, float]] = {}
    for node, bounds in value.items():
        ok = isinstance(bounds, (list, tuple)) and len(bounds) == 2
        ok = ok and all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
        if not ok:
            raise ScenarioError(f"{where}[{node!r}] must be [price_min, price_max], got {bounds!r}")
        out[str(node)] = (float(bounds[0]), float(bounds[1]))
    return out


def _to_station_overrides(value: Any, where: str) -> dict[str, StationOverride]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{where} must map station node -> {{length, free_flow_speed, ...}}")
    overrides: dict[str, StationOverride] = {}
    allowed = {f.name for f in dataclasses.fields(StationOverride)}
    for node, spec in value.items():
        if isinstance(spec, StationOverride):
            overrides[str(node)] = spec
            continue
        if not isinstance(spec, dict) or set(spec) - allowed:
            raise ScenarioError(
                f"{where}[{node!r}] must be a mapping with keys from {sorted(allowed)}, "
                f"got {spec!r}"
            )
        for key, v in spec.items():
            if v is not None and (isinstance(v, bool) or not v > 0):
                raise ScenarioError(f"{where}[{node!r}].{key} must be positive, got {v!r}")
        overrides[str(node)] = StationOverride(**spec)
    return overrides


_CONVERTERS: tuple[tuple[Collection[str], Callable[[Any, str], Any]], ...] = (
    (_INT_KEYS, _to_int),
    (_FLOAT_KEYS, _to_float),
    (("ue_price_aware_start", "station_taste_logit", "station_taste_quasi_random"), _to_bool),
    (("network_name",), _to_str),
    (
        (
            "warm_start_price",
            "charging_outside_cost",
            "charging_chargers",
            "ue_price_aware_start_gap",
            "ue_stop_settled_ratio",
        ),
        _to_optional_float,
    ),
    (("charging_nodes",), _to_price_bounds),
    (("station_overrides",), _to_station_overrides),
)
"""Each setting's converter, by the keys it converts."""
