"""The one-step PettingZoo game (evcs_gym.envs.parallel_env): API checkers, seeding, rewards,
infos, bad actions, pickling."""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import evcs_gym
from evcs_gym.envs import EVCSPricingParallelEnv
from tests.helpers import ENV_PRICES as PRICES


@pytest.fixture
def env(tiny):
    return evcs_gym.parallel_env(scenario=tiny)


def test_parallel_api(tiny):
    parallel_api_test(evcs_gym.parallel_env(scenario=tiny), num_cycles=5)


def test_parallel_seed(tiny):
    parallel_seed_test(lambda: evcs_gym.parallel_env(scenario=tiny))


def test_metadata_spaces_and_constant_observation(env, tiny):
    assert env.metadata["name"] == "evcs_pricing_v0"
    assert env.metadata["is_parallelizable"] is True
    assert env.metadata["render_modes"] == ["human", "rgb_array"]
    assert env.possible_agents == ["A", "B"]
    assert env.action_space("A") is env.action_space("A")
    assert env.observation_space("B") is env.observation_space("B")
    box = env.action_space("A")
    assert box.shape == (tiny.n_periods,) and box.dtype == np.float32
    assert box.low.tolist() == [0.5] * 4 and box.high.tolist() == [2.0] * 4
    obs, infos = env.reset(seed=0)
    # one-hot id, own low / max high, own high / max high
    assert obs["A"].tolist() == [1.0, 0.0, 0.25, 1.0]
    assert obs["B"].tolist() == [0.0, 1.0, 0.25, 1.0]
    assert infos == {"A": {}, "B": {}}
    obs2, *_ = env.step(PRICES)
    assert all(np.array_equal(obs[a], obs2[a]) for a in env.possible_agents)
    assert env.state().tolist() == [0.25, 0.25, 1.0, 1.0]
    assert env.state_space.contains(env.state())


def test_step_rewards_and_infos(env, tiny):
    env.reset(seed=0)
    obs, rewards, terms, truncs, infos = env.step(PRICES)
    assert terms == {"A": True, "B": True} and truncs == {"A": False, "B": False}
    assert env.agents == []
    res = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(PRICES, seed=infos["A"]["eval_seed"])
    for a in env.possible_agents:
        info = infos[a]
        assert rewards[a] == res.rewards[a] / tiny.settings.reward_scale
        assert info["reward_raw"] == res.rewards[a] and info["revenue"] == res.revenues[a]
        assert np.array_equal(info["flows"], res.flows[a])
        assert np.array_equal(info["prices"], np.asarray(PRICES[a]))
        assert info["action_clipped"] is False
        assert info["converged"] == res.converged
        assert info["ue_iterations"] == res.ue_iterations
        assert info["ue_stats"]["relative_gap"] == res.ue_stats["relative_gap"]


@pytest.mark.parametrize(("scale", "divisor"), [(None, 1.0), (4.0, 4.0), ("scenario", 2000.0)])
def test_reward_scale(tiny, scale, divisor):
    env = evcs_gym.parallel_env(scenario=tiny, reward_scale=scale, eval_seed=3)
    env.reset()
    _, rewards, _, _, infos = env.step(PRICES)
    assert rewards["A"] == infos["A"]["reward_raw"] / divisor


@pytest.mark.parametrize("bad", ["scale", 0.0, -1.0, float("nan"), True])
def test_bad_reward_scale(tiny, bad):
    with pytest.raises(ValueError, match="reward_scale"):
        evcs_gym.parallel_env(scenario=tiny, reward_scale=bad)


def test_seeding_stream(tiny):
    def seeds(env, pattern):
        out = []
        for s in pattern:
            env.reset(seed=s)
            out.append(env.step(PRICES)[4]["A"]["eval_seed"])
        return out

    a = seeds(evcs_gym.parallel_env(scenario=tiny), [7, None, None])
    b = seeds(evcs_gym.parallel_env(scenario=tiny), [7, None, None])
    assert a == b
    assert len(set(a)) == 3  # reset() without a seed continues the stream
    c = seeds(evcs_gym.parallel_env(scenario=tiny), [8])
    assert c[0] != a[0]
    fixed = seeds(evcs_gym.parallel_env(scenario=tiny, eval_seed=5), [1, 2])
    assert fixed == [5, 5]


