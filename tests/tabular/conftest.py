"""Fixtures of the tabular tests: the ``tiny_market`` game and a small grid on it."""

from __future__ import annotations

import pytest

import evcs_gym
from evcs_gym.tabular import calvano_grid


@pytest.fixture(scope="session")
def market() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario("tiny_market")


@pytest.fixture(scope="session")
def small_grid(market):
    """Calvano's grid on ``tiny_market`` with 3 levels: 9 joint profiles."""
    return calvano_grid(market, m=3)
