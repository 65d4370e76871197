"""What an evaluation returns (evcs_gym.ue.result): EvalResult and its typed UE statistics."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import evcs_gym
from evcs_gym.ue.result import EvalResult, GapSummary, UEStats, ue_stats_keys
from tests.helpers import NEAR, ORBITING, UNEVEN


def test_result_is_picklable_and_json_ready(tiny):
    import json

    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=0)
    assert pickle.loads(pickle.dumps(res)) == res
    data = json.loads(json.dumps(res.to_dict()))
    assert data["flows"]["A"] == res.flows["A"].tolist()


@pytest.mark.parametrize("profile", ["near", "orbiting"])
def test_ue_stats_hold_every_typed_key_in_order(tiny, profile):
    """A converged loop and a stationary one write the same keys, those of UEStats."""
    prices = {"near": NEAR, "orbiting": ORBITING}[profile]
    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(prices, seed=0)
    assert res.ue_stats["stop_reason"] == {"near": "converged", "orbiting": "stationary"}[profile]
    assert tuple(res.ue_stats) == ue_stats_keys() == tuple(UEStats.__annotations__)
    for key in ("charging_gap", "non_charging_gap"):
        assert tuple(res.ue_stats[key]) == tuple(GapSummary.__annotations__)
    for key in ("revenue_se", "reward_se"):
        assert list(res.ue_stats[key]) == list(tiny.agent_names)


def test_equality_is_every_field_but_the_timings(tiny):
    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=0)
    assert dataclasses.replace(res, timings={"total": 123.0}) == res
    assert dataclasses.replace(res, seed=res.seed + 1) != res
    flows = {a: f.copy() for a, f in res.flows.items()}
    flows["A"][0] += 5.0
    assert dataclasses.replace(res, flows=flows) != res
    assert res != "a result"


def test_total_reward_sums_the_stations_rewards():
    res = EvalResult(
        rewards={"A": 1.5, "B": 2.25},
        flows={"A": np.zeros(2), "B": np.ones(2)},
        revenues={"A": 1.5, "B": 2.25},
        prices={"A": np.ones(2), "B": np.ones(2)},
        ue_iterations=1,
        converged=True,
        ue_stats={},
        seed=0,
    )
    assert res.total_reward == 3.75 and isinstance(res.total_reward, float)
    assert res.to_dict()["flows"]["B"] == [1.0, 1.0] and res.to_dict()["timings"] == {}
