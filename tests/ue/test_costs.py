"""Route costs (evcs_gym.ue.costs): every (platoon, route) pair walked through the travel-time
table, by hand on a two-route network and against the simulated trips; station tastes.

Heterogeneous drivers (``station_taste_scale``) carry fixed per-platoon station tastes:
part of the scenario (drawn once from ``station_taste_seed``), they enter the cost of
every charging route and so the choices and gaps, and never the revenues.
"""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.ue.costs import RouteCoster, relative_gap, station_tastes
from tests.helpers import (
    CHARGING_LENGTH,
    CHARGING_SPEED,
    ENERGY,
    LONG,
    SHORT,
    SPEED,
    TASTE_PRICES,
    TIME_VALUE,
    UNEVEN,
    with_settings,
)

# ------------------------------------------------------------------ by hand
S1_ROUTE = ["O-S1", "charging_S1", "S1-D", "connector_D"]
S2_ROUTE = ["O-S2", "charging_S2", "S2-D", "connector_D"]


def _free_flow_table(nd: evcs_gym.NetworkData, coster: RouteCoster) -> np.ndarray:
    """(n_links, n_steps) link travel times of an empty network."""
    return np.repeat(nd.links.free_flow_time[:, None], coster.n_steps, axis=1)


def _connector(nd: evcs_gym.NetworkData) -> float:
    return float(nd.links.free_flow_time[nd.links.names.index("connector_D")])


def test_hand_computed_costs_on_two_routes(two_routes):
    """Slot 0 is the S1 route and slot 1 the S2 route (sorted by free-flow time), slots
    2 and 3 hold no route; on an empty network each pair costs its free-flow time at the
    value of time plus the price of its station times the energy bought."""
    nd = two_routes
    coster = RouteCoster(nd)
    assert [nd.route(int(r)) for r in coster.routes[0, :2]] == [S1_ROUTE, S2_ROUTE]
    prices = np.array([[1.0], [1.2]])  # S1, S2; one period
    pc = coster.compute(_free_flow_table(nd, coster), prices)
    charging_time = CHARGING_LENGTH / CHARGING_SPEED
    travel = [2 * leg / SPEED + charging_time + _connector(nd) for leg in (SHORT, LONG)]
    assert travel[1] - travel[0] == 2 * (LONG - SHORT) / SPEED == 50.0
    dep = nd.veh_departure
    for slot, station_leg in enumerate((SHORT, LONG)):
        assert pc.travel_time[:, slot] == pytest.approx(np.full(nd.n_platoons, travel[slot]))
        assert pc.charge_entry[:, slot] == pytest.approx(dep + station_leg / SPEED)
        assert pc.price_cost[:, slot] == pytest.approx(prices[slot, 0] * ENERGY)
        expected = TIME_VALUE * travel[slot] + prices[slot, 0] * ENERGY
        assert pc.cost[:, slot] == pytest.approx(np.full(nd.n_platoons, expected))
    assert np.isinf(pc.cost[:, 2:]).all() and np.isnan(pc.charge_entry[:, 2:]).all()


def test_the_walk_starts_at_the_network_entry(two_routes):
    """The wait in the origin queue counts in the travel time and delays the charging
    entry; a NaN entry (never entered) walks from the departure."""
    nd = two_routes
    coster = RouteCoster(nd)
    table = _free_flow_table(nd, coster)
    prices = np.ones((2, 1))
    plain = coster.compute(table, prices)
    entry = nd.veh_departure + 40.0
    entry[0] = np.nan
    late = coster.compute(table, prices, entry)
    assert late.travel_time[0, :2].tolist() == plain.travel_time[0, :2].tolist()
    assert late.travel_time[1:, :2] == pytest.approx(plain.travel_time[1:, :2] + 40.0)
    assert late.charge_entry[1:, :2] == pytest.approx(plain.charge_entry[1:, :2] + 40.0)
    assert late.cost[1:, :2] == pytest.approx(plain.cost[1:, :2] + TIME_VALUE * 40.0)


