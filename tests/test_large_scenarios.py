"""The large bundled games end to end, at smoke size: Berlin-Friedrichshain (20 stations)
and Anaheim (40 stations) through the Gymnasium and PettingZoo envs, the vector env,
each bundled baseline, ``exploit`` and ``solve``.

Smoke size: every evaluation is cut to 2 UE iterations and the warm start to 2
(``SMOKE``), so an Anaheim evaluation costs about two raw simulations. That changes the
game's numbers, not its plumbing: what is checked is that 20 and 40 agents flow through
every layer (spaces, observations, critics, the deviation search) and come back finite.
Slow suite: ``pytest -m slow tests/test_large_scenarios.py``.
"""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import evcs_gym
from evcs_gym.cli import main as cli_main
from evcs_gym.wrappers import make_vector_env

pytestmark = pytest.mark.slow

SMOKE = {"ue_max_iterations": 2, "warm_start_max_iterations": 2}
LARGE = ["berlin_friedrichshain", "anaheim"]
SET = [arg for key, value in SMOKE.items() for arg in ("--set", f"{key}={value}")]


@pytest.fixture(scope="module", params=LARGE)
def large(request) -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario(request.param, **SMOKE)


def test_gym_env_steps_with_every_station(large):
    env = gym.make("EVCSPricing-v0", scenario=large)
    obs, info = env.reset(seed=0)
    assert env.action_space.shape == (large.n_agents * large.n_periods,)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert math.isfinite(reward) and terminated
    assert set(info["rewards"]) == set(large.agent_names)
    env.close()


def test_parallel_env_passes_the_api_test(large):
    env = evcs_gym.parallel_env(scenario=large)
    parallel_api_test(env, num_cycles=2)
    obs, _ = env.reset(seed=1)
    actions = {a: env.action_space(a).sample() for a in env.agents}
    _, rewards, *_ = env.step(actions)
    assert len(rewards) == large.n_agents and all(math.isfinite(r) for r in rewards.values())


def test_vector_env_steps_the_repeated_game(large):
    venv = make_vector_env(num_envs=2, scenario=large, rounds=2, n_workers=2)
    try:
        obs, _ = venv.reset(seed=0)
        agent = large.agent_names[0]
        actions = {a: np.stack([venv.action_space(a).sample()] * 2) for a in venv.agents}
        obs, rewards, *_ = venv.step(actions)
        assert rewards[agent].shape == (2,) and np.isfinite(rewards[agent]).all()
        # the history observation grows with the stations: recorded for the docs
        print(f"{large.name}: observation size per agent {obs[agent].shape[1]}")
    finally:
        venv.close()


@pytest.mark.parametrize("algo", ["maddpg", "iddpg", "mfddpg"])
def test_each_baseline_trains_and_verifies(large, algo, tmp_path, capsys):
    out = tmp_path / f"{large.name}-{algo}"
    code = cli_main(
        [
            "train",
            "--scenario",
            large.name,
            "--algo",
            algo,
            "--budget",
            "4",
            "--num-envs",
            "2",
            "--workers",
            "2",
            "--rounds",
            "0",
            "--check-every",
            "1",
            "--verify-budget",
            "2",
            "--verify-grid",
            "1",
            "--verify-seeds",
            "1",
            "--verify-search-seeds",
            "1",
            "--out",
            str(out),
            "--quiet",
            *SET,
        ]  # fmt: skip
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["final_pure_prices"]) == set(large.agent_names)
    assert math.isfinite(summary["verified_exploitability"]["relative_nash_conv"])
    assert "verified NashConv" in capsys.readouterr().out


def test_exploit_and_solve(large, tmp_path, capsys):
    assert (
        cli_main(
            [
                "exploit",
                "--scenario",
                large.name,
                "--budget-per-station",
                "1",
                "--grid",
                "1",
                "--workers",
                "2",
                "--json",
                *SET,
            ]  # fmt: skip
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert len(report["deviations"]) == large.n_agents
    assert math.isfinite(report["relative_nash_conv"])
    out = tmp_path / "solve.json"
    assert (
        cli_main(
            [
                "solve",
                "--scenario",
                large.name,
                "--budget-per-station",
                "1",
                "--rounds",
                "1",
                "--budget",
                str(2 * large.n_agents + 2),
                "--workers",
                "2",
                "--out",
                str(out),
                *SET,
            ]  # fmt: skip
        )
        == 0
    )
    solved = json.loads(out.read_text())
    assert set(solved["prices"]) == set(large.agent_names)
