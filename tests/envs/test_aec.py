"""The AEC form of the game (evcs_gym.envs.aec): PettingZoo's AEC API test."""

from __future__ import annotations

from pettingzoo.test import api_test

import evcs_gym


def test_aec_api(tiny):
    api_test(evcs_gym.env(scenario=tiny), num_cycles=5)