def test_a_slow_link_delays_the_walk_and_moves_its_charging_period(two_routes):
    """From t = 300 s the first leg to S1 takes 1,200 s: the platoons departing after it
    (at 350, 450 and 550 s) reach the charging link in the second of two periods
    (1,500 s each) and pay its price; the S2 route is untouched."""
    nd = with_settings(two_routes, charging_periods=2)
    coster = RouteCoster(nd)
    table = _free_flow_table(nd, coster)
    slow_from = int(300 / nd.settings.deltan)
    table[nd.links.names.index("O-S1"), slow_from:] = 1200.0
    prices = np.array([[1.0, 2.0], [1.5, 1.5]])  # S1 dearer in period 1
    pc = coster.compute(table, prices)
    late = nd.veh_departure >= 300
    assert late.tolist() == [False, False, False, True, True, True]
    base = 2 * SHORT / SPEED + CHARGING_LENGTH / CHARGING_SPEED + _connector(nd)
    assert pc.travel_time[~late, 0] == pytest.approx(np.full(3, base))
    assert pc.travel_time[late, 0] == pytest.approx(np.full(3, base - SHORT / SPEED + 1200.0))
    assert pc.charge_entry[late, 0] == pytest.approx(nd.veh_departure[late] + 1200.0)
    assert pc.price_cost[:, 0].tolist() == [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]
    assert pc.price_cost[:, 1].tolist() == [15.0] * 6
    assert pc.travel_time[:, 1] == pytest.approx(np.full(6, base + 2 * (LONG - SHORT) / SPEED))


@pytest.mark.parametrize(
    ("cost", "slot", "best", "gap"),
    [
        ([[4.0, 3.0]], [0], [1], [0.25]),
        ([[3.0, 4.0]], [0], [0], [0.0]),
        ([[0.0, 0.0]], [1], [0], [0.0]),  # a free own route has no gap
        ([[10.0, 5.0, np.inf], [8.0, 2.0, 1.0]], [0, 1], [1, 2], [0.5, 0.5]),
    ],
)
def test_relative_gap(cost, slot, best, gap):
    got = relative_gap(np.array(cost), np.array(slot), np.array(best))
    assert got.tolist() == pytest.approx(gap)


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


# ------------------------------------------------------------------ station tastes
def test_off_at_scale_zero_the_default_where_a_scenario_does_not_set_them(identical):
    assert ScenarioSettings.__dataclass_fields__["station_taste_scale"].default == 0.0
    assert identical.settings.station_taste_scale == 0.0
    assert not station_tastes(identical).any()
    assert RouteCoster(identical).pair_taste is None


def test_tastes_are_a_function_of_the_scenario(tasty):
    taste = station_tastes(tasty)
    again = evcs_gym.load_scenario("tiny", station_taste_scale=2.0, warm_start=False)
    assert np.array_equal(station_tastes(again), taste)
    other_seed = evcs_gym.load_scenario(
        "tiny", station_taste_scale=2.0, station_taste_seed=1, warm_start=False
    )
    assert not np.array_equal(station_tastes(other_seed), taste)
    doubled = evcs_gym.load_scenario("tiny", station_taste_scale=4.0, warm_start=False)
    np.testing.assert_allclose(station_tastes(doubled), 2 * taste)
    charging = tasty.veh_charging
    assert (taste[charging].min(axis=1) == 0).all() and (taste[charging].max(axis=1) > 0).all()
    assert not taste[~charging].any()


def test_taste_differences_are_logistic():
    """Differences of two Gumbel draws of scale b are logistic: mean 0, sd b·π/√3."""
    nd = evcs_gym.load_scenario("tiny", station_taste_scale=3.0, warm_start=False)
    taste = station_tastes(nd)[nd.veh_charging]
    diff = taste[:, 0] - taste[:, 1]
    sd = 3.0 * np.pi / np.sqrt(3)
    assert len(diff) >= 100
    assert abs(diff.mean()) < 4 * sd / np.sqrt(len(diff))
    assert 0.8 * sd < diff.std() < 1.2 * sd


