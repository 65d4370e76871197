"""The stateless revenue evaluator: prices + seed -> rewards, flows, UE statistics.

:class:`EVCSRewardEvaluator` computes a dynamic user equilibrium (UE-DTA) of route and
station choice on UXsim's C++ engine for one joint price profile and returns an
:class:`EvalResult`. It is a pure function of (scenario, prices, seed): every call
starts from the scenario's own initial assignment, and all randomness comes from
generators seeded by ``seed``.

The UE loop:

0. start from the scenario's initial assignment (the reference equilibrium), made
   price-aware: every charging platoon whose route there is dearer than its best
   alternative at *these* prices (costed on the reference's link times) by more than
   the charging gap tolerance moves to that alternative;
1. simulate the current assignment (one platoon per enforced route);
2. for every platoon compute the cost of every route in its set — value of time ×
   travel time + for charging routes the price of the period in which it enters the
   charging link × energy — by walking the route through this simulation's
   time-dependent link travel times (:mod:`evcs_gym.ue.costs`; with heterogeneous drivers
   plus the platoon's fixed taste for the station) *from the moment the
   platoon left its origin node's queue* (UXsim holds departing vehicles there; the
   wait counts in the travel time). The platoon's experienced cost is that of its own
   route, measured the same way, so chosen and alternative routes are compared on one
   footing (the simulated arrival differs from the walk by a few seconds, reported as
   ``ue_stats["travel_time_model_error"]``);
3. relative gap of a platoon = (cost − best) / cost; record each station's revenue;
   stop (:class:`~evcs_gym.ue.stopping.StopRule`) when the stop rule has held for
   ``ue_convergence_stable_rounds`` iterations (``"converged"``), or when the
   stationary mean of the revenues is known to ``ue_payoff_precision``
   (``"stationary"``), or at ``ue_max_iterations``;
4. otherwise switch platoons to their cheapest route (:mod:`evcs_gym.ue.switching`) and
   repeat.

**The payoff** (:func:`~evcs_gym.ue.stopping.settle_payoff`). A loop that met its rule
answers with its final iteration. Where the rule is out of reach — at many price
profiles the deterministic-choice UE has no point equilibrium, and the loop wanders in
a stationary orbit, each station's revenue moving by 2–6 % (sd) from one iteration to
the next on Sioux Falls — the answer is the **mean over the loop's stationary window**
(after the transient, found by the MSER rule), with each station's standard error
(allowing for the orbit's autocorrelation) in ``ue_stats["revenue_se"]`` and the window
in ``ue_stats["window"]`` (:mod:`evcs_gym.ue.stationary`). ``converged`` says whether the
rule was met.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evcs_gym.network import NetworkData
from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.seeds import check_seed, check_seeds
from evcs_gym.ue.costs import PairCosts, RouteCoster, relative_gap
from evcs_gym.ue.prices import price_matrix
from evcs_gym.ue.result import EvalResult, StopReason, UEStats
from evcs_gym.ue.simulation import SimulationOutput, WorldBuilder
from evcs_gym.ue.stopping import (
    GapStats,
    Payoff,
    StopRule,
    _earnings,
    gap_summary,
    settle_payoff,
)
from evcs_gym.ue.switching import SwitchInput, make_switching_rule

if TYPE_CHECKING:
    from evcs_gym.ue.averaging import SeedAverage

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
class UETrace:
    """Every iteration of one UE loop, as :meth:`EVCSRewardEvaluator.trace` recorded it.

    The switching never reads the stationary stop or the cap, so one long trace (a high
    ``ue_max_iterations``, ``ue_payoff_precision=0``) tells where any such rule would
    have stopped the same loop, and what it would have answered (:meth:`stop`,
    :meth:`payoff`): ``benchmarks/bench_long_run.py`` checks evaluations against the
    long run that way.

    Attributes:
        stats: the stop rule's :class:`GapStats` at every iteration.
        flows: (n_iterations, n_agents, n_periods) vehicles that started charging in
            each period, at every iteration.
        revenues: (n_iterations, n_agents) Σ price × flow × energy at every iteration.
        prices: (n_agents, n_periods) the prices evaluated.
        stop_reason: why the traced loop ended (as ``ue_stats["stop_reason"]``).
    """

    stats: list[GapStats]
    flows: np.ndarray
    revenues: np.ndarray
    prices: np.ndarray
    stop_reason: StopReason

    @property
    def iterations(self) -> int:
        return len(self.stats)

    def stop(self, settings: ScenarioSettings) -> tuple[int, StopReason]:
        """``(iterations, stop_reason)`` of this loop under ``settings``' stop rule.

        Exact when ``settings`` differ from the traced scenario's only in what the
        switching never reads: ``ue_max_iterations``, ``ue_convergence_stable_rounds``,
        ``ue_stop_settled_ratio`` and the stationary stop's ``ue_payoff_*`` settings
        (not the tolerances: they steer the switching).

        Raises:
            ValueError: the trace ends before that rule would stop the loop.
        """
        rule = StopRule(settings)
        for it, stats in enumerate(self.stats):
            reason = rule.update(it, stats, self.revenues[it])
            if reason is not None:
                return it + 1, reason
        raise ValueError(
            f"the trace ends after {self.iterations} iterations ({self.stop_reason}) "
            f"before this stop rule stops it (ue_max_iterations={settings.ue_max_iterations})"
        )

    def payoff(self, settings: ScenarioSettings) -> tuple[int, StopReason, Payoff]:
        """``(iterations, stop_reason, payoff)`` of this loop under ``settings``' stop rule:
        what :meth:`EVCSRewardEvaluator.evaluate` with those settings returns, bit for
        bit (:meth:`stop` says when that is exact)."""
        n, reason = self.stop(settings)
        return n, reason, settle_payoff(self.flows[:n], self.prices, settings, reason)


@dataclass
class _UEOutcome:
    sim: SimulationOutput
    route_slot: np.ndarray
    iterations: int
    stop_reason: StopReason
    """``"converged"``, ``"stationary"`` or ``"max_iterations"``."""
    history: list[GapStats]
    flows: np.ndarray
    """(iterations, n_agents, n_periods) flows of every iteration."""
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
        seed = check_seed(s.default_seed if seed is None else seed)
        ue = self._solve(p, seed)
        pay = settle_payoff(ue.flows, p, s, ue.stop_reason)
        flows_mat = pay.flows
        margin = p - s.energy_cost_per_kwh
        revenue = _earnings(p, flows_mat, s.charging_demand_per_vehicle)
        reward = _earnings(margin, flows_mat, s.charging_demand_per_vehicle)
        completed = ~np.isnan(ue.sim.arrival_time)
        charging = nd.veh_charging
        sim_counts = nd.simulated_vehicles()
        travel = ue.sim.arrival_time - nd.veh_departure
        last = ue.history[-1]
        agents = nd.agent_names
        stats = UEStats(
            stop_reason=ue.stop_reason,
            payoff=pay.kind,
            window=list(pay.window),
            revenue_se={a: float(pay.revenue_se[i]) for i, a in enumerate(agents)},
            reward_se={a: float(pay.reward_se[i]) for i, a in enumerate(agents)},
            autocorrelation_time=(
                None if np.isnan(pay.autocorrelation_time) else pay.autocorrelation_time
            ),
            relative_gap=last.mean_gap,
            completed_ratio=last.completed_ratio,
            charging_relative_gap=last.charging_mean_gap,
            charging_tail_share=last.charging_tail_share,
            charging_gap=gap_summary(ue.final_gap[completed & charging]),
            non_charging_gap=gap_summary(ue.final_gap[completed & ~charging]),
            stop_tolerances=s.stop_tolerances,
            gap_history=[h.mean_gap for h in ue.history],
            charging_gap_history=[h.charging_mean_gap for h in ue.history],
            charging_tail_history=[h.charging_tail_share for h in ue.history],
            completed_history=[h.completed_ratio for h in ue.history],
            switch_history=list(ue.switch_history),
            revenue_history=_earnings(p, ue.flows, s.charging_demand_per_vehicle).tolist(),
            simulated_charging_vehicles=sim_counts["charging"],
            simulated_non_charging_vehicles=sim_counts["non_charging"],
            charging_vehicles_completed=int((completed & charging).sum()) * s.deltan,
            charging_vehicles_charged=float(flows_mat.sum()),
            travel_time_model_error=ue.time_discrepancy,
            mean_travel_time=float(np.nanmean(travel)) if completed.any() else float("nan"),
        )
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

    def evaluate_seeds(
        self, prices: Mapping[str, Any], seeds: int | Sequence[int] = 6
    ) -> SeedAverage:
        """Evaluate ``prices`` at several seeds: means and standard errors per station.

        Args:
            prices: as for :meth:`evaluate`.
            seeds: a list of distinct non-negative seeds, or a count ``n`` for ``0..n-1``.

        Returns:
            :class:`evcs_gym.ue.averaging.SeedAverage` (``.rewards``, ``.rewards_se``, ...).
        """
        from evcs_gym.ue.averaging import SeedAverage

        seed_list = check_seeds(seeds)
        self.check_prices(prices)
        return SeedAverage([self.evaluate(prices, seed=s) for s in seed_list])

    def trace(self, prices: Mapping[str, Any], seed: int | None = None) -> UETrace:
        """Run the UE loop of :meth:`evaluate` and record every iteration (:class:`UETrace`).

        The same computation as :meth:`evaluate`: :meth:`UETrace.payoff` under the
        scenario's settings is its answer, bit for bit. For analysis of the loop and of
        stop rules.

        Example:
            >>> import evcs_gym
            >>> ev = EVCSRewardEvaluator(evcs_gym.load_scenario("tiny"))
            >>> prices = {"A": [0.75, 2.0, 0.75, 0.75], "B": [1.0] * 4}
            >>> tr = ev.trace(prices, seed=0)
            >>> res = ev.evaluate(prices, seed=0)
            >>> n, reason, payoff = tr.payoff(ev.network.settings)
            >>> n == tr.iterations == res.ue_iterations, reason == res.ue_stats["stop_reason"]
            (True, True)
            >>> bool((payoff.flows[0] == res.flows["A"]).all())
            True
            >>> hasty = dataclasses.replace(ev.network.settings, ue_max_iterations=5)
            >>> tr.stop(hasty)  # where a cap of 5 would have stopped this loop
            (5, 'max_iterations')
        """
        s = self.network.settings
        p = self.check_prices(prices)
        ue = self._solve(p, check_seed(s.default_seed if seed is None else seed))
        return UETrace(
            stats=list(ue.history),
            flows=ue.flows,
            revenues=_earnings(p, ue.flows, s.charging_demand_per_vehicle),
            prices=p,
            stop_reason=ue.stop_reason,
        )

    def equilibrium_routes(self, prices: Mapping[str, Any], seed: int | None = None) -> np.ndarray:
        """Route id (see :meth:`NetworkData.route`) of every platoon at the final UE iteration.

        Same computation as :meth:`evaluate` (same prices and seed give the assignment
        behind that result); for analysis and diagnostics.
        """
        s = self.network.settings
        p = self.check_prices(prices)
        ue = self._solve(p, check_seed(s.default_seed if seed is None else seed))
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
        a relative gap above ``ue_price_aware_start_gap`` (default: the charging mean-gap
        tolerance, ``stop_tolerances["charging_mean_gap"]``) to its cheapest alternative
        *at these prices* — costed on the start's own link travel times — moves to that
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
        threshold = nd.settings.ue_price_aware_start_gap
        if threshold is None:
            threshold = nd.settings.stop_tolerances["charging_mean_gap"]
        move = nd.veh_charging & (gap > threshold)
        slot[move] = best[move]
        return slot

    def _solve(self, prices: np.ndarray, seed: int) -> _UEOutcome:
        """The UE loop: simulate, cost, stop or switch, until :class:`StopRule` says stop."""
        nd = self.network
        s = nd.settings
        tol = s.stop_tolerances
        energy = s.charging_demand_per_vehicle
        rng, engine_seed = ue_streams(seed)
        slot = self._start(prices)
        routes = self._coster.routes
        charging = nd.veh_charging
        n_veh = len(slot)
        rows = np.arange(n_veh)
        history: list[GapStats] = []
        flows: list[np.ndarray] = []
        switches: list[int] = []
        stop = StopRule(s)
        stop_reason: StopReason | None = None
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
            stats = GapStats.of(gap, completed, charging, tol["charging_tail_gap"])
            history.append(stats)
            flows.append(self._period_flows(sim))
            t_cost += time.perf_counter() - t2
            t_sim += t2 - t1
            stop_reason = stop.update(it, stats, _earnings(prices, flows[-1], energy))
            if stop_reason is not None:
                switches.append(0)
                break
            new_slot = rule(SwitchInput(it, pc.cost, slot, completed, charging), rng)
            switches.append(int((new_slot != slot).sum()))
            slot = new_slot
        # the rule answers "max_iterations" at the last iteration, so the loop broke
        assert sim is not None and pc is not None and stop_reason is not None
        return _UEOutcome(
            sim=sim,
            route_slot=slot,
            iterations=len(history),
            stop_reason=stop_reason,
            history=history,
            flows=np.stack(flows),
            final_gap=gap,
            switch_history=switches,
            time_discrepancy=_model_error(sim, pc, slot, nd.veh_departure),
            t_build_sim=t_sim,
            t_exec=self._builder.exec_seconds - exec0,
            t_costs=t_cost,
        )


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


def _model_error(
    sim: SimulationOutput, pc: PairCosts, slot: np.ndarray, departure: np.ndarray
) -> float:
    """Mean |simulated - link-sum| travel time (s) of completed platoons on their route."""
    done = ~np.isnan(sim.arrival_time)
    if not done.any():
        return float("nan")
    own = pc.travel_time[np.arange(len(slot)), slot][done]
    return float(np.abs((sim.arrival_time - departure)[done] - own).mean())


def compute_warm_start(network: NetworkData) -> NetworkData:
    """Return ``network`` with its initial assignment set to the UE at the reference price.

    The reference profile is uniform: ``settings.warm_start_price``, or each station's
    bound midpoint. The UE is solved once from free-flow routes with
    ``settings.default_seed``, with every stop-rule tolerance scaled by
    ``settings.warm_start_gap_ratio``, capped at ``settings.warm_start_max_iterations``
    and without the stationary stop or ``ue_stop_settled_ratio`` (its assignment is the
    start, not a payoff). The final iteration's link travel times are kept as
    ``reference_traveltime`` for the price-aware start. It depends on the scenario alone,
    so every process computes the same bits.
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
        s,
        ue_tolerance_scale=s.warm_start_gap_ratio * s.ue_tolerance_scale,
        ue_payoff_precision=0.0,
        ue_stop_settled_ratio=None,
        ue_max_iterations=s.warm_start_max_iterations,
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
