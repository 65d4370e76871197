"""RescaleActions (evcs_gym.wrappers.rescale): actions in [-1, 1] mapped onto the price bounds."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import evcs_gym
from evcs_gym.wrappers import RescaleActions
from tests.helpers import history_env as history


def test_parallel_api_rescaled(tiny):
    parallel_api_test(RescaleActions(history(tiny, rounds=2)), num_cycles=5)


def test_rescale_actions(tiny):
    env = RescaleActions(evcs_gym.parallel_env(scenario=tiny))
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"A": [-1.0, 0.0, 1.0, 0.5], "B": [1.0] * 4})
    assert infos["A"]["prices"].tolist() == [0.5, 1.25, 2.0, 1.625]
    assert infos["B"]["prices"].tolist() == [2.0] * 4
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"agent 'A' must have shape \(4,\)"):
        env.step({"A": [0.0] * 5, "B": [0.0] * 4})
    with pytest.raises(ValueError, match=r"agent 'B'.*non-finite"):
        env.step({"A": [0.0] * 4, "B": [0.0, np.nan, 0.0, 0.0]})
    with pytest.raises(ValueError, match="min_action"):
        RescaleActions(evcs_gym.parallel_env(scenario=tiny), 1.0, 1.0)
