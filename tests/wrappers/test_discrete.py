"""DiscretePrices (evcs_gym.wrappers.discrete): API checkers alone, under the history and in
the Gymnasium views; levels to prices; the vector env; errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from pettingzoo.test import parallel_api_test, parallel_seed_test

import evcs_gym
from evcs_gym.tabular import calvano_grid
from evcs_gym.wrappers import DiscretePrices, HistoryWrapper, SingleAgentView, make_vector_env

M = 5


@pytest.fixture(scope="module")
def market():
    return evcs_gym.load_scenario("tiny_market")


def discrete(market, **kwargs):
    return DiscretePrices(evcs_gym.parallel_env(scenario=market, **kwargs), m=M)


def test_parallel_api(market):
    parallel_api_test(discrete(market), num_cycles=3)


def test_parallel_api_repeated(market):
    parallel_api_test(HistoryWrapper(discrete(market), rounds=3), num_cycles=4)


def test_parallel_seed(market):
    parallel_seed_test(lambda: HistoryWrapper(discrete(market), rounds=2))


def test_levels_set_the_grids_profiles(market):
    env = discrete(market)
    grid = calvano_grid(market, m=M)
    assert env.action_space("A") is env.action_space("A") and env.action_space("B").n == M
    env.reset(seed=0)
    _, rewards, terms, _, infos = env.step({"A": 4, "B": np.int64(0)})
    assert infos["A"]["level"] == 4 and infos["B"]["level"] == 0
    assert infos["A"]["prices"].tolist() == grid.prices[0, 4].tolist()
    assert infos["B"]["prices"].tolist() == grid.prices[1, 0].tolist()
    assert terms == {"A": True, "B": True}


def test_with_a_fixed_seed_a_step_is_the_simulators_evaluation(market):
    env = discrete(market, eval_seed=3, reward_scale=None)
    grid = env.grid
    env.reset(seed=0)
    rewards = env.step({"A": 1, "B": 3})[1]
    res = evcs_gym.EVCSRewardEvaluator(market).evaluate(grid.profile(grid.index([1, 3])), seed=3)
    assert rewards == res.rewards


def test_the_repeated_game_observes_the_prices_played(market):
    env = HistoryWrapper(discrete(market), rounds=2, include_flows=False, agent_id=False)
    env.reset(seed=0)
    obs = env.step({"A": 0, "B": M - 1})[0]
    low, high = market.price_bounds["A"]
    grid = env.env.grid
    expected = (np.concatenate([grid.prices[0, 0], grid.prices[1, M - 1]]) - low) / (high - low)
    np.testing.assert_allclose(obs["A"], expected.astype(np.float32), rtol=1e-6)


def test_user_grid(market):
    grid = {"A": [[1.0] * 4, [1.5] * 4], "B": [[1.2] * 4, [2.0] * 4]}
    env = DiscretePrices(evcs_gym.parallel_env(scenario=market), grid)
    assert env.action_space("A").n == 2 and env.grid.t is None
    assert env.to_env_actions({"A": 1, "B": 0})["A"].tolist() == [1.5] * 4


@pytest.mark.parametrize("view", ["best_response", "joint"])
def test_gymnasium_check_env(market, view):
    game = HistoryWrapper(discrete(market), rounds=2)
    env = SingleAgentView(game, agent="A") if view == "best_response" else SingleAgentView(game)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)
    if view == "joint":
        assert env.action_space.nvec.tolist() == [M, M]
    else:
        assert env.opponent_prices["B"] == M // 2


def test_vector_env_equals_serial_stepping(market):
    with evcs_gym.ParallelEvaluatorPool(market, n_workers=2) as pool:
        venv = make_vector_env(2, scenario=market, rounds=2, discrete=M, pool=pool)
        envs = [HistoryWrapper(discrete(market), rounds=2) for _ in range(2)]
        venv.reset(seed=5)
        for i, env in enumerate(envs):
            env.reset(seed=5 + i)
        assert venv.action_space("A").n == M
        for step in range(3):
            actions = {"A": np.array([step, M - 1]), "B": np.array([1.0, 2.0])}  # floats: integral
            obs_v, rew_v, _, trunc_v, info_v = venv.step(actions)
            for i, env in enumerate(envs):
                o, r, te, tr, inf = env.step({a: int(actions[a][i]) for a in env.possible_agents})
                for a in env.possible_agents:
                    assert rew_v[a][i] == r[a] and trunc_v[a][i] == tr[a]
                    got = {k: v for k, v in info_v[i][a].items() if k != "final_observation"}
                    assert data_equivalence(got, inf[a], exact=True)
                if all(tr.values()):
                    env.reset()
        with pytest.raises(ValueError, match="not integer levels"):
            venv.step({"A": np.array([0.5, 1.0]), "B": np.array([1, 1])})
        venv.close()


@pytest.mark.parametrize("action", [-1, M, 1.5, "1", [1], None])
def test_bad_levels_raise(market, action):
    env = discrete(market)
    env.reset(seed=0)
    with pytest.raises(
        ValueError, match=r"action of agent 'A' must be an integer level in \[0, 5\)"
    ):
        env.step({"A": action, "B": 0})


def test_bad_arguments(market, tiny):
    with pytest.raises(ValueError, match="ships no Nash and collusive references"):
        DiscretePrices(evcs_gym.parallel_env(scenario=tiny))
    with pytest.raises(ValueError, match="every station"):
        DiscretePrices(evcs_gym.parallel_env(scenario=market), {"A": [[1.0] * 4]})
    with pytest.raises(ValueError, match="cannot be rescaled"):
        make_vector_env(2, scenario=market, discrete=3, rescale_actions=True)
    with pytest.raises(TypeError, match="needs an EVCSPricingParallelEnv"):
        DiscretePrices(object())
