"""The shared baseline pieces (evcs_gym.baselines.common):
replay buffer, noise, networks, seeding, doctests."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import torch

from evcs_gym.baselines.common import (
    Actor,
    AdditiveCritic,
    GaussianNoise,
    ReplayBuffer,
    mlp,
    polyak_update,
    torch_seeded,
)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # Tiny networks: intra-op threads only add overhead (and jitter on shared 2-core boxes).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


OBS_DIMS = {"a": 3, "b": 2}
ACT_DIMS = {"a": 2, "b": 1}
BOUNDS = {
    "a": (np.array([0.0, -1.0]), np.array([1.0, 1.0])),
    "b": (np.array([-5.0]), np.array([5.0])),
}


def _transition(n: int, start: float = 0.0) -> dict[str, dict[str, np.ndarray]]:
    """n distinguishable valid rows: row i carries the value start + i everywhere it can."""
    v = start + np.arange(n, dtype=np.float64)
    return {
        "obs": {a: np.repeat(v[:, None], d, 1) for a, d in OBS_DIMS.items()},
        "actions": {"a": np.zeros((n, 2)), "b": np.full((n, 1), 0.5)},
        "rewards": {"a": v.copy(), "b": -v},
        "next_obs": {a: np.repeat(v[:, None] + 0.5, d, 1) for a, d in OBS_DIMS.items()},
        "dones": {"a": np.zeros(n, bool), "b": np.ones(n, bool)},
    }


def _buffer(capacity: int = 10, seed: int = 0, **kw) -> ReplayBuffer:
    return ReplayBuffer(OBS_DIMS, ACT_DIMS, capacity, seed=seed, act_bounds=BOUNDS, **kw)


def test_buffer_add_batched_and_unbatched():
    buf = _buffer()
    assert buf.add(**_transition(3)) == 3
    single = {f: {a: v[0] for a, v in d.items()} for f, d in _transition(1, start=7).items()}
    assert buf.add(**single) == 1
    assert len(buf) == 4
    batch = buf.get(np.arange(4))
    np.testing.assert_array_equal(batch.obs["a"][:, 0], [0, 1, 2, 7])
    np.testing.assert_array_equal(batch.rewards["b"], [0, -1, -2, -7])
    np.testing.assert_array_equal(batch.dones["b"], [1, 1, 1, 1])
    assert batch.obs["a"].dtype == np.float32 and batch.obs["a"].shape == (4, 3)
    assert len(batch) == 4


def test_buffer_fifo_overwrites_oldest():
    buf = _buffer(capacity=5)
    buf.add(**_transition(3))
    buf.add(**_transition(4, start=3))  # rows 0..6 added, capacity 5 -> rows 2..6 remain
    assert len(buf) == 5
    kept = sorted(buf.get(np.arange(5)).rewards["a"].tolist())
    assert kept == [2, 3, 4, 5, 6]
    buf.add(**_transition(12, start=100))  # more than capacity in one call: newest 5 kept
    assert sorted(buf.get(np.arange(5)).rewards["a"].tolist()) == [107, 108, 109, 110, 111]


def test_buffer_reward_scale():
    buf = _buffer(reward_scale=4.0)
    buf.add(**_transition(3))
    np.testing.assert_allclose(buf.get([0, 1, 2]).rewards["a"], [0.0, 0.25, 0.5])


@pytest.mark.parametrize(
    ("field", "agent", "value", "match"),
    [
        ("obs", "b", np.array([[0.0, np.nan]] * 3), r"obs\['b'\]: contains NaN or inf"),
        ("next_obs", "a", np.full((3, 3), np.inf), r"next_obs\['a'\]: contains NaN or inf"),
        ("rewards", "a", np.array([0, 1e39, 0]), r"rewards\['a'\]: contains NaN or inf"),
        ("actions", "a", np.zeros((3, 3)), r"actions\['a'\]: expected shape \(2,\) or \(B, 2\)"),
        ("obs", "b", np.zeros((2, 2)), r"obs\['b'\]: batch size 2 does not match .* obs\['a'\]"),
        ("actions", "b", np.full((3, 1), 6.0), r"actions\['b'\]: values outside the action"),
        ("dones", "a", np.array([0, 2, 0]), r"dones\['a'\]: values must be 0/1"),
        ("rewards", "b", np.array(["x", "y", "z"]), r"rewards\['b'\]: expected a numeric"),
    ],
)
def test_buffer_rejects_bad_data_and_stays_untouched(field, agent, value, match):
    buf = _buffer()
    buf.add(**_transition(2))
    before = buf.get(np.arange(2))
    bad = _transition(3, start=50)
    bad[field][agent] = value
    with pytest.raises(ValueError, match=match):
        buf.add(**bad)
    assert len(buf) == 2 and buf._pos == 2
    after = buf.get(np.arange(2))
    for f in ("obs", "actions", "rewards", "next_obs", "dones"):
        for a in OBS_DIMS:
            np.testing.assert_array_equal(getattr(before, f)[a], getattr(after, f)[a])
    # nothing was written past the end either
    assert np.all(buf._data["rewards"]["a"][2:] == 0)


def test_buffer_rejects_unknown_and_missing_agents():
    buf = _buffer()
    bad = _transition(2)
    bad["rewards"]["zed"] = np.zeros(2)
    with pytest.raises(ValueError, match=r"rewards: unknown agent 'zed'"):
        buf.add(**bad)
    bad = _transition(2)
    del bad["next_obs"]["b"]
    with pytest.raises(ValueError, match=r"next_obs: missing agent 'b'"):
        buf.add(**bad)
    assert len(buf) == 0


def test_buffer_clips_rounding_overshoot_of_actions():
    buf = _buffer()
    tr = _transition(1)
    tr["actions"]["b"] = np.array([[5.0 + 1e-6]])
    buf.add(**tr)
    assert buf.get([0]).actions["b"][0, 0] == np.float32(5.0)


def test_buffer_sampling_is_seeded():
    def draws(seed):
        buf = _buffer(capacity=100, seed=seed)
        buf.add(**_transition(50))
        return np.concatenate([buf.sample(16).rewards["a"] for _ in range(3)])

    np.testing.assert_array_equal(draws(0), draws(0))
    assert not np.array_equal(draws(0), draws(1))
    with pytest.raises(ValueError, match="empty"):
        _buffer().sample(4)


def test_gaussian_noise_units_decay_floor_reset():
    noise = GaussianNoise(np.array([1.0, 10.0]), std=0.2, decay_rate=0.5, std_min=0.03, seed=0)
    x = noise.sample(20_000)
    assert x.shape == (20_000, 2)
    np.testing.assert_allclose(x.std(0), [0.2, 2.0], rtol=0.03)
    np.testing.assert_allclose(x.mean(0), 0.0, atol=0.03)
    assert noise.decay() == pytest.approx(0.1)
    assert noise.decay() == pytest.approx(0.05)
    assert noise.decay() == pytest.approx(0.03)  # floor
    assert noise.decay() == pytest.approx(0.03)
    noise.reset()
    assert noise.std == 0.2
    a = GaussianNoise(np.ones(3), 0.1, seed=5).sample(4)
    np.testing.assert_array_equal(a, GaussianNoise(np.ones(3), 0.1, seed=5).sample(4))
    assert not np.array_equal(a, GaussianNoise(np.ones(3), 0.1, seed=6).sample(4))
    with pytest.raises(ValueError):
        GaussianNoise(np.ones(1), std=0.1, std_min=0.2)
    with pytest.raises(ValueError):
        GaussianNoise(np.ones(1), std=0.1, decay_rate=1.5)


def test_polyak_update():
    with torch_seeded(0):
        src, tgt = mlp(3, 2, (4,)), mlp(3, 2, (4,))
    t0 = [p.clone() for p in tgt.parameters()]
    polyak_update(tgt, src, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(t0, tgt.parameters(), strict=True))
    polyak_update(tgt, src, 0.25)
    for old, new, s in zip(t0, tgt.parameters(), src.parameters(), strict=True):
        torch.testing.assert_close(new, 0.75 * old + 0.25 * s)
    polyak_update(tgt, src, 1.0)
    assert all(torch.equal(a, b) for a, b in zip(tgt.parameters(), src.parameters(), strict=True))
    with pytest.raises(ValueError):
        polyak_update(tgt, src, 1.5)


def test_mlp_structure():
    net = mlp(5, 3, (7, 11))
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(5, 7), (7, 11), (11, 3)]
    assert net(torch.zeros(4, 5)).shape == (4, 3)


def test_actor_always_inside_bounds_and_differentiable():
    low, high = np.array([0.0, -3.0, 2.0]), np.array([1.0, 7.0, 2.0])  # last dim degenerate
    with torch_seeded(0):
        actor = Actor(4, low, high, hidden_sizes=(16,))
    with torch.no_grad():
        for p in actor.parameters():
            p.mul_(100.0)  # saturate the tanh hard
    obs = torch.cat([torch.full((1, 4), 1e9), torch.full((1, 4), -1e9), torch.randn(64, 4) * 1e4])
    act = actor(obs)
    lo, hi = torch.as_tensor(low, dtype=torch.float32), torch.as_tensor(high, dtype=torch.float32)
    assert torch.isfinite(act).all()
    assert ((act >= lo) & (act <= hi)).all()
    assert (act[:, 2] == 2.0).all()
    x = torch.randn(8, 4, requires_grad=True)
    with torch_seeded(1):
        fresh = Actor(4, low, high)
    fresh(x).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    # normalize_action maps the box onto [-1, 1] (degenerate dims stay centred at 0)
    torch.testing.assert_close(fresh.normalize_action(lo), torch.tensor([-1.0, -1.0, 0.0]))
    torch.testing.assert_close(fresh.normalize_action(hi), torch.tensor([1.0, 1.0, 0.0]))


def test_actor_obs_normalisation_only_on_finite_bounds():
    with torch_seeded(0):
        actor = Actor(
            3, np.zeros(1), np.ones(1), obs_low=np.array([0.0, -np.inf, 10.0]),
            obs_high=np.array([4.0, np.inf, 20.0]),
        )  # fmt: skip
    z = actor.normalize_obs(torch.tensor([[4.0, 123.0, 10.0]]))
    torch.testing.assert_close(z, torch.tensor([[1.0, 123.0, -1.0]]))


def test_torch_seeded_is_reproducible_and_does_not_leak():
    torch.manual_seed(1234)
    expected_next = torch.rand(3)
    torch.manual_seed(1234)
    with torch_seeded(7):
        a = mlp(4, 2)
    with torch_seeded(7):
        b = mlp(4, 2)
    with torch_seeded(8):
        c = mlp(4, 2)
    assert torch.equal(torch.rand(3), expected_next)  # global stream untouched
    sa, sb, sc = (torch.cat([p.flatten() for p in m.parameters()]) for m in (a, b, c))
    assert torch.equal(sa, sb) and not torch.equal(sa, sc)


@pytest.mark.parametrize("module", ["common", "algorithm", "maddpg", "iddpg", "mfddpg", "nashconv"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"evcs_gym.baselines.{module}")
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_additive_critic_is_a_sum_of_one_term_per_action_dimension():
    critic = AdditiveCritic(context_dim=2, blocks=3, action_dim=4, hidden_sizes=(16,))
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(5, 2 + 3 * 4, generator=gen)
    # dimension 1 of block 2 moves, with dimension 3 of every block at two other values
    moved = x.clone()
    moved[:, 2 + 2 * 4 + 1] += 0.5
    other = x.clone()
    other[:, [2 + 3, 2 + 4 + 3, 2 + 8 + 3]] = torch.rand(5, 3, generator=gen)
    other_moved = other.clone()
    other_moved[:, 2 + 2 * 4 + 1] += 0.5
    with torch.no_grad():
        diff, diff_elsewhere = critic(moved) - critic(x), critic(other_moved) - critic(other)
    assert critic(x).shape == (5,) and diff.abs().min() > 0
    torch.testing.assert_close(diff, diff_elsewhere)  # term 1 does not see dimension 3
