"""EVCSVectorEnv (evcs_gym.wrappers.vector) on the real ParallelEvaluatorPool:
equals serial stepping, errors, close."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import evcs_gym
from evcs_gym.wrappers import EVCSVectorEnv, HistoryWrapper, RescaleActions, make_vector_env

N = 2


@pytest.fixture(scope="module")
def pool(tiny):
    with evcs_gym.ParallelEvaluatorPool(tiny, n_workers=2) as shared:
        yield shared


def serial_copies(tiny, rounds=2, **kwargs):
    return [
        HistoryWrapper(evcs_gym.parallel_env(scenario=tiny, **kwargs), rounds=rounds, k=2)
        for _ in range(N)
    ]


def random_actions(rng, agents, low=0.5, high=2.0):
    return {a: rng.uniform(low, high, (N, 4)) for a in agents}


def test_equals_serial_stepping_across_autoreset(tiny, pool):
    venv = make_vector_env(N, scenario=tiny, rounds=2, history={"k": 2}, pool=pool)
    envs = serial_copies(tiny)
    obs_v, _ = venv.reset(seed=10)
    obs_s = [env.reset(seed=10 + i)[0] for i, env in enumerate(envs)]
    for a in venv.possible_agents:
        assert np.array_equal(obs_v[a], np.stack([o[a] for o in obs_s]))
    rng = np.random.default_rng(0)
    for step in range(3):  # rounds=2: the second step ends every episode and autoresets
        actions = random_actions(rng, venv.possible_agents)
        obs_v, rew_v, term_v, trunc_v, info_v = venv.step(actions)
        for i, env in enumerate(envs):
            o, r, te, tr, inf = env.step({a: actions[a][i] for a in env.possible_agents})
            done = all(te[a] or tr[a] for a in r)
            for a in venv.possible_agents:
                assert rew_v[a][i] == r[a] and term_v[a][i] == te[a] and trunc_v[a][i] == tr[a]
                got = {k: v for k, v in info_v[i][a].items() if k != "final_observation"}
                assert data_equivalence(got, inf[a], exact=True)
            if done:
                for a in venv.possible_agents:
                    assert np.array_equal(info_v[i][a]["final_observation"], o[a])
                o, _ = env.reset()
            for a in venv.possible_agents:
                assert np.array_equal(obs_v[a][i], o[a])
        assert trunc_v["A"].tolist() == ([True] * N if step == 1 else [False] * N)
    assert venv.state().shape == (N, *venv.state_space.shape)
    venv.close()
    assert not pool.closed  # a given pool is left open


def test_async_step_and_shapes(tiny, pool):
    with make_vector_env(N, scenario=tiny, rounds=None, pool=pool, rescale_actions=True) as venv:
        obs, infos = venv.reset(seed=0)
        assert obs["A"].shape == (N, 4) and obs["A"].dtype == np.float32 and len(infos) == N
        assert venv.action_space("A").low.tolist() == [-1.0] * 4
        venv.step_async({a: np.zeros((N, 4)) for a in venv.possible_agents})
        with pytest.raises(RuntimeError, match="twice"):
            venv.step_async({a: np.zeros((N, 4)) for a in venv.possible_agents})
        obs, rewards, terms, truncs, infos = venv.step_wait()
        # one-step game: every step terminates and autoresets every copy
        assert terms["B"].tolist() == [True] * N and truncs["B"].tolist() == [False] * N
        assert rewards["A"].shape == (N,) and rewards["A"].dtype == np.float64
        assert infos[1]["A"]["prices"].tolist() == [1.25] * 4
        assert "final_observation" in infos[0]["B"]
        with pytest.raises(RuntimeError, match="without step_async"):
            venv.step_wait()


def test_bad_actions_raise_before_anything_moves(tiny, pool):
    venv = make_vector_env(N, scenario=tiny, rounds=3, pool=pool)
    ref = make_vector_env(N, scenario=tiny, rounds=3, pool=pool)
    venv.reset(seed=3)
    ref.reset(seed=3)
    good = {a: np.full((N, 4), 1.5) for a in venv.possible_agents}
    bad_nan = {"A": np.full((N, 4), 1.5), "B": np.array([[1.5] * 4, [1.5, np.nan, 1.5, 1.5]])}
    with pytest.raises(ValueError, match=r"agent 'B'.*non-finite") as info:
        venv.step(bad_nan)
    assert any("copy 1" in note for note in getattr(info.value, "__notes__", []))
    with pytest.raises(ValueError, match=r"agent 'A' must have shape \(2, 4\)"):
        venv.step({"A": np.ones((N, 3)), "B": np.ones((N, 4))})
    with pytest.raises(ValueError, match=r"missing \['B'\]"):
        venv.step({"A": np.ones((N, 4))})
    # the failed calls drew no evaluator seed: the next step equals the reference's
    _, r1, *_ = venv.step(good)
    _, r2, *_ = ref.step(good)
    assert all(np.array_equal(r1[a], r2[a]) for a in r1)
    venv.close()
    ref.close()


def test_invalid_prices_reaching_the_pool(tiny, pool):
    venv = make_vector_env(N, scenario=tiny, rounds=2, pool=pool, clip_actions=False)
    venv.reset(seed=0)
    actions = {a: np.full((N, 4), 1.0) for a in venv.possible_agents}
    actions["A"][1, 2] = 3.0  # passes the env (no clipping), the pool rejects it
    with pytest.raises(evcs_gym.PriceError, match=r"prices\['A'\] period 2 = 3.0") as info:
        venv.step(actions)
    assert any("copy 1" in note for note in info.value.__notes__)
    actions["A"][1, 2] = 1.0
    venv.step(actions)  # nothing was consumed: stepping goes on
    venv.close()


def test_worker_crash_surfaces_in_step_wait():
    # a slow variant of tiny: the UE loop always runs its 400 iterations (~3 s)
    slow = evcs_gym.load_scenario(
        "tiny",
        warm_start=False,
        ue_convergence_stable_rounds=400,
        ue_max_iterations=400,
        ue_payoff_precision=0.0,
    )
    venv = make_vector_env(N, scenario=slow, rounds=2, n_workers=2)
    pool = venv.pool
    actions = {a: np.full((N, 4), 1.2) for a in venv.possible_agents}
    venv.reset(seed=0)
    venv.step_async(actions)
    time.sleep(1.0)  # both evaluations are running
    for pid in pool._worker_pids():  # no public handle on the workers: kill them all
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(evcs_gym.WorkerCrashedError) as info:
        venv.step_wait()
    assert any("of EVCSVectorEnv; call reset()" in note for note in info.value.__notes__)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(actions)
    venv.close()
    assert pool.closed  # the vector env created the pool, so it closed it
    venv.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        venv.reset()


def test_constructor_checks(tiny, pool):
    other = evcs_gym.load_scenario("tiny", demand_multiplier=0.5)
    fns = [
        lambda: evcs_gym.parallel_env(scenario=tiny),
        lambda: evcs_gym.parallel_env(scenario=other),
    ]
    with pytest.raises(ValueError, match="share one scenario"):
        EVCSVectorEnv(fns, pool=pool)
    with pytest.raises(TypeError, match="submit"):
        EVCSVectorEnv([lambda: evcs_gym.parallel_env(scenario=tiny)], pool=object())
    with pytest.raises(ValueError, match="num_envs"):
        make_vector_env(0, scenario=tiny, pool=pool)
    mixed = [
        lambda: evcs_gym.parallel_env(scenario=tiny),
        lambda: RescaleActions(evcs_gym.parallel_env(scenario=tiny)),
    ]
    with pytest.raises(ValueError, match="other spaces"):
        EVCSVectorEnv(mixed, pool=pool)
    venv = make_vector_env(N, scenario=tiny, pool=pool)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step({a: np.ones((N, 4)) for a in venv.possible_agents})
    with pytest.raises(ValueError, match="seed"):
        venv.reset(seed=[1, 2, 3])
    venv.close()


def test_pool_as_the_evaluator_of_a_single_env(tiny, pool):
    env = evcs_gym.parallel_env(scenario=tiny, evaluator=pool)
    ref = evcs_gym.parallel_env(scenario=tiny)
    prices = {"A": [1.0, 1.5, 2.0, 0.5], "B": [1.2] * 4}
    for e in (env, ref):
        e.reset(seed=1)
    assert data_equivalence(env.step(prices), ref.step(prices), exact=True)
    other = evcs_gym.load_scenario("tiny", demand_multiplier=0.5)
    with pytest.raises(ValueError, match="another scenario"):
        evcs_gym.parallel_env(scenario=other, evaluator=pool)
