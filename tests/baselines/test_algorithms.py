"""MADDPG / IDDPG / MFDDPG on the real MPE2 ``simple_spread_v3`` env (continuous actions).

Nothing here is EVCS-specific: the point is that the baselines work with any PettingZoo
ParallelEnv with Box observation and action spaces.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box, Discrete
from mpe2 import simple_spread_v3

from evcs_gym.baselines import (
    IDDPG,
    MADDPG,
    MFDDPG,
    Algorithm,
    IDDPGConfig,
    MADDPGConfig,
    MFDDPGConfig,
)

ALGOS = [MADDPG, IDDPG, MFDDPG]
CONFIGS = {MADDPG: MADDPGConfig, IDDPG: IDDPGConfig, MFDDPG: MFDDPGConfig}
AGENTS = ["agent_0", "agent_1", "agent_2"]
OBS_DIM, ACT_DIM = 18, 5


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # Tiny networks: intra-op threads only add overhead (and jitter on shared 2-core boxes).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_env():
    return simple_spread_v3.parallel_env(continuous_actions=True, N=3, max_cycles=25)


def make_algo(cls, **overrides):
    config = CONFIGS[cls](**{"batch_size": 32, "learning_starts": 32, **overrides})
    return cls.from_env(make_env(), config)


def rollout(algo, n_steps, seed=0, learn=True):
    """Plain single-env loop: returns (noisy actions taken, metrics of every learn call)."""
    env = make_env()
    obs, _ = env.reset(seed=seed)
    actions, metrics = [], []
    for _ in range(n_steps):
        act = algo.take_action(obs, add_noise=True)
        next_obs, rewards, terms, _, _ = env.step(act)
        algo.store_experience(obs, act, rewards, next_obs, terms)
        actions.append(act)
        if learn and (m := algo.learn()) is not None:
            metrics.append(m)
        obs = next_obs
        if not env.agents:
            obs, _ = env.reset()
    return actions, metrics


@pytest.fixture(scope="module")
def env_obs():
    obs, _ = make_env().reset(seed=3)
    return obs


@pytest.mark.parametrize("cls", ALGOS)
def test_protocol_spaces_and_shapes(cls, env_obs):
    algo = make_algo(cls)
    assert isinstance(algo, Algorithm)
    assert algo.agents == AGENTS and algo.name == cls.name
    act = algo.take_action(env_obs, add_noise=True)
    assert set(act) == set(AGENTS)
    assert all(a.shape == (ACT_DIM,) and a.dtype == np.float32 for a in act.values())
    pure = algo.get_pure_actions(env_obs)
    assert all(a.shape == (ACT_DIM,) for a in pure.values())
    batched = algo.get_pure_actions({a: np.stack([o, o]) for a, o in env_obs.items()})
    assert all(a.shape == (2, ACT_DIM) for a in batched.values())
    # equal up to float rounding (BLAS kernels differ with the batch size)
    np.testing.assert_allclose(batched["agent_1"][0], pure["agent_1"], atol=1e-6)
    # PettingZoo drops finished agents from the obs dict: acting for a subset must work.
    assert set(algo.take_action({"agent_2": env_obs["agent_2"]}, add_noise=False)) == {"agent_2"}
    # What the critic sees is the only difference between the three algorithms.
    expected_in = {MADDPG: 3 * (OBS_DIM + ACT_DIM), IDDPG: OBS_DIM + ACT_DIM}
    expected_in[MFDDPG] = OBS_DIM + 2 * ACT_DIM
    assert algo.critics["agent_0"].net[0].in_features == expected_in[cls]


@pytest.mark.parametrize("cls", ALGOS)
def test_actions_inside_bounds_for_extreme_observations(cls):
    algo = make_algo(cls, noise_std=0.5)
    rng = np.random.default_rng(0)
    extremes = np.concatenate(
        [
            np.full((1, OBS_DIM), 1e9),
            np.full((1, OBS_DIM), -1e9),
            np.zeros((1, OBS_DIM)),
            rng.choice([-1e6, 1e6], size=(8, OBS_DIM)),
            rng.standard_normal((8, OBS_DIM)) * 1e4,
        ]
    )
    obs = {a: extremes for a in AGENTS}
    for act in (algo.get_pure_actions(obs), algo.sample_actions_batch(obs)):
        for a in AGENTS:
            assert act[a].shape == (len(extremes), ACT_DIM)
            assert np.all(np.isfinite(act[a])) and np.all((act[a] >= 0) & (act[a] <= 1))


@pytest.mark.parametrize("gamma", [0.0, 0.95])
@pytest.mark.parametrize("cls", ALGOS)
def test_one_learn_lowers_critic_loss_on_that_batch(cls, gamma):
    algo = make_algo(cls, gamma=gamma, updates_per_learn=1)  # one gradient step
    rollout(algo, 80, learn=False)
    batch = algo.buffer.get(np.arange(64))
    before = algo.critic_losses(batch)
    metrics = algo.learn(batch)
    after = algo.critic_losses(batch)
    for a in AGENTS:
        assert metrics[f"critic_loss/{a}"] == pytest.approx(before[a], rel=1e-5)
        assert after[a] < before[a], (a, before[a], after[a])
        assert np.isfinite(metrics[f"actor_loss/{a}"])


@pytest.mark.parametrize("cls", ALGOS)
def test_target_networks_follow_by_soft_updates(cls):
    algo = make_algo(cls, tau=0.25, gamma=0.9, updates_per_learn=1)
    rollout(algo, 40, learn=False)
    nets = [(algo.target_critics, algo.critics), (algo.target_actors, algo.actors)]
    old = [[p.clone() for p in targets["agent_1"].parameters()] for targets, _ in nets]
    algo.learn()
    for (targets, online), before in zip(nets, old, strict=True):
        after, new = targets["agent_1"].parameters(), online["agent_1"].parameters()
        for b, t, o in zip(before, after, new, strict=True):
            torch.testing.assert_close(t, 0.75 * b + 0.25 * o)
            assert not torch.equal(t, b)


@pytest.mark.parametrize("cls", ALGOS)
def test_learn_waits_for_enough_samples(cls, env_obs):
    algo = make_algo(cls, batch_size=16, learning_starts=40)
    act = algo.take_action(env_obs, add_noise=True)
    rewards = {a: 0.0 for a in AGENTS}
    dones = {a: False for a in AGENTS}
    for _ in range(39):
        algo.store_experience(env_obs, act, rewards, env_obs, dones)
        assert algo.learn() is None
    algo.store_experience(env_obs, act, rewards, env_obs, dones)
    metrics = algo.learn()
    assert metrics is not None and algo.n_updates == algo.config.updates_per_learn
    for a in AGENTS:
        assert {f"critic_loss/{a}", f"actor_loss/{a}", f"noise_std/{a}"} <= set(metrics)


@pytest.mark.parametrize("cls", ALGOS)
def test_save_load_round_trip(cls, env_obs, tmp_path):
    algo = make_algo(cls)
    rollout(algo, 60)
    path = tmp_path / "ckpt.pt"
    algo.save(path)
    state = torch.load(path, weights_only=True)  # loadable safely, config is plain data
    assert state["algorithm"] == cls.name and state["config"]["batch_size"] == 32

    other = make_algo(cls, seed=123)
    before = other.get_pure_actions(env_obs)
    assert not np.array_equal(before["agent_0"], algo.get_pure_actions(env_obs)["agent_0"])
    other.load(path)
    for a in AGENTS:
        np.testing.assert_array_equal(
            other.get_pure_actions(env_obs)[a], algo.get_pure_actions(env_obs)[a]
        )
        assert other.noise[a].std == algo.noise[a].std < algo.config.noise_std
        for p, q in zip(
            other.target_critics[a].parameters(), algo.target_critics[a].parameters(), strict=True
        ):
            assert torch.equal(p, q)
    obs_spaces, act_spaces = _spaces()
    rebuilt = cls.from_checkpoint(path, obs_spaces, act_spaces)
    np.testing.assert_array_equal(
        rebuilt.get_pure_actions(env_obs)["agent_2"], algo.get_pure_actions(env_obs)["agent_2"]
    )
    wrong = next(c for c in ALGOS if c is not cls)
    with pytest.raises(ValueError, match="checkpoint is for"):
        make_algo(wrong).load(path)


def _spaces():
    env = make_env()
    return (
        {a: env.observation_space(a) for a in AGENTS},
        {a: env.action_space(a) for a in AGENTS},
    )


@pytest.mark.parametrize("cls", ALGOS)
def test_seeding_is_reproducible(cls):
    acts1, metrics1 = rollout(make_algo(cls, seed=7), 45)
    acts2, metrics2 = rollout(make_algo(cls, seed=7), 45)
    acts3, metrics3 = rollout(make_algo(cls, seed=8), 45)
    assert len(metrics1) == 45 - 32 + 1
    for x, y in zip(acts1, acts2, strict=True):
        for a in AGENTS:
            np.testing.assert_array_equal(x[a], y[a])
    assert metrics1 == metrics2
    assert not np.array_equal(acts1[0]["agent_0"], acts3[0]["agent_0"])
    assert metrics1[-1]["critic_loss/agent_0"] != metrics3[-1]["critic_loss/agent_0"]


@pytest.mark.parametrize("cls", ALGOS)
def test_no_global_rng_state_is_touched(cls):
    torch.manual_seed(99)
    np.random.seed(99)
    torch_state, np_state = torch.random.get_rng_state(), np.random.get_state()[1].copy()
    rollout(make_algo(cls, seed=None), 40)  # also with fresh OS entropy instead of a seed
    rollout(make_algo(cls), 40)
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)


@pytest.mark.parametrize(
    ("field", "agent", "bad", "match"),
    [
        ("obs", "agent_1", "nan", r"obs\['agent_1'\]: contains NaN or inf"),
        ("rewards", "agent_2", "inf", r"rewards\['agent_2'\]: contains NaN or inf"),
        ("actions", "agent_2", "shape", r"actions\['agent_2'\]: expected shape \(5,\)"),
        ("next_obs", "agent_0", "shape", r"next_obs\['agent_0'\]: expected shape \(18,\)"),
        ("dones", "agent_9", "unknown", r"dones: unknown agent 'agent_9'"),
        ("actions", "agent_0", "missing", r"actions: missing agent 'agent_0'"),
        ("actions", "agent_1", "bounds", r"actions\['agent_1'\]: values outside"),
    ],
)
@pytest.mark.parametrize("cls", ALGOS)
def test_store_experience_rejects_bad_input(cls, field, agent, bad, match):
    algo = make_algo(cls)
    n = 4
    rng = np.random.default_rng(0)
    data = {
        "obs": {a: rng.standard_normal((n, OBS_DIM)) for a in AGENTS},
        "actions": {a: rng.uniform(0, 1, (n, ACT_DIM)) for a in AGENTS},
        "rewards": {a: rng.standard_normal(n) for a in AGENTS},
        "next_obs": {a: rng.standard_normal((n, OBS_DIM)) for a in AGENTS},
        "dones": {a: np.zeros(n, bool) for a in AGENTS},
    }
    algo.store_experience(**data)
    assert len(algo.buffer) == n
    if bad == "nan":
        data[field][agent][1, 3] = np.nan
    elif bad == "inf":
        data[field][agent][2] = -np.inf
    elif bad == "shape":
        data[field][agent] = data[field][agent][:, :-1]
    elif bad == "unknown":
        data[field][agent] = np.zeros(n)
    elif bad == "missing":
        del data[field][agent]
    elif bad == "bounds":
        data[field][agent][0, 0] = 1.5
    with pytest.raises(ValueError, match=match):
        algo.store_experience(**data)
    assert len(algo.buffer) == n  # nothing partial was stored


@pytest.mark.parametrize("cls", ALGOS)
def test_sample_actions_batch_independent_noise_within_bounds(cls, env_obs):
    algo = make_algo(cls, noise_std=0.02, noise_min=0.0, random_warmup=0)
    pure = algo.get_pure_actions(env_obs)
    acts = algo.sample_actions_batch(env_obs, batch_size=2000)  # one obs, 2000 noisy copies
    for a in AGENTS:
        x = acts[a]
        assert x.shape == (2000, ACT_DIM) and x.dtype == np.float32
        assert np.all((x >= 0) & (x <= 1))
        assert len(np.unique(x, axis=0)) == 2000  # every row drew its own noise
        inside = (pure[a] > 0.1) & (pure[a] < 0.9)  # columns not affected by clipping
        dev = x[:, inside] - pure[a][inside]
        np.testing.assert_allclose(dev.std(0), 0.02, rtol=0.1)
        np.testing.assert_allclose(dev.mean(0), 0.0, atol=0.003)
    vec_obs = {a: np.stack([o, 2 * o, 3 * o]) for a, o in env_obs.items()}  # num_envs = 3
    assert algo.sample_actions_batch(vec_obs)["agent_0"].shape == (3, ACT_DIM)
    with pytest.raises(ValueError, match="batch size 3 does not match batch_size=4"):
        algo.sample_actions_batch(vec_obs, batch_size=4)
    with pytest.raises(ValueError, match=r"obs\['agent_0'\]: contains NaN"):
        algo.sample_actions_batch({"agent_0": np.full(OBS_DIM, np.nan)})


@pytest.mark.parametrize("cls", ALGOS)
def test_random_warmup_explores_the_whole_box_then_follows_the_policy(cls, env_obs):
    algo = make_algo(cls, random_warmup=6, noise_std=0.01, noise_min=0.0)
    pure = algo.get_pure_actions(env_obs)
    wide = algo.sample_actions_batch(env_obs, batch_size=4000)["agent_0"]  # buffer empty
    assert wide.min() < 0.01 and wide.max() > 0.99  # uniform on [0, 1], not around pure
    np.testing.assert_allclose(wide.mean(0), 0.5, atol=0.02)
    assert np.array_equal(algo.get_pure_actions(env_obs)["agent_0"], pure["agent_0"])
    rollout(algo, 6, learn=False)  # the buffer now holds random_warmup rows
    near = algo.sample_actions_batch(env_obs, batch_size=4000)["agent_0"]
    assert np.abs(near - pure["agent_0"]).max() < 0.1  # the policy plus 1 % noise
    same = make_algo(cls, random_warmup=6, noise_std=0.01, noise_min=0.0)
    assert np.array_equal(same.sample_actions_batch(env_obs, batch_size=4000)["agent_0"], wide)
    with pytest.raises(ValueError, match="random_warmup=-1"):
        CONFIGS[cls](random_warmup=-1)


@pytest.mark.parametrize("cls", ALGOS)
def test_reset_noise_restores_initial_std(cls):
    algo = make_algo(cls, noise_std=0.3, noise_decay=0.9, noise_min=0.05)
    rollout(algo, 40)
    assert all(algo.noise[a].std < 0.3 for a in AGENTS)
    algo.reset_noise()
    assert all(algo.noise[a].std == 0.3 for a in AGENTS)


@pytest.mark.parametrize("cls", ALGOS)
def test_critics_are_differentiable_in_own_action(cls):
    algo = make_algo(cls)
    rollout(algo, 40)
    torch.manual_seed(0)
    obs = {a: torch.randn(6, OBS_DIM) for a in AGENTS}
    acts = {a: torch.rand(6, ACT_DIM, requires_grad=True) for a in AGENTS}
    critics = algo.get_critics()
    assert set(critics) == set(AGENTS)
    q = critics["agent_0"](obs, acts)
    assert q.shape == (6,)
    grads = torch.autograd.grad(q.sum(), list(acts.values()), allow_unused=True)
    own, others = grads[0], grads[1:]
    assert own is not None and own.abs().sum() > 0
    depends_on_others = all(g is not None and g.abs().sum() > 0 for g in others)
    assert depends_on_others == (cls is not IDDPG)
    if cls is IDDPG:  # the independent critic needs nothing but its own agent
        own_only = critics["agent_0"]({"agent_0": obs["agent_0"]}, {"agent_0": acts["agent_0"]})
        torch.testing.assert_close(own_only, q)
    if cls is MFDDPG:  # only the mean of the others' actions matters
        swapped = dict(acts, agent_1=acts["agent_2"], agent_2=acts["agent_1"])
        torch.testing.assert_close(critics["agent_0"](obs, swapped), q)


def test_mean_field_with_heterogeneous_action_spaces():
    obs_spaces = {k: Box(-1, 1, (2,)) for k in "abc"}
    act_spaces = {"a": Box(0, 1, (1,)), "b": Box(-10, 10, (3,)), "c": Box(5, 6, (2,))}
    algo = MFDDPG(obs_spaces, act_spaces)
    assert algo.critics["a"].net[0].in_features == 2 + 1 + 3
    obs = {k: torch.zeros(1, 2) for k in "abc"}
    raw = {
        "a": torch.zeros(1, 1),  # -> -1
        "b": torch.tensor([[10.0, -10.0, 0.0]]),  # -> [1, -1, 0]
        "c": torch.tensor([[6.0, 5.0]]),  # -> [1, -1], zero-padded to [1, -1, 0]
    }
    expected_input = torch.tensor([[0.0, 0.0, -1.0, 1.0, -1.0, 0.0]])
    q = algo.get_critics()["a"](obs, raw)
    torch.testing.assert_close(q, algo.critics["a"](expected_input))


def test_invalid_spaces_are_rejected():
    obs = {"a": Box(-1, 1, (2,))}
    with pytest.raises(TypeError, match="action space of agent 'a' must be a gymnasium Box"):
        MADDPG(obs, {"a": Discrete(3)})
    with pytest.raises(ValueError, match="finite bounds"):
        MADDPG(obs, {"a": Box(-np.inf, np.inf, (2,))})
    with pytest.raises(ValueError, match="action spaces are for"):
        MADDPG(obs, {"b": Box(0, 1, (1,))})
    with pytest.raises(ValueError, match="invalid tau"):
        MADDPGConfig(tau=2.0)


def test_maddpg_trains_end_to_end_on_mpe2_simple_spread():
    """~300 env steps through a hand-written loop: the generic API works end to end."""
    env = make_env()
    algo = MADDPG.from_env(env, MADDPGConfig(batch_size=32, learning_starts=64, seed=1))
    obs, _ = env.reset(seed=1)
    probe = {a: o.copy() for a, o in obs.items()}
    initial = algo.get_pure_actions(probe)
    metrics, episodes = [], 0
    for _ in range(300):
        actions = algo.take_action(obs, add_noise=True)
        next_obs, rewards, terminations, truncations, _ = env.step(actions)
        algo.store_experience(obs, actions, rewards, next_obs, terminations)
        if (m := algo.learn()) is not None:
            metrics.append(m)
        obs = next_obs
        if not env.agents:
            episodes += 1
            obs, _ = env.reset()
    assert episodes == 12 and len(algo.buffer) == 300
    assert len(metrics) == 300 - 64 + 1 == algo.n_updates // algo.config.updates_per_learn
    assert all(np.isfinite(v) for m in metrics for v in m.values())
    early = np.mean([m["critic_loss/agent_0"] for m in metrics[:20]])
    late = np.mean([m["critic_loss/agent_0"] for m in metrics[-20:]])
    assert late < early  # the centralised critic fits the rewards
    final = algo.get_pure_actions(probe)
    assert not np.allclose(final["agent_0"], initial["agent_0"])


@pytest.mark.parametrize("cls", ALGOS)
def test_actors_climb_their_critics_in_a_stage_game(cls):
    """Known optimum: r_i = -|a_i - t_i|^2. Vector-env style API with 8 copies per step."""
    agents = ("p", "q")
    obs_spaces = {a: Box(-1.0, 1.0, (3,)) for a in agents}
    act_spaces = {a: Box(0.0, 1.0, (2,)) for a in agents}
    target = {"p": np.array([0.9, 0.15]), "q": np.array([0.2, 0.8])}
    config = CONFIGS[cls](batch_size=32, learning_starts=32, noise_std=0.2, seed=0)
    algo = cls(obs_spaces, act_spaces, config)
    rng = np.random.default_rng(0)
    probe = {a: rng.uniform(-1, 1, (16, 3)) for a in agents}

    def distance():
        pure = algo.get_pure_actions(probe)
        return {a: float(np.abs(pure[a] - target[a]).mean()) for a in agents}

    initial = distance()
    for _ in range(200):
        obs = {a: rng.uniform(-1, 1, (8, 3)) for a in agents}
        act = algo.sample_actions_batch(obs)
        rewards = {a: -np.sum((act[a] - target[a]) ** 2, axis=1) for a in agents}
        algo.store_experience(obs, act, rewards, obs, {a: np.zeros(8, bool) for a in agents})
        algo.learn()
    final = distance()
    assert all(final[a] < initial[a] for a in agents), (initial, final)
    assert sum(final.values()) < 0.5 * sum(initial.values()), (initial, final)


@pytest.mark.parametrize("cls", ALGOS)
def test_an_additive_critic_learns_and_round_trips_through_a_checkpoint(cls, env_obs, tmp_path):
    algo = make_algo(cls, critic_structure="additive")
    rollout(algo, 40)
    assert type(algo.critics["agent_0"]).__name__ == "AdditiveCritic"
    path = tmp_path / "ckpt.pt"
    algo.save(path)
    rebuilt = cls.from_checkpoint(path, *_spaces())
    assert rebuilt.config.critic_structure == "additive"
    for p, q in zip(rebuilt.critics["agent_1"].parameters(), algo.critics["agent_1"].parameters()):
        assert torch.equal(p, q)


def test_an_additive_critic_needs_actions_of_one_length():
    obs = {"a": Box(-1, 1, (3,)), "b": Box(-1, 1, (3,))}
    act = {"a": Box(0, 1, (2,)), "b": Box(0, 1, (3,))}
    with pytest.raises(ValueError, match="critic_structure='additive'.*'a': 2, 'b': 3"):
        MADDPG(obs, act, MADDPGConfig(critic_structure="additive"))
    with pytest.raises(ValueError, match="invalid critic_structure='sum'"):
        MADDPGConfig(critic_structure="sum")