def test_same_seed_rollouts_identical(tiny):
    def rollout(env):
        out = []
        env.reset(seed=11)
        rng = np.random.default_rng(0)
        for _ in range(3):
            acts = {a: rng.uniform(0.5, 2.0, 4) for a in env.possible_agents}
            out.append(env.step(acts))
            env.reset()
        return out

    a = rollout(evcs_gym.parallel_env(scenario=tiny))
    b = rollout(evcs_gym.parallel_env(scenario=tiny))
    for (o1, r1, _, _, i1), (_, r2, _, _, i2) in zip(a, b):
        assert r1 == r2
        for ag in o1:
            assert np.array_equal(i1[ag]["flows"], i2[ag]["flows"])
            assert i1[ag]["eval_seed"] == i2[ag]["eval_seed"]


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (
            {"A": [1.0, np.nan, 1.0, 1.0], "B": [1.0] * 4},
            r"agent 'A'.*non-finite price nan.*period 1",
        ),
        ({"A": [1.0] * 4, "B": [1.0, 1.0, np.inf, 1.0]}, r"agent 'B'.*non-finite price inf"),
        ({"A": [1.0] * 3, "B": [1.0] * 4}, r"agent 'A' must have shape \(4,\).*got shape \(3,\)"),
        ({"A": [[1.0] * 4], "B": [1.0] * 4}, r"agent 'A' must have shape \(4,\)"),
        ({"A": [1.0] * 4}, r"missing agent\(s\) \['B'\]"),
        ({"A": [1.0] * 4, "B": [1.0] * 4, "C": [1.0] * 4}, r"unknown agent\(s\) \['C'\]"),
        ({"A": ["x"] * 4, "B": [1.0] * 4}, r"agent 'A' is not numeric"),
        ([1.0] * 8, r"must be a dict"),
    ],
)
def test_bad_actions_raise(env, actions, match):
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step(actions)
    assert env.agents == ["A", "B"]  # nothing happened: the episode goes on


def test_clipping(tiny):
    env = evcs_gym.parallel_env(scenario=tiny)
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"A": [0.0, 3.0, 1.0, 1.0], "B": [1.0] * 4})
    assert infos["A"]["prices"].tolist() == [0.5, 2.0, 1.0, 1.0]
    assert infos["A"]["action_clipped"] is True and infos["B"]["action_clipped"] is False
    strict = evcs_gym.parallel_env(scenario=tiny, clip_actions=False)
    strict.reset(seed=0)
    with pytest.raises(evcs_gym.PriceError, match=r"prices\['A'\] period 1 = 3.0 is outside"):
        strict.step({"A": [1.0, 3.0, 1.0, 1.0], "B": [1.0] * 4})


def test_step_without_episode_raises(env):
    with pytest.raises(RuntimeError, match="reset"):
        env.step(PRICES)
    env.reset(seed=0)
    env.step(PRICES)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(PRICES)


def test_two_phase_step_equals_step(tiny):
    a = evcs_gym.parallel_env(scenario=tiny)
    b = evcs_gym.parallel_env(scenario=tiny)
    a.reset(seed=4)
    b.reset(seed=4)
    pending = b.begin_step(PRICES)
    result = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(pending.prices, seed=pending.seed)
    _, r1, _, _, i1 = a.step(PRICES)
    _, r2, _, _, i2 = b.end_step(pending, result)
    assert r1 == r2 and i1["A"]["eval_seed"] == i2["A"]["eval_seed"]


def test_injected_evaluator(tiny):
    class Counting:
        agent_names = tiny.agent_names

        def __init__(self):
            self.inner = evcs_gym.EVCSRewardEvaluator(tiny)
            self.calls = 0

        def evaluate(self, prices, seed=None):
            self.calls += 1
            return self.inner.evaluate(prices, seed)

    ev = Counting()
    env = evcs_gym.parallel_env(scenario=tiny, evaluator=ev)
    env.reset(seed=0)
    env.step(PRICES)
    assert ev.calls == 1 and env.evaluator is ev
    with pytest.raises(TypeError, match="evaluate"):
        evcs_gym.parallel_env(scenario=tiny, evaluator=object())


def test_pickle_mid_episode_continues_identically(tiny):
    env = evcs_gym.parallel_env(scenario=tiny)
    env.reset(seed=2)
    env.step(PRICES)
    env.reset()
    copies = [pickle.loads(pickle.dumps(env)), cloudpickle.loads(cloudpickle.dumps(env))]
    expected = env.begin_step(PRICES).seed  # the generator state travels with the copies
    for copy in copies:
        assert isinstance(copy, EVCSPricingParallelEnv) and copy.agents == ["A", "B"]
        assert copy.begin_step(PRICES).seed == expected


def test_scenario_argument_forms(tiny):
    by_name = evcs_gym.parallel_env(scenario="tiny").network
    # the name loads the bundled scenario through load_scenario's cache (an LRU: other
    # tests' loads may have evicted the session fixture's object, never this one's)
    assert by_name is evcs_gym.load_scenario("tiny")
    assert by_name.settings == tiny.settings and by_name.agent_names == tiny.agent_names
    with pytest.raises(TypeError, match="scenario"):
        evcs_gym.parallel_env(scenario=3)
    with pytest.raises(ValueError, match="scenario_overrides"):
        evcs_gym.parallel_env(scenario=tiny, scenario_overrides={"deltan": 10})
    with pytest.raises(ValueError, match="eval_seed"):
        evcs_gym.parallel_env(scenario=tiny, eval_seed=-1)


@pytest.mark.siouxfalls
@pytest.mark.slow  # the default run checks Sioux Falls capped (test_checkers_siouxfalls.py)
def test_parallel_api_siouxfalls(siouxfalls):
    env = evcs_gym.parallel_env(scenario=siouxfalls)
    parallel_api_test(env, num_cycles=1)
    assert env.possible_agents == list(siouxfalls.agent_names)
    assert env.action_space("10").shape == (8,)
