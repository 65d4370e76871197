"""When a UE loop stops and what it answers (evcs_gym.ue.stopping): the stop rule and its
gap statistics, the stationary stop, the payoff."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import evcs_gym
from evcs_gym.network.settings import FAST_STOP_SETTINGS
from evcs_gym.studies.convergence import study_profiles
from evcs_gym.ue.stationary import stationary_estimate
from evcs_gym.ue.stopping import GapStats, StopRule, gap_summary, settle_payoff
from tests.helpers import NEAR, ORBITING, agent_arrays, with_settings

FAR = GapStats(0.05, 0.05, 0.30, 1.0)
"""An iteration far from the stop rule."""


# ------------------------------------------------------------------ evaluations
def test_a_loop_out_of_reach_of_its_rule_answers_its_stationary_mean(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    res = ev.evaluate(ORBITING, seed=0)
    st = res.ue_stats
    assert not res.converged and st["stop_reason"] == "stationary"
    assert st["payoff"] == "stationary_mean"
    s = tiny.settings
    assert s.ue_payoff_min_iterations <= res.ue_iterations < s.ue_max_iterations
    first, last = st["window"]
    assert last == res.ue_iterations and last - first + 1 >= s.ue_payoff_min_window
    # the answer is the mean of the loop's own iterations over the window
    trace = ev.trace(ORBITING, seed=0)
    window = trace.flows[first - 1 : last]
    assert np.array_equal(agent_arrays(res, "flows"), window.mean(axis=0))
    history = np.array(st["revenue_history"])
    assert np.allclose(agent_arrays(res, "revenues"), history[first - 1 : last].mean(axis=0))
    # and its standard errors are what the stop asked for
    se = np.array(list(st["revenue_se"].values()))
    mean = agent_arrays(res, "revenues")
    size = np.maximum(mean, s.ue_payoff_floor * mean.mean())
    assert np.all(se > 0) and np.all(se <= s.ue_payoff_precision * size)
    assert st["reward_se"] == st["revenue_se"]  # no energy cost: rewards are revenues
    assert st["autocorrelation_time"] >= 1


def test_without_the_stationary_stop_the_same_loop_runs_to_the_cap(tiny):
    stopped = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(ORBITING, seed=0)
    capped = evcs_gym.EVCSRewardEvaluator(with_settings(tiny, ue_payoff_precision=0.0)).evaluate(
        ORBITING, seed=0
    )
    assert capped.ue_stats["stop_reason"] == "max_iterations"
    assert capped.ue_iterations == tiny.settings.ue_max_iterations
    assert capped.ue_stats["payoff"] == "stationary_mean"
    n = stopped.ue_iterations
    assert capped.ue_stats["revenue_history"][:n] == stopped.ue_stats["revenue_history"]
    # the longer run's mean lies within the band of the shorter one's
    for a in tiny.agent_names:
        se = np.hypot(stopped.ue_stats["revenue_se"][a], capped.ue_stats["revenue_se"][a])
        band = max(3 * se, 0.03 * capped.revenues[a])
        assert abs(stopped.revenues[a] - capped.revenues[a]) <= band


def test_a_converged_loop_answers_its_final_iteration(tiny):
    prices = {"A": [1.0] * 4, "B": [1.2] * 4}
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    res = ev.evaluate(prices, seed=0)
    trace = ev.trace(prices, seed=0)
    assert res.converged and res.ue_stats["payoff"] == "final_iteration"
    assert res.ue_stats["window"] == [res.ue_iterations, res.ue_iterations]
    assert np.array_equal(agent_arrays(res, "flows"), trace.flows[-1])
    k = tiny.settings.ue_convergence_stable_rounds
    spread = trace.revenues[-k:].std(axis=0, ddof=1)
    assert list(res.ue_stats["revenue_se"].values()) == spread.tolist()
    assert res.ue_stats["autocorrelation_time"] is None


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


def test_halved_tolerances_are_met_when_converged(tiny):
    nd = evcs_gym.load_scenario("tiny", ue_tolerance_scale=0.5)
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(NEAR, seed=0)
    assert res.ue_stats["stop_tolerances"]["charging_mean_gap"] == 0.001
    if res.converged:
        assert res.ue_stats["charging_relative_gap"] <= 0.005


def test_fast_stop_settings_cut_the_same_loop_earlier(tiny):
    """A scenario with other stop settings runs the scenario's own loops: a fast
    evaluation is the long trace cut by the fast rule, bit for bit, with nothing
    prepared again, and on an orbiting profile it is shorter than the game's payoff."""
    fast = tiny.with_stop_settings(**FAST_STOP_SETTINGS)
    assert fast.initial_route_choice is tiny.initial_route_choice
    assert fast.settings_hash != tiny.settings_hash
    res = evcs_gym.EVCSRewardEvaluator(fast).evaluate(ORBITING, 0)
    long = evcs_gym.EVCSRewardEvaluator(
        with_settings(tiny, ue_max_iterations=100, ue_payoff_precision=0.0)
    ).trace(ORBITING, 0)
    n, why, payoff = long.payoff(fast.settings)
    assert (n, why) == (res.ue_iterations, res.ue_stats["stop_reason"])
    assert np.array_equal(payoff.flows, agent_arrays(res, "flows"))
    game = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(ORBITING, 0)
    assert FAST_STOP_SETTINGS["ue_payoff_min_iterations"] <= res.ue_iterations
    assert res.ue_iterations < game.ue_iterations


