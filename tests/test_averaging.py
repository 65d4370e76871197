"""Evaluation averaged over seeds (evcs_gym.ue.averaging)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import evcs_gym
from evcs_gym.ue.averaging import SeedAverage, check_seeds, standard_error

PRICES = {"A": [1.0, 1.2, 0.9, 1.1], "B": [1.1, 0.9, 1.3, 1.0]}


def test_mean_and_standard_error_by_hand(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    avg = ev.evaluate_seeds(PRICES, seeds=[0, 1, 2, 3])
    values = np.array([ev.evaluate(PRICES, seed=s).rewards["A"] for s in range(4)])
    assert avg.rewards["A"] == pytest.approx(values.mean())
    assert avg.rewards_se["A"] == pytest.approx(values.std(ddof=1) / 2)
    assert avg.n_seeds == 4 and avg.seeds == [0, 1, 2, 3]
    assert avg.total_reward == pytest.approx(
        np.mean([sum(r.rewards.values()) for r in avg.results])
    )
    assert 0 <= avg.converged_share <= 1
    assert "±" in avg.summary()


def test_pool_gives_the_same_average(tiny):
    serial = evcs_gym.EVCSRewardEvaluator(tiny).evaluate_seeds(PRICES, seeds=3)
    with evcs_gym.ParallelEvaluatorPool(tiny, n_workers=2) as pool:
        parallel = pool.evaluate_seeds(PRICES, seeds=3)
    assert serial.results == parallel.results
    assert serial.to_dict() == parallel.to_dict()


def test_paired_difference_needs_the_same_seeds(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    a = ev.evaluate_seeds(PRICES, seeds=[0, 1])
    b = ev.evaluate_seeds({"A": [1.0] * 4, "B": [1.0] * 4}, seeds=[0, 1])
    diff, se = a.paired_difference(b)
    assert diff["A"] == pytest.approx(a.rewards["A"] - b.rewards["A"])
    assert se["A"] >= 0
    with pytest.raises(ValueError, match="same seeds"):
        a.paired_difference(ev.evaluate_seeds(PRICES, seeds=[0, 2]))


@pytest.mark.parametrize(
    "seeds, match",
    [
        (0, "must be >= 1"),
        ([], "must not be empty"),
        ([1, 1], "distinct"),
        ([-1], "non-negative"),
        ([0.5], "non-negative integers"),
        ("ab", "non-negative integers"),
    ],
)
def test_bad_seeds_raise(seeds, match):
    with pytest.raises(ValueError, match=match):
        check_seeds(seeds)


def test_single_seed_has_nan_standard_error(tiny):
    avg = SeedAverage([evcs_gym.EVCSRewardEvaluator(tiny).evaluate(PRICES, seed=0)])
    assert math.isnan(avg.rewards_se["A"])
    assert math.isnan(standard_error([1.0]))


def test_bad_prices_raise_before_any_evaluation(tiny):
    with pytest.raises(evcs_gym.PriceError):
        evcs_gym.EVCSRewardEvaluator(tiny).evaluate_seeds({"A": [9.0] * 4, "B": [1.0] * 4})
