"""RLlib adapter: env creator, RLlib's env checks, multi-agent configs, training, prices.

Runs in ``nox -s rllib`` (ray[rllib] 2.60.0, gymnasium 1.2.2); skipped where RLlib is
not installed (the core environment has Ray without RLlib's dependencies).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

import ray  # noqa: E402
from gymnasium import spaces  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv  # noqa: E402
from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402

from evcs_gym.integrations import rllib as adapter  # noqa: E402

PRICES = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5] * 4}


@pytest.fixture(scope="module")
def ray_session():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


def test_env_creator_passes_rllib_env_check():
    env = adapter.rllib_env_creator({"scenario": "tiny"})
    assert isinstance(env, MultiAgentEnv)
    check_multiagent_environments(env)  # RLlib's own check: reset(seed=42), a sampled step


def test_env_creator_spaces_agent_order_and_infos():
    env = adapter.rllib_env_creator({"scenario": "tiny", "eval_seed": 0})
    assert env.possible_agents == env.agents == ["A", "B"]
    assert list(env.observation_space.keys()) == ["A", "B"]
    assert env.get_observation_space("A") == spaces.Box(0.0, 1.0, (4,), np.float32)
    assert env.get_action_space("B") == spaces.Box(0.5, 2.0, (4,), np.float32)
    obs, infos = env.reset(seed=0)
    assert set(obs) == {"A", "B"} and env.observation_space.contains(obs)
    obs, rewards, terms, truncs, infos = env.step(PRICES)
    assert terms == {"A": True, "B": True, "__all__": True}
    assert truncs == {"A": False, "B": False, "__all__": False}
    np.testing.assert_allclose(infos["A"]["prices"], PRICES["A"])
    assert rewards["B"] == pytest.approx(infos["B"]["reward_raw"] / 2000.0)
    assert env.agents == ["A", "B"]  # stays full: RLlib reads it after the last step


def test_agent_order_is_the_scenarios_not_a_sets():
    base = adapter.make_env({"scenario": "tiny"})
    base.possible_agents = ["B", "A"]  # an order no sorted set would give
    env = adapter._env_class()(base)
    assert env.possible_agents == env.agents == ["B", "A"]


def test_render_takes_no_mode_argument():
    env = adapter.rllib_env_creator({"scenario": "tiny", "render_mode": "rgb_array"})
    env.reset(seed=0)
    env.step(PRICES)
    frame = env.render()  # RLlib's own wrapper calls render(self.render_mode): TypeError
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8


def test_env_config_rounds_gives_the_repeated_game():
    env = adapter.rllib_env_creator({"scenario": "tiny", "rounds": 2, "k": 1})
    assert env.get_observation_space("A").shape == (14,)
    check_multiagent_environments(env)
    env.reset(seed=0)
    _, _, terms, truncs, _ = env.step(PRICES)
    assert not truncs["__all__"] and not terms["__all__"]
    _, _, terms, truncs, _ = env.step(PRICES)
    assert truncs["__all__"] and not terms["__all__"]
    with pytest.raises(ValueError, match="no `rounds`"):
        adapter.make_env({"scenario": "tiny", "k": 2})


def test_policy_mapping_functions():
    assert adapter.same_module("10", None) == "10"
    assert adapter.shared_module("10", None) == adapter.shared_module("3") == "shared"
    config = adapter.ppo_config("tiny", shared_policy=True)
    assert set(config.policies) == {"shared"}
    assert config.policy_mapping_fn("A", None) == "shared"


def test_configs_are_sized_for_a_simulation_per_step():
    ppo = adapter.ppo_config("tiny")
    assert set(ppo.policies) == {"A", "B"} and ppo.policy_mapping_fn("B", None) == "B"
    assert ppo.train_batch_size_per_learner == 64 and ppo.sample_timeout_s is None
    assert ppo.num_env_runners == 0 and ppo.env_config == {"scenario": "tiny"}
    sac = adapter.sac_config("tiny", env_config={"eval_seed": 3})
    assert sac.n_step == 1 and sac.num_steps_sampled_before_learning_starts == 32
    assert sac.replay_buffer_config["type"] == "MultiAgentEpisodeReplayBuffer"
    assert sac.env_config == {"scenario": "tiny", "eval_seed": 3}
    with pytest.raises(ValueError, match="minibatch_size"):
        adapter.ppo_config("tiny", train_batch_size=8, minibatch_size=16)
    with pytest.raises(ValueError, match="num_env_runners"):
        adapter.sac_config("tiny", num_env_runners=-1)
    with pytest.raises(ValueError, match="evaluations"):
        adapter.train_until(None, 0)


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_short_training_and_learned_prices(ray_session, algo):
    if algo == "ppo":
        config = adapter.ppo_config("tiny", train_batch_size=4, minibatch_size=4, num_epochs=1)
    else:
        config = adapter.sac_config(
            "tiny", train_batch_size=4, learning_starts=4, steps_per_iteration=4
        )
    built = config.build_algo()
    try:
        result = adapter.train_until(built, 8)
        assert result["num_env_steps_sampled_lifetime"] == 8
        assert result["training_iteration"] == 2
        assert {"A", "B"} <= set(result["learners"])  # each station's module was updated
        prices = adapter.learned_prices(built)
        assert set(prices) == {"A", "B"}
        for p in prices.values():
            assert p.shape == (4,) and p.dtype == np.float64
            assert np.all((p >= 0.5) & (p <= 2.0))
        # RLlib's own deterministic path (explore=False) sends the same prices to the env
        episode = built.env_runner.sample(num_episodes=1, explore=False)[0]
        for a in ("A", "B"):
            sent = episode.agent_episodes[a].get_infos(-1)["prices"]
            np.testing.assert_allclose(prices[a], sent, rtol=1e-6)
    finally:
        built.stop()


def test_learned_prices_of_the_repeated_game_need_observations(ray_session):
    config = adapter.ppo_config(
        "tiny", env_config={"rounds": 2}, train_batch_size=4, minibatch_size=4, num_epochs=1
    )
    built = config.build_algo()
    try:
        with pytest.raises(ValueError, match="pass `observations`"):
            adapter.learned_prices(built)
        obs, _ = adapter.rllib_env_creator(config.env_config).reset(seed=0)
        prices = adapter.learned_prices(built, obs)
        assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in prices.values())
    finally:
        built.stop()


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_example_runs_at_smoke_budget(ray_session, load_script, capsys, monkeypatch, algo):
    monkeypatch.setenv("EVCS_GYM_SMOKE", "1")
    out = load_script("examples", "rllib_pricing").main(["--algo", algo, "--budget", "9999"])
    assert 16 <= out["evaluations"] <= 32  # the smoke budget wins
    assert set(out["prices"]) == {"A", "B"}
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in out["prices"].values())
    assert out["relative_nash_conv"] >= 0 and np.isfinite(out["relative_nash_conv_se"])
    printed = capsys.readouterr().out
    assert "verified NashConv:" in printed and "2 seeds" in printed
