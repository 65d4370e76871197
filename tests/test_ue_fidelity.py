"""The UE's fidelity: costs that match the simulation, the charging stop rule, the start."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import evcs_gym
from evcs_gym.ue.evaluator import GapStats, gap_summary
from evcs_gym.ue.simulation import WorldBuilder

UNEVEN = {"A": [0.9, 1.6, 1.1, 1.3], "B": [1.4, 0.8, 1.5, 1.0]}
NEAR = {"A": [1.0, 1.1, 1.0, 1.2], "B": [1.1, 1.0, 1.2, 1.0]}


def _first_link_entry(vehicle) -> float:
    for t, link in zip(vehicle.log_t, vehicle.log_link):
        if link >= 0:
            return float(t)
    return float("nan")


@pytest.mark.parametrize("name", ["tiny", pytest.param("siouxfalls", marks=pytest.mark.siouxfalls)])
def test_network_entry_equals_the_vehicle_log(name, request):
    """The origin-queue flow balance gives every platoon's first-link entry to the step."""
    nd = request.getfixturevalue(name)
    builder = WorldBuilder(nd, vehicle_logging=True)
    world = builder.build(nd.initial_route_choice, seed=7)
    world.main_loop(-1.0, builder.n_steps * builder.delta_t)
    out = builder.read(world)
    logged = np.array([_first_link_entry(v) for v in world.VEHICLES])
    assert np.array_equal(out.network_entry, logged, equal_nan=True)
    wait = logged - nd.veh_departure
    if name == "siouxfalls":  # the queue at the origin is real: tens of seconds on average
        assert np.nanmean(wait) > 10


