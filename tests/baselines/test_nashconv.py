"""NashConvChecker (evcs_gym.baselines.nashconv) on hand-written
critics with known best responses, and on learned ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box

from evcs_gym.baselines import MADDPG, MFDDPG, MADDPGConfig, NashConvChecker

LOW = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
HIGH = np.array([1.0, 10.0, 2.5], dtype=np.float32)  # deliberately different scales
SPACE = Box(LOW, HIGH)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def quadratic(agent: str, c: np.ndarray):
    """q = -sum((a - c)^2): best response is the projection of c onto the box."""
    ct = torch.as_tensor(c, dtype=torch.float32)

    def q(obs, actions):
        return -((actions[agent] - ct) ** 2).sum(-1)

    return q


def q_value(a: np.ndarray, c: np.ndarray) -> float:
    return float(-np.sum((np.asarray(a, np.float64) - c) ** 2))


OBS = {"x": np.zeros(2, np.float32), "y": np.zeros(2, np.float32)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_interior_maximiser_and_exact_gain(seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(LOW, HIGH)
    given = rng.uniform(LOW, HIGH)
    checker = NashConvChecker({"x": quadratic("x", c)}, {"x": SPACE}, seed=seed)
    res = checker.check(OBS, {"x": given})
    np.testing.assert_allclose(res.best_action["x"], c, atol=1e-3)
    assert res.best_value["x"] == pytest.approx(0.0, abs=1e-5)
    assert res.current_value["x"] == pytest.approx(q_value(given, c), rel=1e-6)
    assert res.gain["x"] == pytest.approx(-q_value(given, c), abs=1e-5)
    assert res.nash_conv == res.gain["x"]


def test_finds_maximiser_on_the_boundary():
    c = np.array([1.7, -3.0, 2.2])  # outside in dims 0 and 1, inside in dim 2
    star = np.array([1.0, 0.0, 2.2])
    given = np.array([0.0, 5.0, 2.4])
    res = NashConvChecker({"x": quadratic("x", c)}, {"x": SPACE}).check(OBS, {"x": given})
    np.testing.assert_allclose(res.best_action["x"], star, atol=1e-3)
    assert np.all(res.best_action["x"] >= LOW) and np.all(res.best_action["x"] <= HIGH)
    assert res.best_value["x"] == pytest.approx(q_value(star, c), abs=1e-5)
    assert res.gain["x"] == pytest.approx(q_value(star, c) - q_value(given, c), abs=1e-5)


@pytest.mark.parametrize("c", [np.array([0.3, 4.0, 2.1]), np.array([5.0, -5.0, 2.5])])
def test_zero_gain_when_given_action_is_the_maximiser(c):
    star = np.clip(c, LOW, HIGH)
    res = NashConvChecker({"x": quadratic("x", c)}, {"x": SPACE}).check(OBS, {"x": star})
    assert res.gain["x"] == 0.0 and res.nash_conv == 0.0
    assert res.best_value["x"] == res.current_value["x"]
    np.testing.assert_allclose(res.best_action["x"], star, atol=1e-6)


def test_other_agents_stay_fixed_and_gains_sum():
    """q_x = -(a_x - a_y / 2)^2, q_y = -(a_y - 1)^2 with 1-D boxes [-1, 1]."""
    box = Box(-1.0, 1.0, (1,))
    critics = {
        "x": lambda o, a: -((a["x"] - a["y"] / 2) ** 2).sum(-1),
        "y": lambda o, a: -((a["y"] - 1.0) ** 2).sum(-1),
    }
    checker = NashConvChecker(critics, {"x": box, "y": box}, n_starts=4, steps=60)
    res = checker.check(OBS, {"x": np.array([-0.5]), "y": np.array([0.4])})
    # x's best response is against the *given* y = 0.4, not against y's best response 1.0
    np.testing.assert_allclose(res.best_action["x"], [0.2], atol=1e-3)
    np.testing.assert_allclose(res.best_action["y"], [1.0], atol=1e-3)
    assert res.gain["x"] == pytest.approx(0.7**2, abs=1e-5)
    assert res.gain["y"] == pytest.approx(0.6**2, abs=1e-5)
    assert res.nash_conv == pytest.approx(0.7**2 + 0.6**2, abs=1e-5)
    again = checker.check(OBS, {"x": np.array([-0.5]), "y": np.array([0.4])})
    assert again == res  # deterministic given the seed


def test_single_start_ascends_from_the_given_action():
    # Two local maxima on [-1, 1]: at -0.8 (value 0) and 0.6 (value 1). From -0.5 and with
    # one start, projected ascent must climb to the *local* maximum -0.8 only.
    def q(o, a):
        x = a["x"][:, 0]
        return torch.maximum(-10 * (x + 0.8) ** 2, 1 - 10 * (x - 0.6) ** 2)

    box = {"x": Box(-1.0, 1.0, (1,))}
    local = NashConvChecker({"x": q}, box, n_starts=1).check(OBS, {"x": np.array([-0.5])})
    np.testing.assert_allclose(local.best_action["x"], [-0.8], atol=1e-3)
    multi = NashConvChecker({"x": q}, box, n_starts=8).check(OBS, {"x": np.array([-0.5])})
    np.testing.assert_allclose(multi.best_action["x"], [0.6], atol=1e-3)
    assert multi.gain["x"] == pytest.approx(1 + 10 * 0.3**2, abs=1e-4)


def test_rejects_bad_inputs():
    checker = NashConvChecker({"x": quadratic("x", np.zeros(3))}, {"x": SPACE})
    with pytest.raises(ValueError, match=r"actions\['x'\]: outside the action bounds"):
        checker.check(OBS, {"x": np.array([0.0, 11.0, 2.0])})
    with pytest.raises(ValueError, match="missing agent 'x'"):
        checker.check(OBS, {})
    bad = NashConvChecker({"x": lambda o, a: a["x"]}, {"x": SPACE})  # (B, 3), not (B,)
    with pytest.raises(ValueError, match="returned shape"):
        bad.check(OBS, {"x": np.array([0.0, 1.0, 2.0])})
    detached = NashConvChecker({"x": lambda o, a: a["x"].sum(-1).detach()}, {"x": SPACE})
    with pytest.raises(ValueError, match="must be differentiable"):
        detached.check(OBS, {"x": np.array([0.0, 1.0, 2.0])})
    # a (parametrised) critic that ignores the agent's own action: nothing to gain
    w = torch.ones(3, requires_grad=True)
    blind = NashConvChecker({"x": lambda o, a: (a["y"] * w).sum(-1)}, {"x": SPACE, "y": SPACE})
    given = {"x": np.array([0.0, 1.0, 2.0]), "y": np.array([0.5, 5.0, 2.2])}
    assert blind.check(OBS, given).nash_conv == 0.0


@pytest.mark.parametrize("cls", [MADDPG, MFDDPG])
def test_on_learned_critics(cls):
    obs_spaces = {a: Box(-1.0, 1.0, (3,)) for a in ("p", "q")}
    act_spaces = {"p": Box(0.0, 1.0, (2,)), "q": Box(-2.0, 2.0, (2,))}
    algo = cls(obs_spaces, act_spaces, MADDPGConfig(batch_size=16, learning_starts=16))
    rng = np.random.default_rng(0)
    for _ in range(40):  # stage game with a known optimum per agent
        o = {a: rng.uniform(-1, 1, (4, 3)) for a in obs_spaces}
        act = algo.sample_actions_batch(o)
        r = {"p": -np.sum((act["p"] - 0.7) ** 2, 1), "q": -np.sum(act["q"] ** 2, 1)}
        algo.store_experience(o, act, r, o, {a: np.zeros(4) for a in obs_spaces})
        algo.learn()
    critics = algo.get_critics()
    obs = {a: np.zeros(3, np.float32) for a in obs_spaces}
    actions = {"p": np.array([0.1, 0.9]), "q": np.array([1.5, -1.5])}
    res = NashConvChecker(critics, act_spaces, steps=50).check(obs, actions)
    assert res.nash_conv == pytest.approx(sum(res.gain.values()))
    for a, space in act_spaces.items():
        assert res.gain[a] >= 0 and res.best_value[a] >= res.current_value[a]
        assert space.contains(res.best_action[a].astype(np.float32))
        # reported values are the critic's values at the reported actions
        t = {k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in obs.items()}
        acts = {k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in actions.items()}
        with torch.no_grad():
            assert float(critics[a](t, acts)[0]) == pytest.approx(res.current_value[a], abs=1e-5)
            acts[a] = torch.as_tensor(res.best_action[a])[None]
            assert float(critics[a](t, acts)[0]) == pytest.approx(res.best_value[a], abs=1e-5)
