"""NumericInfo (evcs_gym.wrappers.numeric_info): fixed numeric keys at reset and
step, values equal to the raw infos."""

from __future__ import annotations

import pickle
import typing

import numpy as np
import pytest
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test, parallel_seed_test

import evcs_gym
from evcs_gym.ue.result import UEStats
from evcs_gym.wrappers import HistoryWrapper, NumericInfo, RescaleActions
from evcs_gym.wrappers.numeric_info import NUMERIC_INFO_KEYS, UE_STATS_KEYS

PRICES = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5, 1.5, 0.8, 2.0]}


def stack(tiny, kind: str):
    env = evcs_gym.parallel_env(scenario=tiny)
    if kind in ("history", "rescaled-history"):
        env = HistoryWrapper(env, rounds=2)
    if kind == "rescaled-history":
        env = RescaleActions(env)
    return env


def assert_numeric(infos: dict, agents, shapes: dict) -> None:
    assert list(infos) == list(agents)
    for info in infos.values():
        assert list(info) == list(shapes)
        for key, value in info.items():
            if shapes[key] == ():
                assert type(value) is float, (key, value)
            else:
                assert isinstance(value, np.ndarray) and value.dtype == np.float64
                assert value.shape == shapes[key], key


@pytest.mark.parametrize("kind", ["base", "history", "rescaled-history"])
def test_same_keys_at_reset_and_step(tiny, kind):
    env = NumericInfo(stack(tiny, kind))
    shapes = {k: (4,) if k in ("prices", "flows") else () for k in NUMERIC_INFO_KEYS}
    assert env.info_shapes == shapes
    obs, infos = env.reset(seed=0)
    assert_numeric(infos, ["A", "B"], shapes)
    assert all(np.all(np.asarray(v) == 0) for info in infos.values() for v in info.values())
    rounds = 0
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        infos = env.step(actions)[4]
        rounds += 1
        assert_numeric(infos, ["A", "B"], shapes)
        assert all(info["round"] == rounds for info in infos.values())
    assert rounds == (1 if kind == "base" else 2)


@pytest.mark.parametrize("kind", ["base", "history"])
def test_values_equal_the_raw_infos(tiny, kind):
    raw_env, env = stack(tiny, kind), NumericInfo(stack(tiny, kind))
    raw_env.reset(seed=3)
    env.reset(seed=3)
    raw = raw_env.step(PRICES)[4]
    num = env.step(PRICES)[4]
    for a in ("A", "B"):
        r, n = raw[a], num[a]
        np.testing.assert_array_equal(n["prices"], r["prices"])
        np.testing.assert_array_equal(n["flows"], r["flows"])
        assert n["revenue"] == r["revenue"] > 0 or n["revenue"] == r["revenue"] == 0
        assert n["reward_raw"] == r["reward_raw"]
        assert n["converged"] == float(r["converged"])
        assert n["stationary_mean"] == float(r["ue_stats"]["payoff"] == "stationary_mean")
        assert n["revenue_se"] == r["revenue_se"] == r["ue_stats"]["revenue_se"][a]
        assert n["ue_iterations"] == r["ue_iterations"] >= 1
        assert n["action_clipped"] == 0.0
        assert n["relative_gap"] == r["ue_stats"]["relative_gap"]
        assert n["charging_relative_gap"] == r["ue_stats"]["charging_relative_gap"]
        assert n["charging_tail_share"] == r["ue_stats"]["charging_tail_share"]
        assert n["completed_ratio"] == r["ue_stats"]["completed_ratio"]
        for key in UE_STATS_KEYS:
            assert n[key] == float(r["ue_stats"][key]), key
    assert num["A"]["revenue"] + num["B"]["revenue"] > 0


def test_ue_stats_keys_are_every_number_of_the_ue_stats_type():
    hints = typing.get_type_hints(UEStats)
    assert set(UE_STATS_KEYS) == {k for k, t in hints.items() if t in (int, float)}
    assert {"relative_gap", "charging_relative_gap", "mean_travel_time"} <= set(UE_STATS_KEYS)
    assert set(UE_STATS_KEYS) <= set(NUMERIC_INFO_KEYS)


