"""Rendering (evcs_gym.envs.render): RGB frames of prices and flows, a PNG per step in
``human`` mode, through the PettingZoo game and the Gymnasium view."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from tests.helpers import ENV_PRICES as PRICES
from tests.helpers import make_gym_env as make


def test_render_rgb_array_and_human(tiny, tmp_path):
    env = evcs_gym.parallel_env(scenario=tiny, render_mode="rgb_array")
    env.reset(seed=0)
    before = env.render()
    env.step(PRICES)
    after = env.render()
    for frame in (before, after):
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
        assert frame.shape[0] > 100 and frame.shape[1] > 100
    assert not np.array_equal(before, after)  # prices and flows are drawn
    path = tmp_path / "frame.png"
    human = evcs_gym.parallel_env(scenario=tiny, render_mode="human", render_path=path)
    human.reset(seed=0)
    human.step(PRICES)
    assert human.render() is None and path.stat().st_size > 1000
    human.close()
    assert evcs_gym.parallel_env(scenario=tiny).render() is None  # no render_mode: warns
    with pytest.raises(ValueError, match="render_mode"):
        evcs_gym.parallel_env(scenario=tiny, render_mode="ansi")


def test_render_through_view():
    env = make(render_mode="rgb_array", agent="A")
    env.reset(seed=0)
    env.step(np.ones(4, dtype=np.float32))
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