def test_route_costs_add_each_platoons_taste_for_the_station(identical, tasty):
    plain, taste_coster = RouteCoster(identical), RouteCoster(tasty)
    tt = tasty.reference_traveltime
    prices = evcs_gym.EVCSRewardEvaluator(identical).check_prices(TASTE_PRICES)
    base = plain.compute(tt, prices).cost
    with_taste = taste_coster.compute(tt, prices).cost
    taste = station_tastes(tasty)
    routes = plain.routes
    station = np.where(
        identical.route_charging_link >= 0,
        identical.links.station[np.maximum(identical.route_charging_link, 0)],
        -1,
    )
    for veh, slot in zip(*np.nonzero(routes >= 0)):
        s = station[routes[veh, slot]]
        expected = base[veh, slot] + (taste[veh, s] if s >= 0 else 0.0)
        assert with_taste[veh, slot] == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------ the outside option
@pytest.fixture(scope="module")
def outside_tiny() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario("tiny", warm_start=False, charging_outside_cost=30.0)


def test_outside_routes_cost_their_travel_time_and_the_outside_cost(outside_tiny):
    nd = outside_tiny
    coster = RouteCoster(nd)
    prices = np.full((nd.n_agents, nd.n_periods), 1.0)
    ff = np.repeat(nd.links.free_flow_time[:, None], coster.n_steps, axis=1)
    pc = coster.compute(ff, prices)
    outside = (nd.route_charging_link[nd.group_routes[nd.veh_group]] < 0) & (
        nd.group_routes[nd.veh_group] >= 0
    )
    charging = nd.veh_charging[:, None] & outside  # a charging platoon's outside routes
    assert charging.any() and (nd.veh_charging & ~charging.any(axis=1)).sum() == 0
    taste = station_tastes(nd)
    expected = nd.settings.time_value_coefficient * pc.travel_time + 30.0
    expected += taste[:, nd.n_agents][:, None]
    np.testing.assert_allclose(pc.cost[charging], expected[charging])
    np.testing.assert_array_equal(pc.price_cost[charging], 30.0)


def test_outside_option_has_its_own_taste_column(outside_tiny):
    taste = station_tastes(outside_tiny)
    nd = outside_tiny
    assert taste.shape == (nd.n_platoons, nd.n_agents + 1)
    assert (taste[nd.veh_charging, -1] > 0).any() and (taste[~nd.veh_charging] == 0).all()


def test_logit_tastes_are_the_negated_draws():
    plain = evcs_gym.load_scenario("tiny", warm_start=False)
    logit = evcs_gym.load_scenario("tiny", warm_start=False, station_taste_logit=True)
    raw = station_tastes(plain)  # shifted draws: raw = g - min(g) per platoon
    neg = station_tastes(logit)  # -g - min(-g) = max(g) - g
    rows = plain.veh_charging
    spread = raw[rows].max(axis=1, keepdims=True)
    np.testing.assert_allclose(neg[rows], spread - raw[rows], atol=1e-12)


def test_quasi_random_tastes_fill_the_gumbel_distribution_evenly():
    nd = evcs_gym.load_scenario(
        "tiny", warm_start=False, station_taste_quasi_random=True, station_taste_logit=True
    )
    pr = evcs_gym.load_scenario("tiny", warm_start=False, station_taste_logit=True)
    scale = nd.settings.station_taste_scale
    for tastes in (station_tastes(nd), station_tastes(pr)):
        assert tastes.shape == (nd.n_platoons, nd.n_agents)
    # pairwise differences of Gumbel draws are logistic of the same scale: compare the
    # empirical CDF at a few points with the logistic's; quasi-random draws sit closer
    x = np.array([-4.0, -1.0, 0.0, 1.0, 4.0]) * scale / 4
    logistic = 1 / (1 + np.exp(-x / scale))

    def cdf_error(tastes: np.ndarray) -> float:
        d = tastes[nd.veh_charging, 0] - tastes[nd.veh_charging, 1]
        return float(np.abs((d[:, None] <= x).mean(axis=0) - logistic).max())

    assert cdf_error(station_tastes(nd)) < 0.02
    assert cdf_error(station_tastes(nd)) < cdf_error(station_tastes(pr))
