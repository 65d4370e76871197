"""The revenue evaluator (evcs_gym.ue.evaluator): physics, conservation, determinism, the
start of each UE loop (warm start, price-aware start), traces of the loop, Sioux Falls."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

import numpy as np
import pytest

import evcs_gym
from tests.helpers import (
    ENERGY,
    LONG,
    NEAR,
    ORBITING,
    SHORT,
    SPEED,
    TASTE_PRICES,
    TIME_VALUE,
    UNEVEN,
    agent_arrays,
    uniform,
    with_settings,
)


# ----------------------------------------------------------- hand-computable network
def test_hand_computable_two_routes(two_routes):
    nd = two_routes
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    # the S2 route is 2 * (LONG - SHORT) / SPEED = 50 s longer: worth 0.25 currency,
    # i.e. 0.025 per kWh of the 10 kWh bought
    threshold = TIME_VALUE * 2 * (LONG - SHORT) / SPEED / ENERGY
    assert threshold == pytest.approx(0.025)
    same = ev.evaluate({"S1": [1.0], "S2": [1.0]}, seed=0)
    assert same.converged
    assert same.flows["S1"].tolist() == [30.0] and same.flows["S2"].tolist() == [0.0]
    assert same.rewards["S1"] == pytest.approx(1.0 * 30 * ENERGY)
    # raising S1 by less than the time value keeps everyone there ...
    below = ev.evaluate({"S1": [1.0 + 0.8 * threshold], "S2": [1.0]}, seed=0)
    assert below.flows["S1"].sum() == 30
    # ... raising it by more moves everyone to S2
    above = ev.evaluate({"S1": [1.0 + 2 * threshold], "S2": [1.0]}, seed=0)
    assert above.converged
    assert above.flows["S1"].sum() == 0 and above.flows["S2"].sum() == 30
    assert above.rewards["S2"] == pytest.approx(1.0 * 30 * ENERGY)


# ------------------------------------------------------------------ conservation
def test_flows_and_rewards_are_conserved(tiny):
    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=1)
    total_flow = sum(f.sum() for f in res.flows.values())
    assert res.ue_stats["completed_ratio"] == 1.0
    assert total_flow == res.ue_stats["charging_vehicles_completed"]
    assert total_flow == res.ue_stats["simulated_charging_vehicles"]
    energy = tiny.settings.charging_demand_per_vehicle
    for a in tiny.agent_names:
        expected = float(np.sum(np.asarray(UNEVEN[a]) * res.flows[a] * energy))
        assert res.rewards[a] == pytest.approx(expected)
        assert res.flows[a].shape == (tiny.n_periods,)
        assert np.allclose(res.flows[a] % tiny.settings.deltan, 0)  # vehicles, not platoons


def test_energy_cost_turns_revenue_into_profit():
    nd = evcs_gym.load_scenario("tiny", energy_cost_per_kwh=0.5)
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(UNEVEN, seed=1)
    energy = nd.settings.charging_demand_per_vehicle
    for a in nd.agent_names:
        assert res.revenues[a] - res.rewards[a] == pytest.approx(0.5 * energy * res.flows[a].sum())


def test_raising_a_price_does_not_raise_its_flow(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    flows = []
    for price_a in (0.8, 1.1, 1.4, 1.7, 2.0):
        res = ev.evaluate({"A": [price_a] * 4, "B": [1.25] * 4}, seed=0)
        flows.append(res.flows["A"].sum())
    assert all(later <= earlier for earlier, later in zip(flows, flows[1:])), flows
    assert flows[0] > flows[-1]


def test_revenues_are_prices_times_flows_without_tastes(tasty):
    res = evcs_gym.EVCSRewardEvaluator(tasty).evaluate(TASTE_PRICES, seed=0)
    energy = tasty.settings.charging_demand_per_vehicle
    for a in tasty.agent_names:
        expected = float((res.prices[a] * res.flows[a]).sum() * energy)
        assert res.revenues[a] == pytest.approx(expected)
    assert res.total_reward > 0


# ------------------------------------------------------------------ determinism
def test_same_seed_same_bits_and_no_memory_between_calls(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    first = ev.evaluate(UNEVEN, seed=5)
    ev.evaluate(uniform(tiny, 2.0), seed=9)  # must not influence the next call
    again = ev.evaluate(UNEVEN, seed=5)
    fresh = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=5)
    assert first == again == fresh
    assert first.ue_stats["gap_history"] == again.ue_stats["gap_history"]


def test_same_seed_same_bits_in_a_fresh_process(tiny, tmp_path):
    out = tmp_path / "res.pkl"
    code = (
        "import pickle, evcs_gym\n"
        "nd = evcs_gym.load_scenario('tiny')\n"
        f"res = evcs_gym.EVCSRewardEvaluator(nd).evaluate({UNEVEN!r}, seed=5)\n"
        f"pickle.dump(res, open({str(out)!r}, 'wb'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    other = pickle.loads(out.read_bytes())
    mine = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=5)
    assert mine == other


def test_seed_none_uses_the_scenario_default(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    assert ev.evaluate(UNEVEN) == ev.evaluate(UNEVEN, seed=tiny.settings.default_seed)


def test_tastes_change_choices_deterministically(identical, tasty):
    ev = evcs_gym.EVCSRewardEvaluator(tasty)
    a, b = ev.evaluate(TASTE_PRICES, seed=2), ev.evaluate(TASTE_PRICES, seed=2)
    assert a == b
    plain = evcs_gym.EVCSRewardEvaluator(identical).equilibrium_routes(TASTE_PRICES, seed=2)
    assert not np.array_equal(ev.equilibrium_routes(TASTE_PRICES, seed=2), plain)


# ------------------------------------------------------------------ the start
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


def test_a_zero_start_gap_moves_every_platoon_that_has_a_cheaper_alternative():
    """``ue_price_aware_start_gap=0`` also moves the platoons within the charging
    tolerance of a cheaper alternative (with logit tastes there are many): a superset of
    the default's moves, charging platoons only."""
    market = evcs_gym.load_scenario("tiny_market")
    prices = {"A": [1.45] * 4, "B": [1.35] * 4}  # near the reference (mid-bounds, 1.4)
    default = evcs_gym.EVCSRewardEvaluator(market)
    zero = evcs_gym.EVCSRewardEvaluator(
        dataclasses.replace(
            market, settings=dataclasses.replace(market.settings, ue_price_aware_start_gap=0.0)
        )
    )
    p = default.check_prices(prices)
    start = default._initial_slot
    moved_default = default._start(p) != start
    moved_zero = zero._start(p) != start
    assert moved_zero.sum() > moved_default.sum()
    assert not (moved_default & ~moved_zero).any()
    assert not (moved_zero & ~market.veh_charging).any()


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


