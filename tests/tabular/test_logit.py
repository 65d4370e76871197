"""LogitMarket (evcs_gym.tabular.logit): Calvano et al.'s closed form, its grid game, and the
same market through the simulator, which matches it within the drivers' discreteness.

**The tolerance.** The simulator's market differs from the closed form in one way only:
its drivers are finitely many (``DRIVERS`` one-vehicle platoons) with quasi-random
tastes. The UE gives every driver its cheapest alternative (checked exactly against the
tastes), and the tastes' counts follow the logit to within ``QMC_DRIVERS`` drivers at
every profile of the grid (measured over the whole 15-level grid: 12.1 drivers at the
worst profile for 2,000 drivers, 10.5 for 1,000, 14.1 for 4,000: a quasi-random sample's
error grows like a power of log N, not like √N). A station's reward is (price − cost) ×
its drivers, so it lies within (price − cost) × ``QMC_DRIVERS`` of N times the profit.
"""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.tabular import LogitMarket, calvano_grid, simulator_table
from evcs_gym.ue.costs import station_tastes

DRIVERS = 2000
QMC_DRIVERS = 13


@pytest.fixture(scope="module")
def calvano():
    return LogitMarket()


@pytest.fixture(scope="module")
def simulated(calvano, tmp_path_factory):
    return evcs_gym.load_scenario(calvano.write_scenario(tmp_path_factory.mktemp("logit"), DRIVERS))


def test_calvanos_benchmarks(calvano):
    pn, pm = calvano.nash_prices(), calvano.monopoly_prices()
    np.testing.assert_allclose(pn, 1.472927, atol=1e-6)  # Calvano et al.: 1.47293
    np.testing.assert_allclose(pm, 1.924981, atol=1e-5)  # 1.92498
    q = calvano.demand(pn)
    np.testing.assert_allclose(pn - 1.0, 0.25 / (1 - q), rtol=1e-10)  # the first-order condition
    np.testing.assert_allclose(calvano.profits(pn), 0.222927, atol=1e-6)
    np.testing.assert_allclose(calvano.profits(pm), 0.337490, atol=1e-6)


def test_calvanos_grid(calvano):
    grid = calvano.grid()
    assert grid.prices.shape == (2, 15, 1)
    np.testing.assert_allclose(
        grid.prices[0, [0, 1, 14], 0], [1.42773, 1.46647, 1.97018], atol=1e-5
    )


def test_the_grid_game(calvano):
    table = calvano.table(calvano.grid())
    # the grid's equilibria sit next to the continuous Nash price (between levels 1 and 2)
    assert table.pure_nash() and all(set(lv) <= {1, 2} for lv in table.pure_nash())
    best = table.joint_optimum()
    assert best in [(12, 12), (13, 13)]  # p_M lies between levels 12 and 13
    assert table.delta(table.total(best)) > 0.99


def test_asymmetric_markets_have_no_scenario(tmp_path):
    with pytest.raises(ValueError, match="one quality and one cost"):
        LogitMarket(a=(2.0, 2.5)).write_scenario(tmp_path)
    with pytest.raises(ValueError, match="one value per firm"):
        LogitMarket(a=(2.0,), c=(1.0, 1.0))


@pytest.mark.parametrize("prices", [(1.4729, 1.4729), (1.925, 1.925), (1.43, 1.97), (2.2, 1.0)])
def test_the_simulator_gives_each_driver_its_cheapest_alternative(calvano, simulated, prices):
    res = evcs_gym.EVCSRewardEvaluator(simulated).evaluate({"1": [prices[0]], "2": [prices[1]]})
    assert res.converged
    cost = np.array([*prices, 2.0])  # the outside option costs a - a0 = 2
    counts = np.bincount((cost[None, :] + station_tastes(simulated)).argmin(axis=1), minlength=3)
    flows = np.array([res.flows["1"][0], res.flows["2"][0]])
    assert flows.tolist() == counts[:2].tolist()
    assert np.abs(flows - DRIVERS * calvano.demand(np.array(prices))).max() <= QMC_DRIVERS
    expected = (np.array(prices) - 1.0) * flows  # one kWh a driver, energy cost c = 1
    np.testing.assert_allclose([res.rewards["1"], res.rewards["2"]], expected, rtol=1e-12)


def test_the_folder_carries_the_closed_forms_references(calvano, simulated):
    grid = calvano_grid(simulated, m=15)
    np.testing.assert_allclose(grid.prices, calvano.grid().prices, atol=1e-12)


@pytest.mark.slow
def test_the_simulators_table_matches_the_closed_form(calvano, simulated):
    grid = calvano_grid(simulated, m=15)
    sim = simulator_table(simulated, grid, n_workers=2, cache=False)
    closed = calvano.table(calvano.grid())
    margin = grid.prices[:, :, 0][np.arange(2), grid.levels(np.arange(225))] - 1.0
    assert (np.abs(sim.rewards - DRIVERS * closed.rewards) <= margin * QMC_DRIVERS).all()
    assert sim.joint_optimum() == closed.joint_optimum()
