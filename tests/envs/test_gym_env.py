"""``EVCSPricing-v0`` (evcs_gym.envs.gym_env): checkers, joint and best-response views,
repeated games, seeding and pickling, vectorisation."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.helpers import make_gym_env as make

VIEWS = {
    "joint": {},
    "best_response": {"agent": "A", "opponent_prices": {"B": [1.2] * 4}},
    "joint_history": {"rounds": 3, "history": {"k": 2, "ema": 0.5}},
    "best_response_history": {"agent": "B", "rounds": 3, "history": {"include_round": True}},
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_gymnasium_check_env(view):
    env = make(**VIEWS[view])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-normalised Box / no display for "human"
        check_env(env.unwrapped)


@pytest.mark.parametrize("view", ["joint", "best_response_history"])
def test_sb3_check_env(view):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sb3_check_env(make(**VIEWS[view]))


def test_joint_view_layout_and_reward(tiny):
    env = make(reward_scale=None)
    assert env.action_space.shape == (8,)
    assert env.observation_space.shape == (4,)
    env.reset(seed=0)
    action = np.array([1.0, 1.1, 1.2, 1.3, 1.5, 1.6, 1.7, 1.8], dtype=np.float32)
    obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and not truncated
    agents = info["agents"]
    assert np.allclose(agents["A"]["prices"], action[:4]) and np.allclose(
        agents["B"]["prices"], action[4:]
    )
    assert reward == pytest.approx(sum(info["rewards"].values()))
    assert info["total_revenue"] == pytest.approx(sum(a["revenue"] for a in agents.values()))
    with pytest.raises(ValueError, match=r"joint action must have shape \(8,\)"):
        env.reset()
        env.step(np.ones(4))


def test_best_response_fixed_opponents():
    env = make(agent="A", opponent_prices={"B": [1.2, 1.3, 1.4, 1.5]})
    assert env.action_space.shape == (4,) and env.observation_space.shape == (4,)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(np.full(4, 1.0, dtype=np.float32))
    assert terminated and reward == info["rewards"]["A"]
    assert info["opponent_actions"]["B"].tolist() == [1.2, 1.3, 1.4, 1.5]
    assert "flows" in info and "revenue" in info
    default = make(agent="B")  # opponents at the middle of their bounds
    default.reset(seed=0)
    assert default.step(np.ones(4))[4]["opponent_actions"]["A"].tolist() == [1.25] * 4


def test_best_response_opponent_policy_sees_history():
    seen = []

    def policy(observations):
        seen.append({a: o.copy() for a, o in observations.items()})
        return {"B": np.full(4, 2.0)}

    env = make(agent="A", opponent_policy=policy, rounds=2, history={"initial_prices": "mid"})
    env.reset(seed=0)
    env.step(np.full(4, 0.5))
    env.step(np.full(4, 0.5))
    assert list(seen[0]) == ["B"]
    assert seen[0]["B"][:8].tolist() == [0.5] * 8  # mid initial history
    assert seen[1]["B"][:8].tolist() == [0.0] * 4 + [1.0] * 4  # A at low, B at high


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"agent": "Z"}, ValueError, "`agent` must be one of"),
        ({"opponent_prices": {"B": [1.0] * 4}}, ValueError, "need a learning `agent`"),
        ({"agent": "A", "opponent_prices": {"C": [1.0] * 4}}, ValueError, "not opponents"),
        ({"agent": "A", "opponent_prices": {}}, ValueError, "missing opponent"),
        ({"agent": "A", "opponent_prices": {"B": [1.0] * 3}}, ValueError, "finite with shape"),
        (
            {"agent": "A", "opponent_prices": {"B": [1.0] * 4}, "opponent_policy": dict},
            ValueError,
            "not both",
        ),
        ({"history": {"k": 2}}, ValueError, "need `rounds`"),
        ({"rounds": 0}, ValueError, "`rounds` must be a positive integer"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)


def test_repeated_game_truncates_after_rounds():
    env = make(rounds=3)
    env.reset(seed=0)
    ends = [env.step(env.action_space.sample())[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]


def test_same_seed_same_results_and_pickle():
    a, b = make(agent="A", rounds=3), make(agent="A", rounds=3)
    a.reset(seed=5)
    b.reset(seed=5)
    acts = [np.full(4, p, dtype=np.float32) for p in (0.7, 1.3, 1.9)]
    ra = [a.step(x) for x in acts[:2]]
    rb = [b.step(x) for x in acts[:2]]
    clone = pickle.loads(pickle.dumps(b.unwrapped))  # mid-episode copy continues the game
    for x, y in zip(ra, rb):
        assert np.array_equal(x[0], y[0]) and x[1] == y[1]
    assert clone.step(acts[2])[1] == a.step(acts[2])[1] == b.step(acts[2])[1]


def test_gymnasium_async_vector_env():
    venv = gym.vector.AsyncVectorEnv(
        [lambda: make(agent="A", rounds=2) for _ in range(2)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    try:
        obs, _ = venv.reset(seed=0)
        assert obs.shape == (2, 14)
        for _ in range(2):
            obs, rewards, terms, truncs, infos = venv.step(venv.action_space.sample())
        assert rewards.shape == (2,) and truncs.tolist() == [True, True]
        assert "final_obs" in infos
    finally:
        venv.close()


def test_sb3_subproc_vec_env():
    import torch
    from stable_baselines3.common.vec_env import SubprocVecEnv

    torch.set_num_threads(1)
    venv = SubprocVecEnv([lambda: make(rounds=2) for _ in range(2)])
    try:
        venv.seed(0)
        obs = venv.reset()
        assert obs.shape == (2, 16)
        for _ in range(2):
            obs, rewards, dones, infos = venv.step(
                np.stack([venv.action_space.sample() for _ in range(2)])
            )
        assert dones.tolist() == [True, True] and "terminal_observation" in infos[0]
    finally:
        venv.close()


@pytest.mark.siouxfalls
@pytest.mark.slow  # the default run checks Sioux Falls capped (test_checkers_siouxfalls.py)
def test_check_env_siouxfalls(siouxfalls):
    env = gym.make("EVCSPricing-v0", scenario=siouxfalls, agent="10")
    assert env.action_space.shape == (8,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped, skip_render_check=True)
