"""TablePricingEnv (evcs_gym.envs.table_env): API checkers, the simulator's rewards replayed
bit for bit, the repeated game, errors (its speed: ``benchmarks/bench_table_env.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import evcs_gym
from evcs_gym.envs import TablePricingEnv
from evcs_gym.tabular import calvano_grid, simulator_table
from evcs_gym.wrappers import DiscretePrices

M = 4


@pytest.fixture(scope="module")
def market():
    return evcs_gym.load_scenario("tiny_market")


@pytest.fixture(scope="module")
def table(market):
    return simulator_table(market, calvano_grid(market, m=M), seed=2, n_workers=2, cache=False)


@pytest.mark.parametrize("rounds", [None, 3])
def test_parallel_api(table, rounds):
    parallel_api_test(TablePricingEnv(table, rounds=rounds), num_cycles=10)


def test_parallel_seed(table):
    parallel_seed_test(lambda: TablePricingEnv(table, rounds=3))


def test_replays_the_simulators_rewards_bit_for_bit(market, table):
    sim = DiscretePrices(evcs_gym.parallel_env(scenario=market, eval_seed=2), table.grid)
    replay = TablePricingEnv(table)
    rng = np.random.default_rng(0)
    for _ in range(6):
        actions = {a: int(rng.integers(M)) for a in market.agent_names}
        sim.reset(seed=0)
        replay.reset(seed=0)
        _, r_sim, t_sim, _, i_sim = sim.step(actions)
        _, r_tab, t_tab, _, i_tab = replay.step(actions)
        assert r_sim == r_tab and t_sim == t_tab
        for a in market.agent_names:
            assert i_sim[a]["reward_raw"] == i_tab[a]["reward_raw"]
            assert np.array_equal(i_sim[a]["flows"], i_tab[a]["flows"])
            assert np.array_equal(i_sim[a]["prices"], i_tab[a]["prices"])


def test_the_repeated_game_observes_last_rounds_levels(table):
    env = TablePricingEnv(table, rounds=2)
    obs, _ = env.reset(seed=0, options={"initial_levels": [0, M - 1]})
    assert obs["B"].tolist() == [0.0, 1.0, 0.0, 1.0] and env.state().tolist() == [0.0, 1.0]
    obs, _, terms, truncs, infos = env.step({"A": 2, "B": 1})
    assert obs["A"][:2].tolist() == pytest.approx([2 / 3, 1 / 3]) and not any(truncs.values())
    _, _, terms, truncs, infos = env.step({"A": 2, "B": 1})
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    assert infos["A"]["round"] == 2 and infos["B"]["level"] == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rounds": 0}, "`rounds` must be None or a positive integer"),
        ({"reward_scale": "scenario"}, "`reward_scale` must be 'table'"),
        ({"reward_scale": -1.0}, "`reward_scale` must be positive"),
    ],
)
def test_bad_arguments(table, kwargs, match):
    with pytest.raises(ValueError, match=match):
        TablePricingEnv(table, **kwargs)


def test_bad_actions_and_levels(table):
    env = TablePricingEnv(table)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"A": 0, "B": 0})
    env.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"action of agent 'B' must be an integer level in \[0, 4\)"
    ):
        env.step({"A": 0, "B": 4})
    with pytest.raises(ValueError, match="must map every agent"):
        env.step({"A": 0})
    with pytest.raises(ValueError, match="`initial_levels` must be 2 integer levels"):
        env.reset(options={"initial_levels": [0.5, 1]})
