"""Gymnasium registration (evcs_gym.envs.registration): ``EVCSPricing-v0`` on import."""

from __future__ import annotations

import gymnasium as gym

import evcs_gym
from evcs_gym.envs import EVCSPricingEnv


def test_registered_on_import():
    assert gym.spec("EVCSPricing-v0").entry_point == "evcs_gym.envs.gym_env:EVCSPricingEnv"
    env = gym.make("evcs_gym:EVCSPricing-v0", scenario="tiny")
    assert isinstance(env.unwrapped, EVCSPricingEnv)
    evcs_gym.envs.register_envs()  # a second registration is a no-op
