"""The stateless revenue evaluator: prices + seed -> rewards, flows, UE statistics.

:class:`EVCSRewardEvaluator` computes a dynamic user equilibrium (UE-DTA) of route and
station choice on UXsim's C++ engine for one joint price profile and returns an
:class:`EvalResult`. It is a pure function of (scenario, prices, seed): every call
starts from the scenario's own initial assignment, and all randomness comes from
generators seeded by ``seed``.

The UE loop (DESIGN.md, evaluation semantics 5):

0. start from the scenario's initial assignment (the reference equilibrium), made
   price-aware: every charging platoon whose route there is dearer than its best
   alternative at *these* prices (costed on the reference's link times) by more than
   the charging gap tolerance moves to that alternative;
1. simulate the current assignment (one platoon per enforced route);
2. for every platoon compute the cost of every route in its set — value of time ×
   travel time + for charging routes the price of the period in which it enters the
   charging link × energy — by walking the route through this simulation's
   time-dependent link travel times (:mod:`evcs_gym.costs`; with heterogeneous drivers
   plus the platoon's fixed taste for the station) *from the moment the
   platoon left its origin node's queue* (UXsim holds departing vehicles there; the
   wait counts in the travel time). The platoon's experienced cost is that of its own
   route, measured the same way, so chosen and alternative routes are compared on one
   footing (the simulated arrival differs from the walk by a few seconds, reported as
   ``ue_stats["travel_time_model_error"]``);
3. relative gap of a platoon = (cost − best) / cost; stop when, for
   ``ue_convergence_stable_rounds`` iterations in a row, :class:`GapStats` meets
   ``settings.stop_tolerances``: the mean gap over completed platoons, the mean gap
   over completed *charging* platoons, the share of charging platoons above the tail
   gap and the completed share; else at ``ue_max_iterations`` (``converged=False``),
   or earlier if the loop has stalled far from the rule (``ue_stall_patience``: 20 in
   the bundled road scenarios; ``converged=False``,
   ``ue_stats["stop_reason"] == "stalled"``);
4. otherwise switch platoons to their cheapest route (the switching rule below) and
   repeat.

The switching rule is pluggable (:mod:`evcs_gym.switching`); the default decides on
exponentially smoothed route costs and ranks charging platoons apart.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.costs import RouteCoster, relative_gap
from evcs_gym.network import NetworkData
from evcs_gym.prices import price_matrix
from evcs_gym.settings import ScenarioSettings
from evcs_gym.simulation import SimulationOutput, WorldBuilder
from evcs_gym.switching import SwitchInput, make_switching_rule
from evcs_gym.utils import FieldwiseEquality, to_jsonable

__all__ = [
    "EVCSRewardEvaluator",
    "EvalResult",
    "GapStats",
    "UETrace",
    "compute_warm_start",
    "gap_summary",
    "ue_streams",
]

_SEED_DOMAIN = 0x45564353  # "EVCS": separates our streams from other users of the seed


@dataclass(eq=False)
class EvalResult(FieldwiseEquality):
    """Outcome of one evaluation. Equality compares every field bit for bit except timings.

    Attributes:
        rewards: station -> reward (revenue minus energy cost) in currency.
        flows: station -> (n_periods,) vehicles that started charging in each period.
        revenues: station -> revenue Σ price × flow × energy.
        prices: station -> the (n_periods,) prices evaluated.
        ue_iterations: simulations run by the UE loop.
        converged: whether the stop rule was met before ``ue_max_iterations``.
        ue_stats: ``stop_reason`` (``"converged"``, ``"stalled"`` or
            ``"max_iterations"``); at the final iteration ``relative_gap`` (mean over
            completed platoons), ``completed_ratio``, ``charging_relative_gap`` and
            ``charging_tail_share`` (the stop rule's charging criteria),
            ``charging_gap`` / ``non_charging_gap`` (:func:`gap_summary`: mean, p95,
            max, shares above 1 / 5 / 10 %), ``stop_tolerances``; per iteration
            ``gap_history``, ``charging_gap_history``, ``charging_tail_history``,
            ``completed_history``, ``switch_history``; and
            ``simulated_charging_vehicles``, ``simulated_non_charging_vehicles``,
            ``charging_vehicles_completed``, ``charging_vehicles_charged``,
            ``travel_time_model_error``, ``mean_travel_time``.
        seed: the seed used (``None`` resolved to the scenario's default).
        timings: wall-clock seconds by phase (not part of equality).
    """

    rewards: dict[str, float]
    flows: dict[str, np.ndarray]
    revenues: dict[str, float]
    prices: dict[str, np.ndarray]
    ue_iterations: int
    converged: bool
    ue_stats: dict[str, Any]
    seed: int
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards.values()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (arrays as lists)."""
        return to_jsonable(dataclasses.asdict(self))


@dataclass(frozen=True)
class GapStats:
    """The stop rule's view of one UE iteration (relative gaps of completed platoons)."""

    mean_gap: float
    """Mean gap over all completed platoons."""
    charging_mean_gap: float
    """Mean gap over the completed charging platoons (0 if the scenario has none)."""
    charging_tail_share: float
    """Share of completed charging platoons whose gap exceeds the tail gap."""
    completed_ratio: float
    """Share of all platoons that completed their trip."""
    unscaled_tail_share: float | None = None
    """The tail share at the tail gap before ``ue_tolerance_scale``, where the rule's
    tail gap is scaled (``None``: the same as ``charging_tail_share``). The stall stop
    reads it (:meth:`unscaled`)."""

    @classmethod
    def of(
        cls,
        gap: np.ndarray,
        completed: np.ndarray,
        charging: np.ndarray,
        tail_gap: float,
        unscaled_tail_gap: float | None = None,
    ) -> GapStats:
        """The statistics of one iteration's relative ``gap`` per platoon, with the tail
        share above ``tail_gap`` (and above ``unscaled_tail_gap`` where it differs)."""
        n = len(gap)
        done_ch = completed & charging
        stuck = charging.any() and not done_ch.any()  # every charging trip stuck

        def tail_share(limit: float) -> float:
            if stuck:
                return 1.0
            return float((gap[done_ch] > limit).mean()) if done_ch.any() else 0.0

        if stuck:
            ch_mean = 1.0
        else:
            ch_mean = float(gap[done_ch].mean()) if done_ch.any() else 0.0
        unscaled = None
        if unscaled_tail_gap is not None and unscaled_tail_gap != tail_gap:
            unscaled = tail_share(unscaled_tail_gap)
        return cls(
            mean_gap=float(gap[completed].mean()) if completed.any() else 1.0,
            charging_mean_gap=ch_mean,
            charging_tail_share=tail_share(tail_gap),
            completed_ratio=float(completed.mean()) if n else 1.0,
            unscaled_tail_share=unscaled,
        )

    def unscaled(self) -> GapStats:
        """These statistics as the rule before ``ue_tolerance_scale`` sees them.

        Example:
            >>> GapStats(0.004, 0.005, 0.10, 1.0, unscaled_tail_share=0.01).unscaled()
            GapStats(mean_gap=0.004, charging_mean_gap=0.005, charging_tail_share=0.01, \
completed_ratio=1.0, unscaled_tail_share=None)
        """
        if self.unscaled_tail_share is None:
            return self
        return dataclasses.replace(
            self, charging_tail_share=self.unscaled_tail_share, unscaled_tail_share=None
        )

    def excess(self, tol: Mapping[str, float]) -> float:
        """The largest ratio of a stop-rule criterion to its tolerance (≤ 1 when all hold).

        The completed criterion counts as the uncompleted share over the allowed one.
        A zero tolerance makes any positive value infinitely far.

        Example:
            >>> tol = {"mean_gap": 0.01, "charging_mean_gap": 0.01,
            ...        "charging_tail_share": 0.02, "min_completed_ratio": 0.95}
            >>> GapStats(0.005, 0.02, 0.01, 1.0).excess(tol)
            2.0
        """
        pairs = (
            (self.mean_gap, tol["mean_gap"]),
            (self.charging_mean_gap, tol["charging_mean_gap"]),
            (self.charging_tail_share, tol["charging_tail_share"]),
            (1.0 - self.completed_ratio, 1.0 - tol["min_completed_ratio"]),
        )
        return max(
            value / limit if limit > 0 else (0.0 if value <= 0 else float("inf"))
            for value, limit in pairs
        )

    def meets(self, tol: Mapping[str, float]) -> bool:
        """Whether this iteration satisfies the stop rule (``settings.stop_tolerances``)."""
        return (
            self.mean_gap <= tol["mean_gap"]
            and self.charging_mean_gap <= tol["charging_mean_gap"]
            and self.charging_tail_share <= tol["charging_tail_share"]
            and self.completed_ratio >= tol["min_completed_ratio"]
        )


def gap_summary(gap: np.ndarray) -> dict[str, float]:
    """Mean, p95, max and shares above 1 / 5 / 10 % of a set of relative gaps.

    Example:
        >>> gap_summary(np.array([0.0, 0.02, 0.2]))["share_above_5pct"]
        0.3333333333333333
    """
    if len(gap) == 0:
        nan = float("nan")
        return {
            "count": 0,
            "mean": nan,
            "p95": nan,
            "max": nan,
            "share_above_1pct": nan,
            "share_above_5pct": nan,
            "share_above_10pct": nan,
        }
    return {
        "count": int(len(gap)),
        "mean": float(gap.mean()),
        "p95": float(np.percentile(gap, 95)),
        "max": float(gap.max()),
        "share_above_1pct": float((gap > 0.01).mean()),
        "share_above_5pct": float((gap > 0.05).mean()),
        "share_above_10pct": float((gap > 0.10).mean()),
    }


@dataclass(eq=False)
class UETrace:
    """Every iteration of one UE loop, as :meth:`EVCSRewardEvaluator.trace` recorded it.

    The switching never reads the stall stop or the cap, so one long trace (a high
    ``ue_max_iterations``, ``ue_stall_patience=0``) tells where any such rule would have
    stopped the same loop, and with which revenues (:meth:`stop`):
    ``benchmarks/bench_stall_stop.py`` chooses the stall patience that way.

    Attributes:
        stats: the stop rule's :class:`GapStats` at every iteration.
        flows: (n_iterations, n_agents, n_periods) vehicles that started charging in
            each period, at every iteration; the last is the evaluation's result.
        revenues: (n_iterations, n_agents) Σ price × flow × energy at every iteration.
        stop_reason: why the traced loop ended (as ``ue_stats["stop_reason"]``).
    """

    stats: list[GapStats]
    flows: np.ndarray
    revenues: np.ndarray
    stop_reason: str

    @property
    def iterations(self) -> int:
        return len(self.stats)

    def stop(self, settings: ScenarioSettings) -> tuple[int, str]:
        """``(iterations, stop_reason)`` of this loop under ``settings``' stop rule.

        Exact when ``settings`` differ from the traced scenario's only in what the
        switching never reads: ``ue_stall_patience``, ``ue_stall_min_excess``,
        ``ue_stall_min_improvement``, ``ue_max_iterations`` and
        ``ue_convergence_stable_rounds`` (not the tolerances: they steer the switching).
        That evaluation's revenues are ``revenues[iterations - 1]``.

        Raises:
            ValueError: the trace ends before that rule would stop the loop.
        """
        rule = _StopRule(settings)
        for it, stats in enumerate(self.stats):
            reason = rule.update(it, stats)
            if reason is not None:
                return it + 1, reason
        raise ValueError(
            f"the trace ends after {self.iterations} iterations ({self.stop_reason}) "
            f"before this stop rule stops it (ue_max_iterations={settings.ue_max_iterations})"
        )


@dataclass
class _UEOutcome:
    sim: SimulationOutput
    route_slot: np.ndarray
    iterations: int
    stop_reason: str
    """``"converged"``, ``"stalled"`` or ``"max_iterations"``."""
    history: list[GapStats]
    final_gap: np.ndarray
    switch_history: list[int]
    time_discrepancy: float
    t_build_sim: float
    t_exec: float
    t_costs: float

    @property
    def converged(self) -> bool:
        return self.stop_reason == "converged"


class EVCSRewardEvaluator:
    """Evaluates joint price profiles on one scenario.

    Args:
        network: a loaded scenario (:func:`evcs_gym.load_scenario`).
        clip_prices: clip out-of-bound prices instead of raising ``PriceError``.

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny")
        >>> ev = EVCSRewardEvaluator(nd)
        >>> res = ev.evaluate({"A": [1.0] * 4, "B": [1.0] * 4}, seed=0)
        >>> res.converged, sorted(res.rewards)
        (True, ['A', 'B'])
        >>> res == ev.evaluate({"A": [1.0] * 4, "B": [1.0] * 4}, seed=0)
        True
    """

    def __init__(self, network: NetworkData, *, clip_prices: bool = False) -> None:
        self.network = network
        self.clip_prices = clip_prices
        self._builder = WorldBuilder(network)
        self._coster = RouteCoster(network)
        # slot (position in the platoon's route set) of the initial assignment
        routes = self._coster.routes
        init = network.initial_route_choice
        match = routes == init[:, None]
        if len(init) and not match.any(axis=1).all():  # pragma: no cover - loader invariant
            raise ValueError("initial_route_choice contains routes outside the route sets")
        self._initial_slot = np.argmax(match, axis=1)
        if network.reference_traveltime is not None:
            self._reference_tt = np.asarray(network.reference_traveltime, dtype=float)
        else:  # free-flow start: free-flow link times
            n_steps = self._coster.n_steps
            ff = network.links.free_flow_time.astype(float)
            self._reference_tt = np.repeat(ff[:, None], n_steps, axis=1)

    @property
    def agent_names(self) -> tuple[str, ...]:
        return self.network.agent_names

    def check_prices(self, prices: Mapping[str, Any]) -> np.ndarray:
        """Validated ``(n_agents, n_periods)`` price array; raises ``PriceError``."""
        nd = self.network
        return price_matrix(
            prices, nd.agent_names, nd.n_periods, nd.price_bounds, clip=self.clip_prices
        )

    def evaluate(self, prices: Mapping[str, Any], seed: int | None = None) -> EvalResult:
        """Compute the UE for ``prices`` and return rewards, flows and statistics.

        Args:
            prices: ``{station: (n_periods,) prices}`` for every station, inside bounds.
            seed: non-negative integer; ``None`` uses ``settings.default_seed``.

        Raises:
            PriceError: (a ``ValueError``) invalid prices, naming station and period.
            ValueError: invalid seed.
        """
        t0 = time.perf_counter()
        nd = self.network
        s = nd.settings
        p = self.check_prices(prices)
        seed = _check_seed(s.default_seed if seed is None else seed)
        ue = self._solve(p, seed)
        flows_mat = self._period_flows(ue.sim)
        margin = p - s.energy_cost_per_kwh
        revenue = _earnings(p, flows_mat, s.charging_demand_per_vehicle)
        reward = _earnings(margin, flows_mat, s.charging_demand_per_vehicle)
        completed = ~np.isnan(ue.sim.arrival_time)
        charging = nd.veh_charging
        sim_counts = nd.simulated_vehicles()
        travel = ue.sim.arrival_time - nd.veh_departure
        last = ue.history[-1]
        stats = {
            "stop_reason": ue.stop_reason,
            "relative_gap": last.mean_gap,
            "completed_ratio": last.completed_ratio,
            "charging_relative_gap": last.charging_mean_gap,
            "charging_tail_share": last.charging_tail_share,
            "charging_gap": gap_summary(ue.final_gap[completed & charging]),
            "non_charging_gap": gap_summary(ue.final_gap[completed & ~charging]),
            "stop_tolerances": s.stop_tolerances,
            "gap_history": [h.mean_gap for h in ue.history],
            "charging_gap_history": [h.charging_mean_gap for h in ue.history],
            "charging_tail_history": [h.charging_tail_share for h in ue.history],
            "completed_history": [h.completed_ratio for h in ue.history],
            "switch_history": list(ue.switch_history),
            "simulated_charging_vehicles": sim_counts["charging"],
            "simulated_non_charging_vehicles": sim_counts["non_charging"],
            "charging_vehicles_completed": int((completed & charging).sum()) * s.deltan,
            "charging_vehicles_charged": float(flows_mat.sum()),
            "travel_time_model_error": ue.time_discrepancy,
            "mean_travel_time": float(np.nanmean(travel)) if completed.any() else float("nan"),
        }
        agents = nd.agent_names
        return EvalResult(
            rewards={a: float(reward[i]) for i, a in enumerate(agents)},
            flows={a: flows_mat[i].copy() for i, a in enumerate(agents)},
            revenues={a: float(revenue[i]) for i, a in enumerate(agents)},
            prices={a: p[i].copy() for i, a in enumerate(agents)},
            ue_iterations=ue.iterations,
            converged=ue.converged,
            ue_stats=stats,
            seed=seed,
            timings={
                "total": time.perf_counter() - t0,
                "build_and_simulate": ue.t_build_sim,
                "simulate": ue.t_exec,
                "route_costs": ue.t_costs,
            },
        )

    def evaluate_seeds(self, prices: Mapping[str, Any], seeds: int | Sequence[int] = 6):
        """Evaluate ``prices`` at several seeds: means and standard errors per station.

        Args:
            prices: as for :meth:`evaluate`.
            seeds: a list of distinct non-negative seeds, or a count ``n`` for ``0..n-1``.

        Returns:
            :class:`evcs_gym.averaging.SeedAverage` (``.rewards``, ``.rewards_se``, ...).
        """
        from evcs_gym.averaging import SeedAverage, check_seeds

        seed_list = check_seeds(seeds)
        self.check_prices(prices)
        return SeedAverage([self.evaluate(prices, seed=s) for s in seed_list])

    def trace(self, prices: Mapping[str, Any], seed: int | None = None) -> UETrace:
        """Run the UE loop of :meth:`evaluate` and record every iteration (:class:`UETrace`).

        The same computation as :meth:`evaluate`: the last iteration's flows are its
        flows, bit for bit. For analysis of the loop and of stop rules.

        Example:
            >>> import evcs_gym
            >>> ev = EVCSRewardEvaluator(evcs_gym.load_scenario("tiny"))
            >>> prices = {"A": [0.75, 2.0, 0.75, 0.75], "B": [1.0] * 4}
            >>> tr = ev.trace(prices, seed=0)
            >>> res = ev.evaluate(prices, seed=0)
            >>> tr.iterations == res.ue_iterations, bool(tr.revenues[-1, 0] == res.revenues["A"])
            (True, True)
            >>> hasty = dataclasses.replace(ev.network.settings, ue_max_iterations=5)
            >>> tr.stop(hasty)  # where a cap of 5 would have stopped this loop
            (5, 'max_iterations')
        """
        nd = self.network
        s = nd.settings
        p = self.check_prices(prices)
        flows: list[np.ndarray] = []
        ue = self._solve(
            p,
            _check_seed(s.default_seed if seed is None else seed),
            on_iteration=lambda sim, stats: flows.append(self._period_flows(sim)),
        )
        flow = np.stack(flows)
        return UETrace(
            stats=list(ue.history),
            flows=flow,
            revenues=_earnings(p, flow, s.charging_demand_per_vehicle),
            stop_reason=ue.stop_reason,
        )

    def equilibrium_routes(self, prices: Mapping[str, Any], seed: int | None = None) -> np.ndarray:
        """Route id (see :meth:`NetworkData.route`) of every platoon at the final UE iteration.

        Same computation as :meth:`evaluate` (same prices and seed give the assignment
        behind that result); for analysis and diagnostics.
        """
        s = self.network.settings
        p = self.check_prices(prices)
        ue = self._solve(p, _check_seed(s.default_seed if seed is None else seed))
        return self._coster.routes[np.arange(len(ue.route_slot)), ue.route_slot]

    # ------------------------------------------------------------------ internals
    def _period_flows(self, sim: SimulationOutput) -> np.ndarray:
        s = self.network.settings
        dt = float(s.deltan)
        cum = np.concatenate(
            [np.zeros((sim.charging_cum_arrival.shape[0], 1)), sim.charging_cum_arrival], axis=1
        )
        bounds = np.rint(np.arange(s.charging_periods + 1) * s.period_length / dt).astype(int)
        bounds = np.minimum(bounds, cum.shape[1] - 1)
        return np.diff(cum[:, bounds], axis=1)

    def _start(self, prices: np.ndarray) -> np.ndarray:
        """Route slots the UE starts from: the scenario's start, made price-aware.

        With ``ue_price_aware_start`` every charging platoon whose route in the start has
        a relative gap above the charging mean-gap tolerance
        (``stop_tolerances["charging_mean_gap"]``) to its cheapest alternative *at these
        prices* — costed on the start's own link travel times — moves to that
        alternative before anything is simulated. The start then depends on the scenario
        and the prices only, and carries none of the reference's choices the new prices
        make wrong.
        """
        nd = self.network
        slot = self._initial_slot.copy()
        if not nd.settings.ue_price_aware_start or not nd.veh_charging.any():
            return slot
        pc = self._coster.compute(self._reference_tt, prices, nd.reference_network_entry)
        best = np.argmin(pc.cost, axis=1)
        gap = relative_gap(pc.cost, slot, best)
        move = nd.veh_charging & (gap > nd.settings.stop_tolerances["charging_mean_gap"])
        slot[move] = best[move]
        return slot

    def _solve(
        self,
        prices: np.ndarray,
        seed: int,
        on_iteration: Callable[[SimulationOutput, GapStats], None] | None = None,
    ) -> _UEOutcome:
        """The UE loop; ``on_iteration(sim, stats)`` sees every iteration's simulation."""
        nd = self.network
        s = nd.settings
        tol = s.stop_tolerances
        rng, engine_seed = ue_streams(seed)
        slot = self._start(prices)
        routes = self._coster.routes
        charging = nd.veh_charging
        n_veh = len(slot)
        rows = np.arange(n_veh)
        history: list[GapStats] = []
        switches: list[int] = []
        stop = _StopRule(s)
        stop_reason = None
        rule = make_switching_rule(s)
        t_sim = t_cost = 0.0
        exec0 = self._builder.exec_seconds
        sim = pc = None
        for it in range(s.ue_max_iterations):
            t1 = time.perf_counter()
            sim = self._builder.run(routes[rows, slot], engine_seed)
            t2 = time.perf_counter()
            pc = self._coster.compute(sim.traveltime, prices, sim.network_entry)
            completed = ~np.isnan(sim.arrival_time)
            gap = relative_gap(pc.cost, slot, np.argmin(pc.cost, axis=1))
            stats = GapStats.of(
                gap, completed, charging, tol["charging_tail_gap"], s.ue_charging_tail_gap
            )
            history.append(stats)
            t_cost += time.perf_counter() - t2
            t_sim += t2 - t1
            if on_iteration is not None:
                on_iteration(sim, stats)
            stop_reason = stop.update(it, stats)
            if stop_reason is not None:
                switches.append(0)
                break
            new_slot = rule(SwitchInput(it, pc.cost, slot, completed, charging), rng)
            switches.append(int((new_slot != slot).sum()))
            slot = new_slot
        assert sim is not None and pc is not None
        return _UEOutcome(
            sim=sim,
            route_slot=slot,
            iterations=len(history),
            stop_reason=stop_reason,
            history=history,
            final_gap=gap,
            switch_history=switches,
            time_discrepancy=_model_error(sim, pc, slot, nd.veh_departure),
            t_build_sim=t_sim,
            t_exec=self._builder.exec_seconds - exec0,
            t_costs=t_cost,
        )


class _StopRule:
    """When a UE loop ends: the stop rule, the stall stop and the cap of ``settings``.

    Call :meth:`update` once per iteration, in order; it returns ``"converged"``,
    ``"stalled"``, ``"max_iterations"`` or ``None`` (go on). Nothing here feeds back into
    the switching, so the same rule replays a recorded loop exactly (:meth:`UETrace.stop`).
    """

    def __init__(self, settings: ScenarioSettings) -> None:
        s = settings
        self.tol = s.stop_tolerances
        self.stable_rounds = s.ue_convergence_stable_rounds
        self.max_iterations = s.ue_max_iterations
        self.stall = (
            _StallWatch(s.ue_stall_patience, s.ue_stall_min_excess, s.ue_stall_min_improvement)
            if s.ue_stall_patience
            else None
        )
        # the stall stop judges the loop against the rule before ue_tolerance_scale: a
        # tighter rule then never gives up sooner than the scenario's own would
        self.stall_tol = dataclasses.replace(s, ue_tolerance_scale=1.0).stop_tolerances
        self.stable = 0

    def update(self, iteration: int, stats: GapStats) -> str | None:
        self.stable = self.stable + 1 if stats.meets(self.tol) else 0
        if self.stable >= self.stable_rounds:
            return "converged"
        if self.stall is not None and self.stall.stalled(
            iteration, stats.unscaled().excess(self.stall_tol)
        ):
            return "stalled"
        if iteration == self.max_iterations - 1:
            return "max_iterations"
        return None


class _StallWatch:
    """Tells when a UE loop has stalled far from its stop rule (``ue_stall_patience``).

    Stalled: for ``patience`` (≥ 1) iterations every excess (:meth:`GapStats.excess`) was
    above ``min_excess`` and the best excess did not drop by ``min_improvement``.

    Example:
        >>> watch = _StallWatch(patience=2, min_excess=2.0, min_improvement=0.1)
        >>> [watch.stalled(i, e) for i, e in enumerate([5.0, 4.0, 3.9, 3.8])]
        [False, False, False, True]
        >>> watch = _StallWatch(patience=2, min_excess=2.0, min_improvement=0.1)
        >>> [watch.stalled(i, e) for i, e in enumerate([1.5, 3.0, 1.8, 3.0, 3.0])]  # 1.8 is near
        [False, False, False, False, True]
    """

    def __init__(self, patience: int, min_excess: float, min_improvement: float) -> None:
        self.patience = patience
        self.min_excess = min_excess
        self.min_improvement = min_improvement
        self.best = float("inf")
        self.last_progress = 0
        self.last_near = -1

    def stalled(self, iteration: int, excess: float) -> bool:
        if excess < self.best * (1.0 - self.min_improvement):
            self.best = excess
            self.last_progress = iteration
        if excess <= self.min_excess:
            self.last_near = iteration
        return iteration - max(self.last_progress, self.last_near) >= self.patience


def ue_streams(seed: int) -> tuple[np.random.Generator, int]:
    """The UE loop's randomness for ``seed``: the switching generator and the engine seed.

    One engine seed serves every iteration (common random numbers): the UE is then a
    fixed point of one deterministic simulator, not of a new random draw each time.

    Example:
        >>> rng, engine_seed = ue_streams(0)
        >>> engine_seed == ue_streams(0)[1] and 0 <= engine_seed < 2**31 - 1
        True
    """
    rng = np.random.default_rng(np.random.SeedSequence([_SEED_DOMAIN, seed]))
    return rng, int(rng.integers(0, 2**31 - 1))


def _earnings(per_kwh: np.ndarray, flows: np.ndarray, energy: float) -> np.ndarray:
    """Σ over periods of ``per_kwh`` × flow × energy, per station (and per iteration of a
    trace): the revenue with prices, the reward with margins (price − energy cost)."""
    return (per_kwh * flows * energy).sum(axis=-1)


def _model_error(sim: SimulationOutput, pc, slot: np.ndarray, departure: np.ndarray) -> float:
    """Mean |simulated - link-sum| travel time (s) of completed platoons on their route."""
    done = ~np.isnan(sim.arrival_time)
    if not done.any():
        return float("nan")
    own = pc.travel_time[np.arange(len(slot)), slot][done]
    return float(np.abs((sim.arrival_time - departure)[done] - own).mean())


def _check_seed(seed: Any) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"`seed` must be a non-negative integer or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def compute_warm_start(network: NetworkData) -> NetworkData:
    """Return ``network`` with its initial assignment set to the UE at the reference price.

    The reference profile is uniform: ``settings.warm_start_price``, or each station's
    bound midpoint. The UE is solved once from free-flow routes with
    ``settings.default_seed``, with every stop-rule tolerance scaled by
    ``settings.warm_start_gap_ratio`` (``ue_max_iterations`` still caps it). The final
    iteration's link travel times are kept as ``reference_traveltime`` for the
    price-aware start. It depends on the scenario alone, so every process computes the
    same bits.
    """
    s = network.settings
    if s.warm_start_price is None:
        ref = {
            a: np.full(network.n_periods, (lo + hi) / 2)
            for a, (lo, hi) in network.price_bounds.items()
        }
    else:
        ref = {a: np.full(network.n_periods, s.warm_start_price) for a in network.agent_names}
    # solved tighter than the stop rule of evaluations (``warm_start_gap_ratio``)
    tight = dataclasses.replace(
        s, ue_tolerance_scale=s.warm_start_gap_ratio * s.ue_tolerance_scale, ue_stall_patience=0
    )
    free_flow = dataclasses.replace(
        network, settings=tight, reference_traveltime=None, reference_network_entry=None
    )
    ev = EVCSRewardEvaluator(free_flow, clip_prices=True)
    p = ev.check_prices(ref)
    t0 = time.perf_counter()
    ue = ev._solve(p, s.default_seed)
    routes = ev._coster.routes
    choice = routes[np.arange(len(ue.route_slot)), ue.route_slot]
    last = ue.history[-1]
    info = {
        "kind": "equilibrium",
        "price": {a: float(v[0]) for a, v in ref.items()},
        "seed": s.default_seed,
        "iterations": ue.iterations,
        "converged": ue.converged,
        "relative_gap": last.mean_gap,
        "charging_relative_gap": last.charging_mean_gap,
        "charging_tail_share": last.charging_tail_share,
        "stop_tolerances": tight.stop_tolerances,
    }
    timings = {**network.timings, "warm_start": time.perf_counter() - t0}
    return dataclasses.replace(
        network,
        initial_route_choice=choice,
        warm_start_info=info,
        reference_traveltime=ue.sim.traveltime,
        reference_network_entry=ue.sim.network_entry,
        timings=timings,
    )