def test_the_payoff_settings_do_not_touch_the_warm_start():
    plain = evcs_gym.load_scenario("tiny")
    other = evcs_gym.load_scenario("tiny", ue_payoff_precision=0.01, ue_payoff_min_iterations=5)
    assert other.settings.ue_payoff_precision == 0.01
    assert np.array_equal(plain.initial_route_choice, other.initial_route_choice)
    assert plain.warm_start_info["iterations"] == other.warm_start_info["iterations"]


# ------------------------------------------------------------------ traces (UETrace)
def test_trace_is_the_evaluation(tiny):
    """``trace`` runs the loop of ``evaluate``; its payoff under the same settings is the result."""
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    tr = ev.trace(ORBITING, seed=0)
    res = ev.evaluate(ORBITING, seed=0)
    assert tr.iterations == res.ue_iterations and tr.stop_reason == res.ue_stats["stop_reason"]
    assert tr.revenues.tolist() == res.ue_stats["revenue_history"]
    assert [st.charging_mean_gap for st in tr.stats] == res.ue_stats["charging_gap_history"]
    assert tr.flows.shape == (tr.iterations, tiny.n_agents, tiny.n_periods)
    assert np.array_equal(tr.payoff(tiny.settings)[2].flows, agent_arrays(res, "flows"))


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"ue_payoff_precision": 0.05},
        {"ue_payoff_precision": 0.01},
        {"ue_payoff_min_iterations": 30},
        {"ue_payoff_min_window": 25},
        {"ue_max_iterations": 25},
        {"ue_payoff_precision": 0.0, "ue_max_iterations": 40},
    ],
)
def test_a_long_trace_replays_any_stationary_stop_exactly(tiny, settings):
    """The switching never reads the stationary stop or the cap: one long trace tells
    where each such rule stops the loop and what it answers, bit for bit as a real run
    (what ``benchmarks/bench_long_run.py`` relies on)."""
    long = evcs_gym.EVCSRewardEvaluator(
        with_settings(tiny, ue_max_iterations=100, ue_payoff_precision=0.0)
    ).trace(ORBITING, 0)
    rule = dataclasses.replace(tiny.settings, **settings)
    n, why, payoff = long.payoff(rule)
    res = evcs_gym.EVCSRewardEvaluator(with_settings(tiny, **settings)).evaluate(ORBITING, 0)
    assert (n, why) == (res.ue_iterations, res.ue_stats["stop_reason"])
    assert np.array_equal(payoff.flows, agent_arrays(res, "flows"))
    assert payoff.revenue_se.tolist() == list(res.ue_stats["revenue_se"].values())
    assert list(payoff.window) == res.ue_stats["window"]


