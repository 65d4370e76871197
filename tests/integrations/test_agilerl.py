"""AgileRL adapter: vector envs of the repeated game, final-round infos, training, prices.

Runs in ``nox -s agilerl`` (agilerl 2.58.0); skipped where AgileRL is not installed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("agilerl.algorithms")

import torch  # noqa: E402
from agilerl.algorithms import MADDPG, MATD3  # noqa: E402
from agilerl.components.data import (  # noqa: E402
    MultiAgentTransition,
    transition_to_tensordict,
)
from agilerl.components.replay_buffer import ReplayBuffer  # noqa: E402
from gymnasium import spaces  # noqa: E402

import evcs_gym  # noqa: E402
from evcs_gym.integrations import agilerl as adapter  # noqa: E402
from evcs_gym.wrappers import HistoryWrapper  # noqa: E402

PRICES_1 = {"A": np.full(4, 1.0, np.float32), "B": np.full(4, 1.5, np.float32)}
PRICES_2 = {"A": np.array([0.5, 1.0, 1.5, 2.0], np.float32), "B": np.full(4, 0.8, np.float32)}


def vector(prices: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    return {a: np.tile(p, (n, 1)) for a, p in prices.items()}


@pytest.fixture
def venv():
    env = adapter.make_vect_envs(2, scenario="tiny", rounds=2, eval_seed=0)
    yield env
    env.close()


def test_pricing_env_is_the_history_game():
    env = adapter.pricing_env(scenario="tiny", rounds=3, k=2)
    assert isinstance(env, adapter.KeepFinalStep) and isinstance(env.env, HistoryWrapper)
    assert env.env.rounds == 3 and env.env.k == 2
    assert env.observation_space("A").shape == (2 * 2 * 4 + 2 * 4 + 2,)
    assert env.action_space("B") == spaces.Box(0.5, 2.0, (4,), np.float32)


def test_keep_final_step_hands_the_last_round_to_reset():
    env = adapter.pricing_env(scenario="tiny", rounds=2, eval_seed=0)
    env.reset(seed=0)
    _, _, _, truncs, infos = env.step(PRICES_1)
    assert not truncs["A"]
    assert "final_info" not in env.reset(seed=1)[1]["A"]  # not after an unfinished episode
    env.step(PRICES_1)
    obs, _, _, truncs, infos = env.step(PRICES_2)
    assert truncs == {"A": True, "B": True}
    _, reset_infos = env.reset()
    for a in ("A", "B"):
        assert reset_infos[a]["round"] == 0
        np.testing.assert_array_equal(reset_infos[a]["final_observation"], obs[a])
        np.testing.assert_allclose(reset_infos[a]["final_info"]["prices"], PRICES_2[a])
        assert reset_infos[a]["final_info"]["reward_raw"] == infos[a]["reward_raw"]
    assert "final_info" not in env.reset()[1]["A"]  # handed over once


def test_station_ids_are_their_own_agilerl_groups(venv):
    obs_spaces, act_spaces, ids = adapter.agent_spaces(venv)
    agent = MADDPG(obs_spaces, act_spaces, agent_ids=ids, vect_noise_dim=2)
    assert ids == ["A", "B"]
    assert [agent.get_group_id(a) for a in ids] == ids == [adapter.agilerl_group(a) for a in ids]
    assert not agent.has_grouped_agents()
    assert sorted(agent.actors.keys()) == ["A", "B"]
    assert adapter.check_agent_ids(["10", "13", "18", "3"]) == ["10", "13", "18", "3"]
    with pytest.raises(ValueError, match="share one network"):
        adapter.check_agent_ids(["st_1", "st_2", "B"])


def test_agent_spaces_match_the_env(venv):
    obs_spaces, act_spaces, ids = adapter.agent_spaces(venv)
    single = adapter.pricing_env(scenario="tiny", rounds=2)
    assert obs_spaces == [single.observation_space(a) for a in ids]
    assert act_spaces == [spaces.Box(0.5, 2.0, (4,), np.float32)] * 2
    assert adapter.agent_spaces(single) == (obs_spaces, act_spaces, ids)


def test_vector_env_final_round_is_recovered(venv):
    obs, infos = venv.reset(seed=0)
    assert obs["A"].shape == (2, 14)
    next_obs, rewards, terms, truncs, infos = venv.step(vector(PRICES_1, 2))
    np.testing.assert_allclose(adapter.step_values(infos, "prices")["A"], vector(PRICES_1, 2)["A"])
    assert not truncs["A"].any()
    next_obs, rewards, terms, truncs, infos = venv.step(vector(PRICES_2, 2))
    assert truncs["A"].all() and not terms["A"].any()
    # AgileRL returned the reset's infos and observation for the final round...
    assert "prices" not in infos["A"] and infos["A"]["round"].tolist() == [0, 0]
    # ...and the adapter recovers the round actually played
    prices = adapter.step_values(infos, "prices")
    for a in ("A", "B"):
        np.testing.assert_allclose(prices[a], vector(PRICES_2, 2)[a])
    raw = adapter.step_values(infos, "reward_raw")
    np.testing.assert_allclose(raw["A"] / 2000.0, rewards["A"])
    real = adapter.true_next_obs(next_obs, infos)
    expected = (np.stack([PRICES_2["A"], PRICES_2["B"]]) - 0.5) / 1.5  # normalised last round
    np.testing.assert_allclose(real["A"][:, :8], np.tile(expected.ravel(), (2, 1)), atol=1e-6)
    assert not np.allclose(real["A"], next_obs["A"])  # next_obs is a fresh random history
    with pytest.raises(KeyError, match="flows"):
        adapter.step_values(venv.reset()[1], "flows")


@pytest.mark.parametrize("cls", [MADDPG, MATD3])
def test_short_training_and_learned_prices(venv, cls):
    torch.manual_seed(0)
    obs_spaces, act_spaces, ids = adapter.agent_spaces(venv)
    agent = cls(obs_spaces, act_spaces, agent_ids=ids, vect_noise_dim=2, batch_size=4, gamma=0.0)
    before = {a: [p.detach().clone() for p in agent.actors[a].parameters()] for a in ids}
    memory = ReplayBuffer(max_size=100)
    obs, infos = venv.reset(seed=0)
    updates = 0
    for _ in range(3):  # 6 evaluations
        action, raw = agent.get_action(obs, infos)
        assert all(np.all((action[a] >= 0.5) & (action[a] <= 2.0)) for a in ids)
        next_obs, rewards, terms, truncs, infos = venv.step(action)
        np.testing.assert_allclose(adapter.step_values(infos, "prices")["B"], action["B"], 1e-6)
        td = transition_to_tensordict(
            MultiAgentTransition(
                obs=obs,
                action=raw,
                reward=rewards,
                next_obs=adapter.true_next_obs(next_obs, infos),
                done=terms,
            )
        )
        td.batch_size = torch.Size([2])
        memory.add(td)
        if len(memory) >= agent.batch_size:
            agent.learn(memory.sample(agent.batch_size))
            updates += 1
        obs = next_obs
    assert updates == 2
    changed = [
        not torch.equal(b, p)
        for a in ids
        for b, p in zip(before[a], agent.actors[a].parameters(), strict=True)
    ]
    assert any(changed)

    agent.set_training_mode(True)
    prices = adapter.learned_prices(agent, obs)
    assert agent.training  # mode restored
    assert set(prices) == {"A", "B"}
    for p in prices.values():
        assert p.shape == (4,) and p.dtype == np.float64
        assert np.all((p >= 0.5) & (p <= 2.0))
    again = adapter.learned_prices(agent, {a: o[0] for a, o in obs.items()})
    for a in ids:  # deterministic: no exploration noise, single observation accepted
        np.testing.assert_array_equal(prices[a], again[a])
    with pytest.raises(ValueError, match="no entry for station 'B'"):
        adapter.learned_prices(agent, {"A": obs["A"]})


def test_make_vect_envs_checks_arguments():
    with pytest.raises(ValueError, match="num_envs"):
        adapter.make_vect_envs(0, scenario="tiny")
    with pytest.raises(ValueError, match="rounds"):
        adapter.make_vect_envs(1, scenario="tiny", rounds=0)


@pytest.mark.parametrize("algo", ["maddpg", "matd3"])
def test_example_runs_at_smoke_budget(load_script, capsys, monkeypatch, algo):
    monkeypatch.setenv("EVCS_GYM_SMOKE", "1")
    out = load_script("examples", "agilerl_pricing").main(["--algo", algo, "--budget", "9999"])
    assert out["evaluations"] == 16  # the smoke budget wins
    assert set(out["prices"]) == {"A", "B"}
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in out["prices"].values())
    assert out["relative_nash_conv"] >= 0 and np.isfinite(out["relative_nash_conv_se"])
    printed = capsys.readouterr().out
    assert "verified NashConv:" in printed and "2 seeds" in printed


def test_the_repeated_market_study_trains_an_agilerl_peer(load_script, tmp_path):
    """``benchmarks/studies/repeated_market.py`` with AgileRL installed trains the peer in
    this process, with the study's discount, and scores its learned policy's path."""
    study = load_script("benchmarks/studies", "repeated_market")
    argv = ["--algorithms", "agilerl-matd3", "--budget", "24", "--seeds", "0", "--horizon", "6"]
    argv += ["--shock", "3", "--last", "2", "--out", str(tmp_path), "--no-report"]
    assert study.main(argv) == 0
    record = json.loads((tmp_path / "agilerl-matd3__seed0.json").read_text())
    assert record["library"] == "agilerl" and record["config"]["gamma"] == 0.95
    assert record["evaluations"] == 24 and record["raw_simulations"] >= 24
    assert len(record["training_prices"]["blocks"]) == 10
    path, impulse = np.asarray(record["path"]), np.asarray(record["impulse"])
    np.testing.assert_array_equal(path[:3], impulse[:3])  # the same policy until the cut
    floor = evcs_gym.load_scenario("tiny_market").price_bounds["A"][0]
    assert np.all(impulse[3, 0] == floor) and record["collusion_index"]["delta"] is not None
