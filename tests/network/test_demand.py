"""Demand discretisation (evcs_gym.network.demand): platoon counts conserve the demand."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import evcs_gym
from evcs_gym.network.demand import apportion, platoon_departures


@given(
    st.lists(st.floats(min_value=0, max_value=500, allow_nan=False), min_size=1, max_size=60),
    st.integers(min_value=1, max_value=10),
)
@settings(max_examples=200, deadline=None)
def test_apportion_conserves_the_total_and_each_row(amounts, unit):
    amounts = np.array(amounts)
    counts = apportion(amounts, unit)
    assert counts.dtype.kind == "i"
    assert (counts >= 0).all()
    assert counts.sum() == int(np.floor(amounts.sum() / unit + 0.5 + 1e-9))
    # no row is off by a whole platoon or more
    assert np.all(np.abs(counts - amounts / unit) < 1 + 1e-9)


def test_small_flows_are_not_dropped():
    # 100 rows of 0.4 platoons each: per-row rounding (UXsim's adddemand) would give 0
    counts = apportion(np.full(100, 2.0), unit=5)
    assert counts.sum() == 40


def test_departures_are_inside_the_window_and_on_the_step_grid():
    times = platoon_departures(100.0, 1900.0, 7, delta_t=5.0)
    assert len(times) == 7
    assert (times >= 100.0).all() and (times < 1900.0).all()
    assert np.allclose(times % 5.0, 0.0)
    assert (np.diff(times) > 0).all()


def test_simulated_vehicles_equal_demanded_per_class(tiny, siouxfalls):
    for nd in (tiny, siouxfalls):
        simulated = nd.simulated_vehicles()
        deltan = nd.settings.deltan
        for cls in ("charging", "non_charging"):
            demanded = nd.demanded_vehicles[cls]
            assert abs(simulated[cls] - demanded) <= deltan / 2 + 1e-6, (nd.name, cls)


def test_siouxfalls_simulates_all_3750_charging_trips(siouxfalls):
    assert siouxfalls.simulated_vehicles()["charging"] == 3750
    # the earlier tool simulated 1,780 of them: most OD pairs had < 1 platoon of chargers
    charging_pairs = {
        (o, d)
        for o, d, c in zip(siouxfalls.veh_orig, siouxfalls.veh_dest, siouxfalls.veh_charging)
        if c
    }
    assert len(charging_pairs) > 300


def test_every_demand_row_gets_its_platoons_in_its_own_window():
    nd = evcs_gym.load_scenario("tiny", warm_start=False)
    for o, d, t0, t1, _q in nd.demand_rows:
        mine = (nd.veh_orig == o) & (nd.veh_dest == d)
        assert mine.any()
        assert (nd.veh_departure[mine] >= t0).all() and (nd.veh_departure[mine] < t1).all()
