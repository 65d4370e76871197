"""Evaluation averaged over seeds (evcs_gym.ue.averaging)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import evcs_gym
from evcs_gym.ue.averaging import SeedAverage, standard_error
from tests.helpers import AVERAGE_PRICES


def test_mean_and_standard_error_by_hand(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    avg = ev.evaluate_seeds(AVERAGE_PRICES, seeds=[0, 1, 2, 3])
    values = np.array([ev.evaluate(AVERAGE_PRICES, seed=s).rewards["A"] for s in range(4)])
    assert avg.rewards["A"] == pytest.approx(values.mean())
    assert avg.rewards_se["A"] == pytest.approx(values.std(ddof=1) / 2)
    assert avg.n_seeds == 4 and avg.seeds == [0, 1, 2, 3]
    assert avg.total_reward == pytest.approx(
        np.mean([sum(r.rewards.values()) for r in avg.results])
    )
    assert 0 <= avg.converged_share <= 1
    assert "±" in avg.summary()


def test_paired_difference_needs_the_same_seeds(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    a = ev.evaluate_seeds(AVERAGE_PRICES, seeds=[0, 1])
    b = ev.evaluate_seeds({"A": [1.0] * 4, "B": [1.0] * 4}, seeds=[0, 1])
    diff, se = a.paired_difference(b)
    assert diff["A"] == pytest.approx(a.rewards["A"] - b.rewards["A"])
    assert se["A"] >= 0
    with pytest.raises(ValueError, match="same seeds"):
        a.paired_difference(ev.evaluate_seeds(AVERAGE_PRICES, seeds=[0, 2]))


def test_single_seed_has_nan_standard_error(tiny):
    avg = SeedAverage([evcs_gym.EVCSRewardEvaluator(tiny).evaluate(AVERAGE_PRICES, seed=0)])
    assert math.isnan(avg.rewards_se["A"])
    assert math.isnan(standard_error([1.0]))


def test_bad_prices_raise_before_any_evaluation(tiny):
    with pytest.raises(evcs_gym.PriceError):
        evcs_gym.EVCSRewardEvaluator(tiny).evaluate_seeds({"A": [9.0] * 4, "B": [1.0] * 4})
