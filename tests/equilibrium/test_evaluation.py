"""The batch evaluation adapter (evcs_gym.equilibrium.evaluation): one call shape for a pool,
an evaluator or bare NetworkData; results cached per profile and seed."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from tests.helpers import MIXED


def test_rewards_are_the_evaluators_and_each_profile_runs_once(tiny):
    be = BatchEvaluator(tiny)
    other = be.network_prices(1.25)
    rewards = be.rewards([MIXED, other, MIXED], seed=3)
    assert rewards.shape == (3, tiny.n_agents) and be.evaluations == 2
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    for row, prices in zip(rewards, [MIXED, other, MIXED]):
        res = ev.evaluate(be.as_mapping(prices), seed=3)
        assert row.tolist() == [res.rewards[a] for a in tiny.agent_names]
    assert be.rewards([other], seed=3).tolist() == [rewards[1].tolist()]  # from the cache
    assert be.evaluations == 2
    be.rewards([other], seed=4)  # another seed is another evaluation
    assert be.evaluations == 3


def test_several_seeds_give_the_mean_over_seeds(tiny):
    be = BatchEvaluator(tiny)
    mean = be.rewards([MIXED], [0, 1])
    per_seed = [be.rewards([MIXED], s)[0] for s in (0, 1)]
    assert mean[0] == pytest.approx(np.mean(per_seed, axis=0))
    assert be.evaluations == 2
    assert be.rewards([MIXED], [1]).tolist() == [per_seed[1].tolist()]


def test_a_pool_an_evaluator_and_network_data_agree(tiny):
    serial = BatchEvaluator(tiny).rewards([MIXED], [0, 2])
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    by_evaluator = BatchEvaluator(ev)
    assert by_evaluator.backend is ev and by_evaluator.network is tiny
    assert by_evaluator.rewards([MIXED], [0, 2]).tolist() == serial.tolist()
    with evcs_gym.ParallelEvaluatorPool(tiny, n_workers=2) as pool:
        by_pool = BatchEvaluator(pool)
        assert by_pool.rewards([MIXED], [0, 2]).tolist() == serial.tolist()
        assert by_pool.evaluations == 2  # both seeds in one batch


def test_profiles_as_arrays_and_mappings(tiny):
    be = BatchEvaluator(tiny)
    mapping = be.as_mapping(MIXED)
    assert list(mapping) == list(tiny.agent_names)
    assert mapping["B"].tolist() == MIXED[1].tolist()
    assert be.as_array(mapping).tolist() == MIXED.tolist()
    assert be.as_array({"B": [1.0] * 4, "A": [2.0] * 4})[0].tolist() == [2.0] * 4
    assert be.network_prices(0.75).shape == (tiny.n_agents, tiny.n_periods)
    with pytest.raises(TypeError, match="got str"):
        BatchEvaluator("tiny")
