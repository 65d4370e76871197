"""Heterogeneous drivers (``station_taste_scale``): fixed per-platoon station tastes.

The tastes are part of the scenario (drawn once from ``station_taste_seed``), enter the
cost of every charging route and so the choices and gaps, and never the revenues.
"""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.errors import ScenarioError
from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.ue.costs import RouteCoster, station_tastes

PRICES = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5, 1.5, 0.8, 2.0]}


@pytest.fixture(scope="module")
def tasty() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario("tiny", station_taste_scale=2.0)


@pytest.fixture(scope="module")
def identical() -> evcs_gym.NetworkData:
    """``tiny`` with identical drivers (its bundled settings set scale 4)."""
    return evcs_gym.load_scenario("tiny", station_taste_scale=0.0)


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
    prices = evcs_gym.EVCSRewardEvaluator(identical).check_prices(PRICES)
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


def test_revenues_are_prices_times_flows_without_tastes(tasty):
    res = evcs_gym.EVCSRewardEvaluator(tasty).evaluate(PRICES, seed=0)
    energy = tasty.settings.charging_demand_per_vehicle
    for a in tasty.agent_names:
        expected = float((res.prices[a] * res.flows[a]).sum() * energy)
        assert res.revenues[a] == pytest.approx(expected)
    assert res.total_reward > 0


def test_tastes_change_choices_deterministically(identical, tasty):
    ev = evcs_gym.EVCSRewardEvaluator(tasty)
    a, b = ev.evaluate(PRICES, seed=2), ev.evaluate(PRICES, seed=2)
    assert a == b
    plain = evcs_gym.EVCSRewardEvaluator(identical).equilibrium_routes(PRICES, seed=2)
    assert not np.array_equal(ev.equilibrium_routes(PRICES, seed=2), plain)


def test_parallel_workers_see_the_same_drivers(tasty):
    batch = [PRICES, {"A": [0.7] * 4, "B": [1.9] * 4}]
    serial = evcs_gym.EVCSRewardEvaluator(tasty)
    with evcs_gym.ParallelEvaluatorPool(tasty, n_workers=2) as pool:
        results = pool.evaluate_batch(batch, seeds=1)
    assert results == [serial.evaluate(p, seed=1) for p in batch]


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("station_taste_scale", -1.0, "station_taste_scale"),
        ("station_taste_scale", float("nan"), "station_taste_scale"),
        ("station_taste_seed", -3, "station_taste_seed"),
        ("station_taste_seed", 1.5, "station_taste_seed"),
    ],
)
def test_bad_values_name_the_setting(key, value, match):
    with pytest.raises(ScenarioError, match=match):
        evcs_gym.load_scenario("tiny", warm_start=False, **{key: value})
