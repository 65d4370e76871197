"""Learned tabular strategies (evcs_gym.baselines.strategies): limit cycles, the repeated-game
checks and impulse responses on hand-built strategies of Calvano's grid game."""

from __future__ import annotations

import numpy as np
import pytest

from evcs_gym.baselines.strategies import (
    impulse_response,
    limit_cycle,
    repeated_game_gains,
    session_outcome,
)
from evcs_gym.tabular import LogitMarket

M = 15


@pytest.fixture(scope="module")
def table():
    market = LogitMarket()
    return market.table(market.grid(m=M))


def grim_trigger(table, high: int) -> np.ndarray:
    """Both stations play ``high`` after (high, high), else the grid's Nash level forever."""
    nash = table.pure_nash()[0]
    strategies = np.empty((2, M * M), dtype=np.int64)
    strategies[0], strategies[1] = nash
    strategies[:, table.grid.index([high, high])] = high
    return strategies


def test_limit_cycles():
    strategies = np.zeros((2, 4), dtype=np.int64)  # m = 2: (0,0)->(1,1)->(0,0), (0,1)->(0,0)
    strategies[:, 0] = [1, 1]
    strategies[:, 3] = [0, 0]
    assert limit_cycle(strategies, 1, 2).tolist() == [0, 3]
    assert limit_cycle(strategies, 3, 2).tolist() == [3, 0]


def test_grim_trigger_is_an_equilibrium_of_the_repeated_game(table):
    strategies = grim_trigger(table, high=12)
    one_shot, best_reply = repeated_game_gains(table, strategies, delta=0.95)
    # subgame perfect: the punishment is the stage game's equilibrium, the reward is patient
    assert one_shot.max() < 1e-9 and best_reply.max() < 1e-9
    outcome = session_outcome(table, strategies, table.grid.index([12, 12]), 0.95)
    assert outcome.cycle == [table.grid.index([12, 12])] and outcome.delta > 0.95
    assert outcome.best_reply_gain == 0.0 and outcome.nash_conv > 0.05  # not a stage equilibrium


def test_impatient_stations_deviate_from_grim_trigger(table):
    _, best_reply = repeated_game_gains(table, grim_trigger(table, high=12), delta=0.2)
    assert best_reply[:, table.grid.index([12, 12])].min() > 0.01


def test_always_high_is_exploited(table):
    strategies = np.full((2, M * M), 12)
    one_shot, best_reply = repeated_game_gains(table, strategies, delta=0.95)
    state = table.grid.index([12, 12])
    assert one_shot[0, state] > 0 and best_reply[0, state] >= one_shot[0, state]


def test_impulse_response_of_grim_trigger_punishes_forever(table):
    strategies = grim_trigger(table, high=12)
    nash = table.pure_nash()[0]
    ir = impulse_response(table, strategies, table.grid.index([12, 12]), deviator=0, horizon=5)
    assert ir.levels.shape == (6, 2) and ir.prices.shape == (6, 2, 1)
    assert ir.levels[0].tolist() == [12, 12]
    assert ir.levels[1].tolist() == [table.best_response(0, [12, 12]), 12]
    assert (ir.levels[2:] == nash).all()
    assert ir.returned == 0.0 and np.isnan(ir.punishment_length)  # grim: never forgiven


def test_impulse_response_of_a_one_round_punishment_returns(table):
    strategies = grim_trigger(table, high=12)
    nash = table.grid.index(table.pure_nash()[0])
    strategies[:, nash] = 12  # after one round at Nash, back to (12, 12)
    ir = impulse_response(table, strategies, table.grid.index([12, 12]), deviator=1, horizon=6)
    assert ir.levels[2].tolist() == list(table.pure_nash()[0]) and ir.levels[3].tolist() == [12, 12]
    assert ir.returned == 1.0 and ir.punishment_length == 3.0