def test_stationary_mean_is_one_when_the_rule_was_out_of_reach(tiny):
    orbiting = evcs_gym.load_scenario(  # a rule out of reach: the stationary stop ends it
        "tiny", ue_convergence_threshold=1e-9, ue_payoff_min_iterations=5
    )
    keys = ["converged", "stationary_mean", "revenue_se"]
    raw_env = evcs_gym.parallel_env(scenario=orbiting)
    env = NumericInfo(evcs_gym.parallel_env(scenario=orbiting), keys=keys)
    raw_env.reset(seed=0)
    env.reset(seed=0)
    raw = raw_env.step(PRICES)[4]["A"]
    infos = env.step(PRICES)[4]
    assert raw["ue_stats"]["stop_reason"] == "stationary"
    assert infos["A"] == {
        "converged": 0.0,
        "stationary_mean": 1.0,
        "revenue_se": raw["ue_stats"]["revenue_se"]["A"],
    }
    assert infos["A"]["revenue_se"] == raw["revenue_se"]


def test_clipped_action_is_one(tiny):
    env = NumericInfo(evcs_gym.parallel_env(scenario=tiny))
    env.reset(seed=0)
    infos = env.step({"A": [3.0, 1.0, 1.0, 1.0], "B": [1.0] * 4})[4]
    assert infos["A"]["action_clipped"] == 1.0 and infos["B"]["action_clipped"] == 0.0
    assert infos["A"]["prices"].tolist() == [2.0, 1.0, 1.0, 1.0]


def test_two_phase_step_matches_step(tiny):
    one, two = NumericInfo(stack(tiny, "history")), NumericInfo(stack(tiny, "history"))
    one.reset(seed=5)
    two.reset(seed=5)
    expected = one.step(PRICES)[4]
    pending = two.begin_step(PRICES)
    result = two.unwrapped.evaluator.evaluate(pending.prices, seed=pending.seed)
    got = two.end_step(pending, result)[4]
    for a in ("A", "B"):
        assert got[a].keys() == expected[a].keys()
        for k in got[a]:
            np.testing.assert_array_equal(got[a][k], expected[a][k])


def test_key_subset_in_given_order(tiny):
    env = NumericInfo(evcs_gym.parallel_env(scenario=tiny), keys=["flows", "converged"])
    assert list(env.reset(seed=0)[1]["A"]) == ["flows", "converged"]
    assert list(env.step(PRICES)[4]["B"]) == ["flows", "converged"]


@pytest.mark.parametrize(
    "keys, match",
    [
        (["revenue", "ue_stats"], "ue_stats"),
        ([], "distinct"),
        (["flows", "flows"], "distinct"),
        ("revenue", "sequence"),
    ],
)
def test_bad_keys_raise(tiny, keys, match):
    with pytest.raises(ValueError, match=match):
        NumericInfo(evcs_gym.parallel_env(scenario=tiny), keys=keys)


def test_rejects_other_envs():
    class Other(ParallelEnv):
        possible_agents = ["x"]
        metadata = {}

    with pytest.raises(TypeError, match="EVCSPricingParallelEnv"):
        NumericInfo(Other())


def test_pettingzoo_checkers(tiny):
    parallel_api_test(NumericInfo(stack(tiny, "history")), num_cycles=4)
    parallel_seed_test(lambda: NumericInfo(stack(tiny, "rescaled-history")))


def test_pickles_mid_episode(tiny):
    env = NumericInfo(stack(tiny, "history"))
    env.reset(seed=1)
    env.step(PRICES)
    copy = pickle.loads(pickle.dumps(env))
    a, b = env.step(PRICES)[4], copy.step(PRICES)[4]
    assert a["A"]["round"] == b["A"]["round"] == 2.0
    np.testing.assert_array_equal(a["B"]["flows"], b["B"]["flows"])
    assert a["B"]["revenue"] == b["B"]["revenue"]