# ------------------------------------------------------------------ the rule itself
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


def _settings(**kw) -> evcs_gym.ScenarioSettings:
    return evcs_gym.ScenarioSettings(charging_nodes={"A": (0.5, 2.0), "B": (0.5, 2.0)}, **kw)


def test_the_stop_rule_waits_for_the_minimum_iterations_and_window():
    s = _settings(ue_payoff_min_iterations=15, ue_payoff_min_window=10, ue_max_iterations=50)
    rule = StopRule(s)
    steady = np.array([1000.0, 500.0])  # no noise at all: precise at once
    reasons = [rule.update(it, FAR, steady) for it in range(50)]
    assert reasons.index("stationary") == 14  # the 15th iteration
    rule = StopRule(dataclasses.replace(s, ue_payoff_precision=0.0))
    reasons = [rule.update(it, FAR, steady) for it in range(50)]
    assert reasons[-1] == "max_iterations" and set(reasons[:-1]) == {None}


def test_the_stop_rule_converges_on_stable_rounds_before_anything_else():
    s = _settings(ue_payoff_min_iterations=3, ue_payoff_min_window=2)
    rule = StopRule(s)  # both stops would end this loop at its third iteration
    calm = GapStats(0.001, 0.001, 0.0, 1.0)
    assert [rule.update(it, calm, [1.0, 2.0]) for it in range(3)] == [None, None, "converged"]


def _first_stop(rule: StopRule, stats: list[GapStats], revenues: np.ndarray) -> tuple[int, str]:
    for it, r in enumerate(revenues):
        if (why := rule.update(it, stats[it], r)) is not None:
            return it + 1, why
    raise AssertionError("the loop never stopped")


def test_a_loop_still_in_its_transient_is_held_until_it_has_settled_twice_as_long():
    """A loop from a distant start meets its rule while a station's share still drifts:
    with ``ue_stop_settled_ratio`` it may stop only once the settled stretch after the
    MSER truncation is at least twice the transient; a loop without one is not held,
    nor is one shorter than ``ue_payoff_min_window``."""
    s = _settings(ue_payoff_min_iterations=10, ue_payoff_min_window=10, ue_max_iterations=200)
    held = dataclasses.replace(s, ue_stop_settled_ratio=2.0)
    calm = GapStats(0.001, 0.001, 0.0, 1.0)
    wobble = 1000.0 + 5.0 * np.sin(np.arange(120))
    drifting = np.c_[np.r_[np.linspace(700.0, 1000.0, 16), wobble][:120], np.full(120, 500.0)]
    cold = [FAR] * 10 + [calm] * 110  # the gaps meet the rule from the 11th iteration
    assert _first_stop(StopRule(s), cold, drifting) == (13, "converged")
    n, why = _first_stop(StopRule(held), cold, drifting)
    d = stationary_estimate(drifting[:n]).first
    assert why == "converged" and d >= 10 and n - d >= 2 * d
    assert stationary_estimate(drifting[: n - 1]).first * 3 > n - 1  # not a step earlier
    settled = np.c_[wobble, np.full(120, 500.0)]  # the warm start: no transient to wait out
    assert _first_stop(StopRule(held), cold, settled) == _first_stop(StopRule(s), cold, settled)
    assert _first_stop(StopRule(held), [calm] * 120, drifting) == (3, "converged")
    n_far, why_far = _first_stop(StopRule(held), [FAR] * 120, drifting)  # the stationary stop
    d_far = stationary_estimate(drifting[:n_far]).first
    assert why_far == "stationary" and n_far - d_far >= 2 * d_far >= 20
    assert _first_stop(StopRule(s), [FAR] * 120, drifting)[0] < n_far


