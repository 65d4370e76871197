"""When a UE loop stops and what it answers: the stop rule, the stationary stop, the payoff."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import evcs_gym
from evcs_gym.network.settings import FAST_STOP_SETTINGS
from evcs_gym.ue.stationary import stationary_estimate
from evcs_gym.ue.stopping import GapStats, StopRule, settle_payoff

ORBITING = {"A": [1.79, 0.52, 1.57, 1.19], "B": [1.38, 0.72, 1.7, 1.07]}
"""A ``tiny`` profile whose UE never meets its rule at seed 0 (a uniform-random draw)."""

FAR = GapStats(0.05, 0.05, 0.30, 1.0)
"""An iteration far from the stop rule."""


def _with(nd, **settings):
    return dataclasses.replace(nd, settings=dataclasses.replace(nd.settings, **settings))


def _agents(res, field):
    return np.stack([np.asarray(getattr(res, field)[a], dtype=float) for a in res.revenues])


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
    assert np.array_equal(_agents(res, "flows"), window.mean(axis=0))
    history = np.array(st["revenue_history"])
    assert np.allclose(_agents(res, "revenues"), history[first - 1 : last].mean(axis=0))
    # and its standard errors are what the stop asked for
    se = np.array(list(st["revenue_se"].values()))
    mean = _agents(res, "revenues")
    size = np.maximum(mean, s.ue_payoff_floor * mean.mean())
    assert np.all(se > 0) and np.all(se <= s.ue_payoff_precision * size)
    assert st["reward_se"] == st["revenue_se"]  # no energy cost: rewards are revenues
    assert st["autocorrelation_time"] >= 1


def test_without_the_stationary_stop_the_same_loop_runs_to_the_cap(tiny):
    stopped = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(ORBITING, seed=0)
    capped = evcs_gym.EVCSRewardEvaluator(_with(tiny, ue_payoff_precision=0.0)).evaluate(
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
    assert np.array_equal(_agents(res, "flows"), trace.flows[-1])
    k = tiny.settings.ue_convergence_stable_rounds
    spread = trace.revenues[-k:].std(axis=0, ddof=1)
    assert list(res.ue_stats["revenue_se"].values()) == spread.tolist()
    assert res.ue_stats["autocorrelation_time"] is None


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
        _with(tiny, ue_max_iterations=100, ue_payoff_precision=0.0)
    ).trace(ORBITING, 0)
    rule = dataclasses.replace(tiny.settings, **settings)
    n, why, payoff = long.payoff(rule)
    res = evcs_gym.EVCSRewardEvaluator(_with(tiny, **settings)).evaluate(ORBITING, 0)
    assert (n, why) == (res.ue_iterations, res.ue_stats["stop_reason"])
    assert np.array_equal(payoff.flows, _agents(res, "flows"))
    assert payoff.revenue_se.tolist() == list(res.ue_stats["revenue_se"].values())
    assert list(payoff.window) == res.ue_stats["window"]


def test_trace_is_the_evaluation(tiny):
    """``trace`` runs the loop of ``evaluate``; its payoff under the same settings is the result."""
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    tr = ev.trace(ORBITING, seed=0)
    res = ev.evaluate(ORBITING, seed=0)
    assert tr.iterations == res.ue_iterations and tr.stop_reason == res.ue_stats["stop_reason"]
    assert tr.revenues.tolist() == res.ue_stats["revenue_history"]
    assert [st.charging_mean_gap for st in tr.stats] == res.ue_stats["charging_gap_history"]
    assert tr.flows.shape == (tr.iterations, tiny.n_agents, tiny.n_periods)
    assert np.array_equal(tr.payoff(tiny.settings)[2].flows, _agents(res, "flows"))


def test_a_trace_too_short_for_a_stop_rule_says_so(tiny):
    short = evcs_gym.EVCSRewardEvaluator(_with(tiny, ue_max_iterations=5)).trace(ORBITING, 0)
    assert short.stop_reason == "max_iterations" and short.iterations == 5
    with pytest.raises(ValueError, match=r"ends after 5 iterations \(max_iterations\)"):
        short.stop(tiny.settings)
    assert short.stop(_with(tiny, ue_max_iterations=3).settings) == (3, "max_iterations")


def test_the_payoff_settings_do_not_touch_the_warm_start():
    plain = evcs_gym.load_scenario("tiny")
    other = evcs_gym.load_scenario("tiny", ue_payoff_precision=0.01, ue_payoff_min_iterations=5)
    assert other.settings.ue_payoff_precision == 0.01
    assert np.array_equal(plain.initial_route_choice, other.initial_route_choice)
    assert plain.warm_start_info["iterations"] == other.warm_start_info["iterations"]


def test_fast_stop_settings_cut_the_same_loop_earlier(tiny):
    """A scenario with other stop settings runs the scenario's own loops: a fast
    evaluation is the long trace cut by the fast rule, bit for bit, with nothing
    prepared again, and on an orbiting profile it is shorter than the game's payoff."""
    fast = tiny.with_stop_settings(**FAST_STOP_SETTINGS)
    assert fast.initial_route_choice is tiny.initial_route_choice
    assert fast.settings_hash != tiny.settings_hash
    res = evcs_gym.EVCSRewardEvaluator(fast).evaluate(ORBITING, 0)
    long = evcs_gym.EVCSRewardEvaluator(
        _with(tiny, ue_max_iterations=100, ue_payoff_precision=0.0)
    ).trace(ORBITING, 0)
    n, why, payoff = long.payoff(fast.settings)
    assert (n, why) == (res.ue_iterations, res.ue_stats["stop_reason"])
    assert np.array_equal(payoff.flows, _agents(res, "flows"))
    game = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(ORBITING, 0)
    assert FAST_STOP_SETTINGS["ue_payoff_min_iterations"] <= res.ue_iterations
    assert res.ue_iterations < game.ue_iterations


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"deltan": 3}, r"\['deltan'\] are not stop settings"),
        ({"ue_switch_budget": 0.02}, "not stop settings"),
        ({"ue_payoff_precision": 1.0}, "ue_payoff_precision"),
        ({"ue_max_iterations": "many"}, "ue_max_iterations"),
    ],
)
def test_with_stop_settings_takes_only_stop_settings_in_range(tiny, changes, match):
    with pytest.raises(evcs_gym.ScenarioError, match=match):
        tiny.with_stop_settings(**changes)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ue_payoff_precision", -0.01),
        ("ue_payoff_precision", 1.0),
        ("ue_payoff_min_iterations", 0),
        ("ue_payoff_min_iterations", 2.5),
        ("ue_payoff_min_window", 1),
        ("ue_payoff_floor", 1.5),
    ],
)
def test_payoff_settings_are_checked(key, value):
    with pytest.raises(evcs_gym.ScenarioError, match=key):
        evcs_gym.ScenarioSettings.from_mapping({"charging_nodes": {"A": [0.5, 2]}, key: value})


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
