"""HistoryWrapper (evcs_gym.wrappers.history): API checkers, hand-computed observations,
rounds, seeding."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import parallel_api_test, parallel_seed_test

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper, RescaleActions
from tests.helpers import history_env as history

LOW, HIGH, FLOW_SCALE = 0.5, 2.0, 50.0  # the tiny scenario's bounds and flow scale


def norm(prices):
    return (np.asarray(prices, dtype=np.float64) - LOW) / (HIGH - LOW)


def test_tiny_constants(tiny):
    assert tiny.price_bounds == {"A": (LOW, HIGH), "B": (LOW, HIGH)}
    assert tiny.settings.flow_scale_factor == FLOW_SCALE


def test_parallel_api(tiny):
    parallel_api_test(history(tiny, rounds=3, k=2, ema=0.5, include_round=True), num_cycles=5)


def test_parallel_seed(tiny):
    parallel_seed_test(lambda: history(tiny, rounds=2, ema=0.3))


def test_observation_after_known_actions(tiny):
    env = history(tiny, rounds=3, k=2, ema=0.5, include_round=True)
    space = env.observation_space("A")
    # prices k*n*P + own flows k*P + beliefs (n-1)*P + id n + round 1
    assert space.shape == (16 + 8 + 4 + 2 + 1,)
    assert env.state_space.shape == (16 + 16 + 1,)
    init = {"A": [1.0, 1.0, 1.0, 1.0], "B": [2.0, 0.5, 2.0, 0.5]}
    obs, infos = env.reset(seed=0, options={"initial_prices": init})
    assert infos["A"]["round"] == 0
    p0 = np.stack([norm(init["A"]), norm(init["B"])])
    expected_a = np.concatenate([p0.ravel(), p0.ravel(), np.zeros(8), p0[1], [1, 0], [0]])
    np.testing.assert_allclose(obs["A"], expected_a.astype(np.float32))

    act1 = {"A": [0.5, 1.0, 1.5, 2.0], "B": [1.25] * 4}
    obs, _, _, _, infos = env.step(act1)
    p1 = np.stack([norm(act1["A"]), norm(act1["B"])])
    f1 = {a: infos[a]["flows"] / FLOW_SCALE for a in ("A", "B")}
    belief1 = 0.5 * p0 + 0.5 * p1
    expected_b = np.concatenate(
        [p1.ravel(), p0.ravel(), f1["B"], np.zeros(4), belief1[0], [0, 1], [1 / 3]]
    )
    np.testing.assert_allclose(obs["B"], expected_b.astype(np.float32), rtol=1e-6)

    act2 = {"A": [2.0] * 4, "B": [0.5] * 4}
    obs, _, _, _, infos2 = env.step(act2)
    p2 = np.stack([norm(act2["A"]), norm(act2["B"])])
    f2 = {a: infos2[a]["flows"] / FLOW_SCALE for a in ("A", "B")}
    belief2 = 0.5 * belief1 + 0.5 * p2
    expected_a = np.concatenate(
        [p2.ravel(), p1.ravel(), f2["A"], f1["A"], belief2[1], [1, 0], [2 / 3]]
    )
    np.testing.assert_allclose(obs["A"], expected_a.astype(np.float32), rtol=1e-6)
    expected_state = np.concatenate(
        [p2.ravel(), p1.ravel(), np.stack([f2["A"], f2["B"]]).ravel()]
        + [np.stack([f1["A"], f1["B"]]).ravel(), [2 / 3]]
    )
    np.testing.assert_allclose(env.state(), expected_state.astype(np.float32), rtol=1e-6)
    assert env.state_space.contains(env.state())
    assert all(env.observation_space(a).contains(o) for a, o in obs.items())


def test_minimal_observation(tiny):
    env = history(tiny, rounds=2, include_flows=False, agent_id=False)
    assert env.observation_space("A").shape == (8,)
    obs, _ = env.reset(seed=0, options={"initial_prices": "mid"})
    assert obs["A"].tolist() == [0.5] * 8


def test_rounds_truncation_not_termination(tiny):
    env = history(tiny, rounds=3)
    env.reset(seed=1)
    flags = []
    for expected_round in (1, 2, 3):
        assert env.agents == ["A", "B"]
        _, rewards, terms, truncs, infos = env.step({"A": [1.0] * 4, "B": [1.5] * 4})
        flags.append((terms["A"], truncs["A"]))
        assert infos["A"]["round"] == expected_round == env.round
        assert set(rewards) == {"A", "B"}
    assert flags == [(False, False), (False, False), (False, True)]
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"A": [1.0] * 4, "B": [1.5] * 4})
    env.reset()
    assert env.agents == ["A", "B"] and env.round == 0


def test_initial_history_seeded(tiny):
    def first_obs(seed, **kw):
        return history(tiny, k=2, **kw).reset(seed=seed)[0]["A"]

    a, b, c = first_obs(3), first_obs(3), first_obs(4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all((a[:16] >= 0) & (a[:16] <= 1)) and len(np.unique(a[:16])) == 16
    assert first_obs(3, initial_prices="mid")[:16].tolist() == [0.5] * 16
    fixed = first_obs(3, initial_prices={"A": [2.0] * 4, "B": [0.5] * 4})
    assert fixed[:16].tolist() == ([1.0] * 4 + [0.0] * 4) * 2
    env = history(tiny)
    o1 = env.reset(seed=9)[0]["A"]
    o2 = env.reset()[0]["A"]  # continues the stream: a new random history
    assert not np.array_equal(o1, o2)


def test_multi_round_same_seed_rollouts(tiny):
    def rollout():
        env = history(tiny, rounds=3, k=2, ema=0.2)
        out = [env.reset(seed=21)]
        rng = np.random.default_rng(1)
        for _ in range(5):  # crosses an episode end
            if not env.agents:
                out.append(env.reset())
            acts = {a: rng.uniform(0.5, 2.0, 4) for a in env.agents}
            out.append(env.step(acts))
        return out

    a, b = rollout(), rollout()
    assert len(a) == len(b) == 7
    for x, y in zip(a, b):
        assert data_equivalence(x, y, exact=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rounds": 0}, "`rounds` must be a positive integer"),
        ({"rounds": 2.5}, "`rounds` must be a positive integer"),
        ({"k": 0}, "`k` must be a positive integer"),
        ({"ema": 1.0}, r"`ema` must be None or a number in \[0, 1\)"),
        ({"initial_prices": "low"}, "`initial_prices` must be"),
        ({"initial_prices": {"A": [1.0] * 4}}, "missing agent"),
        ({"initial_prices": {"A": [1.0] * 4, "B": [1.0] * 3}}, r"initial_prices\['B'\]"),
    ],
)
def test_bad_arguments(tiny, kwargs, match):
    with pytest.raises(ValueError, match=match):
        history(tiny, **kwargs)


def test_wrapping_rules(tiny):
    with pytest.raises(ValueError, match="already has a HistoryWrapper"):
        HistoryWrapper(RescaleActions(history(tiny)))
    from pettingzoo.test.example_envs import generated_agents_parallel_v0

    with pytest.raises(TypeError, match="EVCSPricingParallelEnv"):
        HistoryWrapper(generated_agents_parallel_v0.parallel_env())


def test_render_shows_the_latest_round(tiny):
    env = HistoryWrapper(evcs_gym.parallel_env(scenario=tiny, render_mode="rgb_array"), rounds=2)
    env.reset(seed=0)
    before = env.render()
    env.step({"A": [2.0] * 4, "B": [0.5] * 4})
    after = env.render()
    assert after.shape == before.shape and after.dtype == np.uint8
    assert not np.array_equal(before, after)