def test_a_noisy_station_holds_the_loop_until_its_mean_is_known():
    rng = np.random.default_rng(3)
    s = _settings(ue_payoff_min_iterations=10, ue_payoff_min_window=5, ue_max_iterations=200)
    quiet = [StopRule(s), []]
    noisy = [StopRule(s), []]
    for rule, out in (quiet, noisy):
        scale = 0.01 if rule is quiet[0] else 0.25
        for it in range(200):
            r = [1000.0 * (1 + rng.normal(0, scale)), 800.0]
            if (why := rule.update(it, FAR, r)) is not None:
                out.append((it + 1, why))
                break
    (n_quiet, why_quiet), (n_noisy, _) = quiet[1][0], noisy[1][0]
    assert why_quiet == "stationary" and n_quiet == 10
    assert n_noisy > 3 * n_quiet


def test_settle_payoff_averages_flows_and_rewards_alike():
    s = _settings(charging_demand_per_vehicle=10.0, energy_cost_per_kwh=0.25)
    rng = np.random.default_rng(0)
    flows = rng.integers(0, 50, size=(30, 2, 8)).astype(float)
    prices = rng.uniform(0.5, 2.0, size=(2, 8))
    pay = settle_payoff(flows, prices, s, "max_iterations")
    revenues = (prices * flows * 10.0).sum(axis=-1)
    est = stationary_estimate(revenues)
    assert (pay.first, pay.stop) == (est.first, 30)
    assert np.array_equal(pay.flows, flows[est.first :].mean(axis=0))
    assert np.array_equal(pay.revenue_se, est.se)
    assert np.all(pay.reward_se < pay.revenue_se)  # margins are smaller than prices
    assert pay.window == (est.first + 1, 30)


# ------------------------------------------------------------------ Sioux Falls
@pytest.mark.siouxfalls
def test_siouxfalls_answers_the_stationary_mean_where_the_rule_is_out_of_reach(siouxfalls):
    """Uniform-random prices over the whole bounds rarely meet the Sioux Falls stop rule.
    Such a loop answers the mean of its stationary window with standard errors: here
    (an earlier convergence study's ``random_0``) a small earner's mean stays noisier
    than ``ue_payoff_precision`` allows, so the loop runs to its cap of 60."""
    base = {"10": [0.53] * 8, "13": [0.5] * 8, "18": [0.75] * 8, "3": [0.5] * 8}
    prices = study_profiles(siouxfalls, base, deviations=1, training_like=1, random=1)["random_0"]
    res = evcs_gym.EVCSRewardEvaluator(siouxfalls).evaluate(prices, seed=0)
    st, s = res.ue_stats, siouxfalls.settings
    assert not res.converged and st["payoff"] == "stationary_mean"
    # here a small earner's mean stays noisier than 3 % of the market: to the cap
    assert st["stop_reason"] == "max_iterations"
    assert res.ue_iterations == s.ue_max_iterations
    first, last = st["window"]
    assert last == res.ue_iterations and first <= last // 2 + 1
    history = np.array(st["revenue_history"])[first - 1 : last]
    precise = 0
    for i, a in enumerate(siouxfalls.agent_names):
        assert res.revenues[a] == pytest.approx(history[:, i].mean(), rel=1e-12)
        size = max(res.revenues[a], s.ue_payoff_floor * res.total_reward / 4)
        assert st["revenue_se"][a] > 0
        precise += st["revenue_se"][a] <= s.ue_payoff_precision * size
    assert precise < 4  # one station at least held the loop