def test_a_trace_too_short_for_a_stop_rule_says_so(tiny):
    short = evcs_gym.EVCSRewardEvaluator(with_settings(tiny, ue_max_iterations=5)).trace(
        ORBITING, 0
    )
    assert short.stop_reason == "max_iterations" and short.iterations == 5
    with pytest.raises(ValueError, match=r"ends after 5 iterations \(max_iterations\)"):
        short.stop(tiny.settings)
    assert short.stop(with_settings(tiny, ue_max_iterations=3).settings) == (3, "max_iterations")


# ------------------------------------------------------------------ Sioux Falls
@pytest.mark.siouxfalls
def test_siouxfalls_uniform_converges_and_charges_all_demand(siouxfalls):
    res = evcs_gym.EVCSRewardEvaluator(siouxfalls).evaluate(uniform(siouxfalls, 1.25), seed=0)
    assert res.converged
    assert res.ue_stats["relative_gap"] <= 0.01
    assert res.ue_stats["completed_ratio"] >= 0.95
    charged = sum(f.sum() for f in res.flows.values())
    assert abs(charged - 3750) <= 0.02 * 3750


@pytest.mark.siouxfalls
def test_siouxfalls_warm_start_is_tighter_than_the_stop_rule(siouxfalls):
    """The start assignment is solved with every tolerance scaled by
    ``warm_start_gap_ratio``; evaluations near the reference price then converge fast."""
    info, s = siouxfalls.warm_start_info, siouxfalls.settings
    tol = s.stop_tolerances
    for key in ("mean_gap", "charging_mean_gap", "charging_tail_share"):
        assert info["stop_tolerances"][key] == pytest.approx(s.warm_start_gap_ratio * tol[key])
    assert info["charging_relative_gap"] <= tol["charging_mean_gap"]
    rng = np.random.default_rng(0)
    near = {a: 1.25 + rng.normal(0, 0.05, siouxfalls.n_periods) for a in siouxfalls.agent_names}
    res = evcs_gym.EVCSRewardEvaluator(siouxfalls).evaluate(near, seed=0)
    assert res.converged and res.ue_iterations <= 4 * s.ue_convergence_stable_rounds


@pytest.mark.siouxfalls
def test_siouxfalls_revenue_shares_are_stable_across_seeds(siouxfalls):
    ev = evcs_gym.EVCSRewardEvaluator(siouxfalls)
    shares = []
    for seed in range(5):
        res = ev.evaluate(uniform(siouxfalls, 1.25), seed=seed)
        total = sum(res.rewards.values())
        shares.append([res.rewards[a] / total for a in siouxfalls.agent_names])
    spread = np.ptp(np.array(shares), axis=0)
    assert (spread < 0.03).all(), spread  # seed noise: a few per cent of revenue


def test_the_outside_option_takes_drivers_only_when_it_is_cheaper():
    """Charging at the network's stations costs 20 kWh × price; charging elsewhere 30."""
    nd = evcs_gym.load_scenario("tiny", charging_outside_cost=30.0)
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    cheap = ev.evaluate(uniform(nd, 0.5), seed=0)  # 10 < 30: everyone charges here
    dear = ev.evaluate(uniform(nd, 2.0), seed=0)  # 40 > 30: most charge elsewhere
    total = cheap.ue_stats["simulated_charging_vehicles"]
    assert cheap.ue_stats["charging_vehicles_charged"] == total
    assert dear.ue_stats["charging_vehicles_charged"] < 0.5 * total
    for res, price in ((cheap, 0.5), (dear, 2.0)):
        for a in nd.agent_names:
            energy = nd.settings.charging_demand_per_vehicle
            assert res.revenues[a] == pytest.approx(price * energy * res.flows[a].sum())
