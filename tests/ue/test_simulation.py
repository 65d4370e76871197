"""UXsim glue (evcs_gym.ue.simulation): the World that WorldBuilder builds simulates like
UXsim's own, deterministically, with every platoon on its route; what it reads back
(travel times, arrivals, network entries, charging entries) matches the vehicle log."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import evcs_gym
from evcs_gym.ue.simulation import WorldBuilder
from tests.helpers import CHARGING_LENGTH, CHARGING_SPEED, LONG, SHORT, SPEED, UNEVEN, uniform


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


def test_every_charging_vehicle_charges_exactly_once(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    for prices in (uniform(tiny, 1.25), UNEVEN):
        routes = ev.equilibrium_routes(prices, seed=3)
        builder = WorldBuilder(tiny, vehicle_logging=True)
        world = builder.build(routes, seed=0)
        world.main_loop(-1.0, builder.tmax)
        entries = builder.charging_entries(world)
        charging = tiny.veh_charging
        assert (entries[charging].sum(axis=1) == 1).all()
        assert (entries[~charging] == 0).all()
        # including trips that start at a station (A -> 5) or end at one (1 -> B)
        names = np.array(tiny.node_names)
        ends_at_b = charging & (names[tiny.veh_dest] == "B")
        starts_at_a = charging & (names[tiny.veh_orig] == "A")
        assert ends_at_b.any() and starts_at_a.any()
        assert (entries[ends_at_b | starts_at_a].sum(axis=1) == 1).all()


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


@pytest.mark.parametrize(
    "name",
    [
        "tiny",
        "tiny_with_chargers",
        pytest.param("siouxfalls", marks=pytest.mark.siouxfalls),
    ],
)
def test_build_simulates_bit_for_bit_like_uxsims_own_world(name, request):
    """The wrapper-free World has UXsim's parameters and gives the same simulation
    (with ``charging_chargers``, the charging links' ``capacity_out`` too)."""
    if name == "tiny_with_chargers":
        nd = evcs_gym.load_scenario("tiny", warm_start=False, charging_chargers=10)
    else:
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


def test_chargers_make_arrivals_queue_at_a_busy_station(tiny):
    """Ten chargers and a 300 s charge discharge 1 vehicle per 30 s: with every charging
    platoon on its first route the charging links hold a queue, so charging takes longer
    than the free-flow 300 s, and the more so the fewer the chargers."""
    routes = tiny.initial_route_choice
    free = WorldBuilder(tiny).run(routes, seed=0)
    charging = np.flatnonzero(tiny.links.kind == 1)
    charge_time = tiny.links.free_flow_time[charging]
    longest = {}
    for chargers in (20, 5):
        nd = evcs_gym.load_scenario("tiny", warm_start=False, charging_chargers=chargers)
        out = WorldBuilder(nd).run(routes, seed=0)
        longest[chargers] = np.nanmax(out.traveltime[charging], axis=1)
    assert np.allclose(np.nanmax(free.traveltime[charging], axis=1), charge_time, rtol=0.05)
    assert (longest[5] > 2 * charge_time).any()
    assert (longest[5] >= longest[20]).all()


# ------------------------------------------------------------ runs of the World
def _on_slot(nd: evcs_gym.NetworkData, slot: int | np.ndarray) -> np.ndarray:
    """Every platoon's route at ``slot`` of its route set."""
    return nd.group_routes[nd.veh_group, slot]


def test_a_run_is_a_function_of_its_seed(tiny):
    builder = WorldBuilder(tiny)
    first = builder.run(tiny.initial_route_choice, seed=4)
    again = builder.run(tiny.initial_route_choice, seed=4)
    fresh = WorldBuilder(tiny).run(tiny.initial_route_choice, seed=4)
    other = builder.run(tiny.initial_route_choice, seed=5)
    for field in dataclasses.fields(first):
        mine = getattr(first, field.name)
        assert np.array_equal(mine, getattr(again, field.name), equal_nan=True), field.name
        assert np.array_equal(mine, getattr(fresh, field.name), equal_nan=True), field.name
    assert not np.array_equal(first.traveltime, other.traveltime)  # the seed is used


@pytest.mark.parametrize(("slot", "station", "leg"), [(0, 0, SHORT), (1, 1, LONG)])
def test_free_flow_trips_take_their_routes_free_flow_time(two_routes, slot, station, leg):
    """Without congestion every platoon arrives after its route's free-flow time (two legs,
    the charging link, the destination's connector), and all 30 vehicles charge at the
    station of their route."""
    nd = two_routes
    builder = WorldBuilder(nd)
    connector = nd.links.free_flow_time[nd.links.names.index("connector_D")]
    out = builder.run(_on_slot(nd, slot), seed=0)
    expected = 2 * leg / SPEED + CHARGING_LENGTH / CHARGING_SPEED + connector
    assert np.array_equal(out.arrival_time - nd.veh_departure, np.full(nd.n_platoons, expected))
    assert out.charging_cum_arrival.shape == (nd.n_agents, builder.n_steps)
    final = out.charging_cum_arrival[:, -1]
    assert final[station] == 30 and final[1 - station] == 0
    # no link ever holds a queue: a vehicle entering at any step meets free flow
    free = np.repeat(nd.links.free_flow_time[:, None], builder.n_steps, axis=1)
    assert np.array_equal(out.traveltime, free)


def test_route_csr_concatenates_the_chosen_routes(two_routes):
    nd = two_routes
    builder = WorldBuilder(nd)
    choice = _on_slot(nd, np.arange(nd.n_platoons) % 2)  # S1, S2, S1, ...
    links, offsets = builder.route_csr(choice)
    assert offsets.tolist() == [0, 4, 8, 12, 16, 20, 24]
    names = [nd.links.names[i] for i in links[:8]]
    assert names == [*nd.route(int(choice[0])), *nd.route(int(choice[1]))]
    assert names[:4] == ["O-S1", "charging_S1", "S1-D", "connector_D"]
    out = builder.run(choice, seed=0)
    assert out.charging_cum_arrival[:, -1].tolist() == [15.0, 15.0]


def test_charging_entries_need_the_vehicle_log(tiny):
    builder = WorldBuilder(tiny)
    world = builder.build(tiny.initial_route_choice, seed=0)
    world.main_loop(-1.0, builder.tmax)
    with pytest.raises(ValueError, match=r"vehicle_logging=True"):
        builder.charging_entries(world)