def test_route_costs_match_the_simulated_trips(tiny):
    """Walking a platoon's own route from its network entry reproduces its simulated
    travel time to within two 5-s steps, and the charging period matches the flows."""
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    p = ev.check_prices(UNEVEN)
    sim = ev._builder.run(tiny.initial_route_choice, seed=3)
    pc = ev._coster.compute(sim.traveltime, p, sim.network_entry)
    slot = ev._initial_slot
    rows = np.arange(len(slot))
    done = ~np.isnan(sim.arrival_time)
    err = (sim.arrival_time - tiny.veh_departure)[done] - pc.travel_time[rows, slot][done]
    assert np.abs(err).max() <= 2 * tiny.settings.deltan
    # charging entries estimated from the walk land in the periods the links counted
    s = tiny.settings
    entry = pc.charge_entry[rows, slot]
    station = tiny.links.station[tiny.route_charging_link[ev._coster.routes[rows, slot]]]
    est = np.zeros((tiny.n_agents, tiny.n_periods))
    for v in np.flatnonzero(tiny.veh_charging & done):
        period = min(int(entry[v] // s.period_length), s.charging_periods - 1)
        est[station[v], period] += s.deltan
    assert np.abs(est - ev._period_flows(sim)).sum() <= 2 * s.deltan


def test_converged_result_meets_every_charging_criterion(tiny):
    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(NEAR, seed=0)
    assert res.converged
    tol = res.ue_stats["stop_tolerances"]
    assert res.ue_stats["relative_gap"] <= tol["mean_gap"]
    assert res.ue_stats["charging_relative_gap"] <= tol["charging_mean_gap"]
    assert res.ue_stats["charging_tail_share"] <= tol["charging_tail_share"]
    ch = res.ue_stats["charging_gap"]
    assert ch["count"] > 0 and ch["mean"] == res.ue_stats["charging_relative_gap"]
    assert set(ch) == set(res.ue_stats["non_charging_gap"])
    n = res.ue_iterations
    for key in ("gap_history", "charging_gap_history", "charging_tail_history"):
        assert len(res.ue_stats[key]) == n
    # the last `stable_rounds` iterations all met the rule
    k = tiny.settings.ue_convergence_stable_rounds
    assert max(res.ue_stats["charging_gap_history"][-k:]) <= tol["charging_mean_gap"]


def test_gap_stats_rule():
    gap = np.array([0.0, 0.002, 0.2, 0.001])
    done = np.array([True, True, True, False])
    charging = np.array([False, True, True, True])
    st = GapStats.of(gap, done, charging, tail_gap=0.05)
    assert st.charging_mean_gap == pytest.approx(0.101)
    assert st.charging_tail_share == 0.5
    assert st.completed_ratio == 0.75
    tol = evcs_gym.ScenarioSettings().stop_tolerances
    assert not st.meets(tol)
    calm = GapStats(0.001, 0.002, 0.0, 1.0)
    assert calm.meets(tol)
    assert not dataclasses.replace(calm, charging_tail_share=0.03).meets(tol)
    assert not dataclasses.replace(calm, completed_ratio=0.9).meets(tol)
    # every charging trip stuck: never converged
    stuck = GapStats.of(gap, np.array([True, False, False, False]), charging, 0.05)
    assert stuck.charging_mean_gap == 1.0
    assert gap_summary(np.zeros(0))["count"] == 0


def test_tolerance_scale_scales_every_tolerance():
    base = evcs_gym.ScenarioSettings().stop_tolerances
    half = evcs_gym.ScenarioSettings(ue_tolerance_scale=0.5).stop_tolerances
    for key in ("mean_gap", "charging_mean_gap", "charging_tail_gap", "charging_tail_share"):
        assert half[key] == pytest.approx(base[key] / 2)
    assert 1 - half["min_completed_ratio"] == pytest.approx((1 - base["min_completed_ratio"]) / 2)


@pytest.mark.parametrize("value", [0, -0.5])
def test_tolerance_scale_must_be_positive(value):
    with pytest.raises(evcs_gym.ScenarioError, match="`ue_tolerance_scale` must be positive"):
        evcs_gym.load_scenario("tiny", ue_tolerance_scale=value)


def test_halved_tolerances_are_met_when_converged(tiny):
    nd = evcs_gym.load_scenario("tiny", ue_tolerance_scale=0.5)
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(NEAR, seed=0)
    assert res.ue_stats["stop_tolerances"]["charging_mean_gap"] == 0.001
    if res.converged:
        assert res.ue_stats["charging_relative_gap"] <= 0.005


def test_price_aware_start_moves_charging_platoons_before_the_first_simulation(tiny):
    """From the reference (uniform) equilibrium, prices that make station A dear send A's
    charging platoons elsewhere before anything is simulated: the first iteration's
    charging gap is then far smaller than when the start keeps the reference choices."""
    dear_a = {"A": [2.0] * 4, "B": [0.5] * 4}
    aware = evcs_gym.EVCSRewardEvaluator(tiny)
    blind = evcs_gym.EVCSRewardEvaluator(
        dataclasses.replace(
            tiny, settings=dataclasses.replace(tiny.settings, ue_price_aware_start=False)
        )
    )
    p = aware.check_prices(dear_a)
    moved = (aware._start(p) != blind._start(p)).sum()
    assert moved > 0
    first_aware = aware.evaluate(dear_a, seed=0).ue_stats["charging_gap_history"][0]
    first_blind = blind.evaluate(dear_a, seed=0).ue_stats["charging_gap_history"][0]
    assert first_aware < 0.5 * first_blind


def test_price_aware_start_setting_is_a_bool():
    with pytest.raises(evcs_gym.ScenarioError, match="`ue_price_aware_start` must be true"):
        evcs_gym.load_scenario("tiny", ue_price_aware_start=1)


def test_free_flow_start_has_no_reference_times():
    nd = evcs_gym.load_scenario("tiny", warm_start=False)
    assert nd.reference_traveltime is None and nd.reference_network_entry is None
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(NEAR, seed=0)
    assert res.converged


def test_warm_start_keeps_its_reference_times(tiny):
    assert tiny.reference_traveltime.shape[0] == len(tiny.links)
    assert tiny.reference_network_entry.shape == (tiny.n_platoons,)
    info = tiny.warm_start_info
    assert info["stop_tolerances"]["charging_mean_gap"] == pytest.approx(
        tiny.settings.warm_start_gap_ratio * tiny.settings.ue_charging_gap_threshold
    )


_WORLD_PARAMETERS = (
    "DELTAT", "TMAX", "delta_n", "duo_update_time", "duo_update_weight",
    "route_choice_uncertainty", "instantaneous_TT_timestep_interval", "num_threads",
    "random_seed", "hard_deterministic_mode", "no_cyclic_routing",
    "route_choice_update_gradual", "adjust_node_capacity", "vehicle_log_mode",
    "vehicle_count",
)  # fmt: skip
_LINK_PARAMETERS = (
    "name", "length", "u", "kappa", "number_of_lanes", "merge_priority", "capacity",
    "capacity_in", "capacity_out", "delta", "tau", "w", "signal_group",
)  # fmt: skip


@pytest.mark.parametrize("name", ["tiny", pytest.param("siouxfalls", marks=pytest.mark.siouxfalls)])
def test_build_simulates_bit_for_bit_like_uxsims_own_world(name, request):
    """The wrapper-free World has UXsim's parameters and gives the same simulation."""
    nd = request.getfixturevalue(name)
    builder = WorldBuilder(nd)
    rng = np.random.default_rng(0)
    n_routes = (nd.group_routes[nd.veh_group] >= 0).sum(axis=1)
    random_slots = (rng.random(nd.n_platoons) * n_routes).astype(int)
    random_routes = nd.group_routes[nd.veh_group, random_slots]
    for routes, seed in ((nd.initial_route_choice, 0), (random_routes, 11)):
        direct = builder.build(routes, seed)
        wrapped = builder.build_wrapped(routes, seed)
        for attr in _WORLD_PARAMETERS:
            assert getattr(direct, attr) == getattr(wrapped._cpp_world, attr), attr
        for a, b in zip(direct.LINKS, wrapped._cpp_world.LINKS, strict=True):
            for attr in _LINK_PARAMETERS:
                assert getattr(a, attr) == getattr(b, attr), (a.name, attr)
        direct.main_loop(-1.0, builder.n_steps * builder.delta_t)
        wrapped.exec_simulation()
        ours, theirs = builder.read(direct), builder.read(wrapped._cpp_world)
        for field in dataclasses.fields(ours):
            assert np.array_equal(
                getattr(ours, field.name), getattr(theirs, field.name), equal_nan=True
            ), field.name
