"""The stateless revenue evaluator: prices + seed -> rewards, flows, UE statistics.

:class:`EVCSRewardEvaluator` computes a dynamic user equilibrium (UE-DTA) of route and
station choice on UXsim's C++ engine for one joint price profile and returns an
:class:`EvalResult`. It is a pure function of (scenario, prices, seed): every call
starts from the scenario's own initial assignment, and all randomness comes from
generators seeded by ``seed``.

The UE loop (DESIGN.md, evaluation semantics 5):

1. simulate the current assignment (one platoon per enforced route);
2. for every platoon compute the cost of every route in its set at its departure
   time — value of time × travel time + for charging routes the price of the period
   in which it enters the charging link × energy — by walking the route through this
   simulation's time-dependent link travel times (UXsim's ``traveltime_actual``, the
   realised traversal times; :mod:`evcs_gym.costs`). The platoon's experienced cost
   is that of its own route, measured the same way, so chosen and alternative routes
   are compared on one footing (the simulated arrival differs from the link sum by
   about one 5-s step, reported as ``ue_stats["travel_time_model_error"]``);
3. relative gap of a platoon = (cost − best) / cost; stop when the mean gap over
   completed platoons ≤ ``ue_convergence_threshold`` and the completed share ≥
   ``ue_min_completed_ratio`` for ``ue_convergence_stable_rounds`` iterations in a
   row, or at ``ue_max_iterations`` (``converged=False``);
4. otherwise switch platoons to their cheapest route (the switching rule below) and
   repeat.

The switching rule is pluggable (:mod:`evcs_gym.switching`); the default decides on
exponentially smoothed route costs, which settles uneven price profiles in a few
iterations where a plain gap rule flip-flops.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.costs import RouteCoster, relative_gap
from evcs_gym.network import NetworkData
from evcs_gym.prices import price_matrix
from evcs_gym.simulation import SimulationOutput, WorldBuilder
from evcs_gym.switching import SwitchInput, make_switching_rule
from evcs_gym.utils import FieldwiseEquality, to_jsonable

__all__ = ["EVCSRewardEvaluator", "EvalResult", "compute_warm_start"]

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
        ue_stats: ``relative_gap`` (final), ``completed_ratio`` (final),
            ``gap_history`` and ``completed_history`` (per iteration),
            ``simulated_charging_vehicles``, ``simulated_non_charging_vehicles``,
            ``charging_vehicles_completed``, ``mean_travel_time``, ``switch_history``.
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


@dataclass
class _UEOutcome:
    sim: SimulationOutput
    route_slot: np.ndarray
    iterations: int
    converged: bool
    gap_history: list[float]
    completed_history: list[float]
    switch_history: list[int]
    time_discrepancy: float
    t_build_sim: float
    t_exec: float
    t_costs: float


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
        revenue = (p * flows_mat * s.charging_demand_per_vehicle).sum(axis=1)
        reward = (margin * flows_mat * s.charging_demand_per_vehicle).sum(axis=1)
        completed = ~np.isnan(ue.sim.arrival_time)
        charging = nd.veh_charging
        sim_counts = nd.simulated_vehicles()
        travel = ue.sim.arrival_time - nd.veh_departure
        stats = {
            "relative_gap": ue.gap_history[-1],
            "completed_ratio": ue.completed_history[-1],
            "gap_history": list(ue.gap_history),
            "completed_history": list(ue.completed_history),
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

    def _solve(self, prices: np.ndarray, seed: int) -> _UEOutcome:
        nd = self.network
        s = nd.settings
        rng = np.random.default_rng(np.random.SeedSequence([_SEED_DOMAIN, seed]))
        # one engine seed for every iteration (common random numbers): the UE is then a
        # fixed point of one deterministic simulator, not of a new random draw each time
        engine_seed = int(rng.integers(0, 2**31 - 1))
        slot = self._initial_slot.copy()
        routes = self._coster.routes
        n_veh = len(slot)
        rows = np.arange(n_veh)
        gaps: list[float] = []
        completed_hist: list[float] = []
        switches: list[int] = []
        stable = 0
        rule = make_switching_rule(s)
        t_sim = t_cost = 0.0
        exec0 = self._builder.exec_seconds
        converged = False
        sim = None
        for it in range(s.ue_max_iterations):
            t1 = time.perf_counter()
            sim = self._builder.run(routes[rows, slot], engine_seed)
            t2 = time.perf_counter()
            pc = self._coster.compute(sim.traveltime, prices)
            completed = ~np.isnan(sim.arrival_time)
            gap = relative_gap(pc.cost, slot, np.argmin(pc.cost, axis=1))
            mean_gap = float(gap[completed].mean()) if completed.any() else 1.0
            ratio = float(completed.mean()) if n_veh else 1.0
            gaps.append(mean_gap)
            completed_hist.append(ratio)
            t_cost += time.perf_counter() - t2
            t_sim += t2 - t1
            if mean_gap <= s.ue_convergence_threshold and ratio >= s.ue_min_completed_ratio:
                stable += 1
            else:
                stable = 0
            if stable >= s.ue_convergence_stable_rounds:
                converged = True
                switches.append(0)
                break
            if it == s.ue_max_iterations - 1:
                switches.append(0)
                break
            new_slot = rule(SwitchInput(it, pc.cost, slot, completed), rng)
            switches.append(int((new_slot != slot).sum()))
            slot = new_slot
        assert sim is not None
        return _UEOutcome(
            sim=sim,
            route_slot=slot,
            iterations=len(gaps),
            converged=converged,
            gap_history=gaps,
            completed_history=completed_hist,
            switch_history=switches,
            time_discrepancy=_model_error(sim, pc, slot, nd.veh_departure),
            t_build_sim=t_sim,
            t_exec=self._builder.exec_seconds - exec0,
            t_costs=t_cost,
        )


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
    ``settings.default_seed``, to ``settings.warm_start_gap_ratio`` times the evaluations'
    gap threshold (``ue_max_iterations`` still caps it). It depends on the scenario alone,
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
        s, ue_convergence_threshold=s.warm_start_gap_ratio * s.ue_convergence_threshold
    )
    ev = EVCSRewardEvaluator(dataclasses.replace(network, settings=tight), clip_prices=True)
    p = ev.check_prices(ref)
    t0 = time.perf_counter()
    ue = ev._solve(p, s.default_seed)
    routes = ev._coster.routes
    choice = routes[np.arange(len(ue.route_slot)), ue.route_slot]
    info = {
        "kind": "equilibrium",
        "price": {a: float(v[0]) for a, v in ref.items()},
        "seed": s.default_seed,
        "iterations": ue.iterations,
        "converged": ue.converged,
        "relative_gap": ue.gap_history[-1],
        "gap_threshold": tight.ue_convergence_threshold,
    }
    timings = {**network.timings, "warm_start": time.perf_counter() - t0}
    return dataclasses.replace(
        network, initial_route_choice=choice, warm_start_info=info, timings=timings
    )
