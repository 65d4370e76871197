"""BenchMARL task: one group, per-copy seeds, specs, pickling, a short Experiment, the example.

Runs in its own environment (``nox -s benchmarl``: benchmarl 1.5.2, torchrl 0.11.*).
"""

from __future__ import annotations

import pickle

import pytest

pytest.importorskip("benchmarl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import evcs_gym  # noqa: E402
from evcs_gym.integrations.benchmarl import EVCSTask, EVCSTaskClass, TaskConfig  # noqa: E402
from evcs_gym.integrations.torchrl import (  # noqa: E402
    GROUP,
    copy_seeds,
    learned_prices,
    make_torchrl_env,
)
from evcs_gym.wrappers.numeric_info import NUMERIC_INFO_KEYS  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_presets_overrides_and_pickling():
    task = EVCSTask.TINY.get_task()
    assert isinstance(task, EVCSTaskClass) and task.config["scenario"] == "tiny"
    assert task.config["rounds"] is None
    assert pickle.loads(pickle.dumps(task)) == task
    assert pickle.loads(pickle.dumps(EVCSTask.SIOUXFALLS)) is EVCSTask.SIOUXFALLS
    assert EVCSTask.SIOUXFALLS_REPEATED.get_task().config["rounds"] == 10
    five = EVCSTask.TINY.get_task({"rounds": 5, "history": {"k": 2}})
    assert five.config["rounds"] == 5 and five.config["scenario"] == "tiny"
    assert five.config["history"] == {"k": 2} and five != task
    assert task.supports_continuous_actions() and not task.supports_discrete_actions()


def test_yaml_overrides(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("rounds: 3\nenv:\n  reward_scale: 1000.0\n")
    task = EVCSTask.TINY.get_from_yaml(str(path))
    assert task.config["rounds"] == 3 and task.config["env"] == {"reward_scale": 1000.0}


@pytest.mark.parametrize(
    "config, match",
    [({"round": 3}, "unknown"), ({"rounds": 0}, "rounds"), ({"history": {"k": 2}}, "history")],
)
def test_bad_config_raises(config, match):
    with pytest.raises(ValueError, match=match):
        EVCSTask.TINY.get_task(config)


@pytest.mark.parametrize("rounds", [None, 3])
def test_env_specs_one_group_state_infos(rounds):
    task = EVCSTask.TINY.get_task({"rounds": rounds})
    env = task.get_env_fun(num_envs=2, continuous_actions=True, seed=0, device="cpu")()
    try:
        assert env.batch_size == (2,)  # already vectorised: BenchMARL does not re-wrap it
        check_env_specs(env)
        assert task.group_map(env) == {GROUP: ["A", "B"]}
        assert task.max_steps(env) == (rounds or 1)
        obs = task.observation_spec(env)
        assert set(obs.keys(True, True)) == {(GROUP, "observation")}
        assert obs[GROUP, "observation"].shape == (2, 4 if rounds is None else 14)
        info = task.info_spec(env)
        assert {k[-1] for k in info.keys(True, True)} == set(NUMERIC_INFO_KEYS)
        assert task.state_spec(env)["state"].shape == ((4,) if rounds is None else (16,))
        action = task.action_spec(env)[GROUP, "action"]
        assert action.shape == (2, 4) and torch.all(action.space.high == 1)
        assert task.action_mask_spec(env) is None
        td = env.rollout(rounds or 1, break_when_any_done=False)
        assert "state" in td["next"].keys()
        revenue = td["next", GROUP, "info", "revenue"]
        assert revenue.shape == (2, rounds or 1, 2) and revenue.sum() > 0
        logged = task.log_info(td)
        assert set(logged) >= {
            f"collection/{GROUP}/revenue_0",
            f"collection/{GROUP}/converged_share",
        }
    finally:
        env.close()


def test_copies_get_distinct_seeds():
    task = EVCSTask.TINY.get_task()
    env = task.get_env_fun(num_envs=2, continuous_actions=True, seed=7, device="cpu")()
    try:
        td = env.reset()
        td[GROUP, "action"] = torch.zeros(2, 2, 4)  # the same prices in both copies
        # one seed would make them bit-identical; the revenues may agree anyway (with
        # station tastes every seed reaches the same split at these prices), the UE's
        # path to them does not
        gap = env.step(td)["next", GROUP, "info", "relative_gap"]
        assert not torch.equal(gap[0], gap[1])
        factory = task.get_env_fun(num_envs=3, continuous_actions=True, seed=7, device="cpu")
        copy = pickle.loads(pickle.dumps(factory))  # BenchMARL may ship it to workers
        assert copy.args[0] == 3 and copy.keywords["seed"] == 7
        assert copy_seeds(7, 3)[:2] == copy_seeds(7, 2)  # copy i's seed depends on (7, i)
    finally:
        env.close()


def test_discrete_actions_rejected():
    with pytest.raises(ValueError, match="continuous"):
        EVCSTask.TINY.get_task().get_env_fun(1, False, 0, "cpu")


def test_short_experiment_maddpg_critic_per_station(tmp_path, load_script):
    example = load_script("examples", "benchmarl_pricing")
    args = example.parse_args(["--algo", "maddpg"])
    args.budget = 20  # 2 iterations of 10 evaluations
    experiment = example.train(args, str(tmp_path))
    assert experiment.total_frames == 20 and experiment.n_iters_performed == 2
    assert experiment.group_map == {GROUP: ["A", "B"]}
    # share_param_critic=False: each station's centralised critic has its own weights,
    # so the two stations' values differ on the same joint input
    critic = experiment.losses[GROUP].value_network
    env = make_torchrl_env("tiny", seed=0)
    td = env.reset()
    td[GROUP, "action"] = torch.zeros(2, 4)
    with torch.no_grad():
        value = critic(td)[GROUP, "state_action_value"]
    assert value.shape == (2, 1) and not torch.allclose(value[0], value[1])
    nd = evcs_gym.load_scenario("tiny")
    prices = learned_prices(experiment.policy, env, nd)
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in prices.values())

    # Documented limitation (module docstring): BenchMARL's MADDPG actor loss is
    # DDPGLoss's, so station A's actor follows B's critic too (the group's joint value).
    loss = experiment.losses[GROUP]
    sample = experiment.replay_buffers[GROUP].sample()

    def actor_grad_of_a():
        for p in loss.actor_network.parameters():
            p.grad = None
        loss.loss_actor(sample)[0].backward()
        return [p.grad[0].clone() for p in loss.actor_network.parameters()]

    before = actor_grad_of_a()
    with torch.no_grad():
        for name, p in loss.value_network.named_parameters():
            if ".mlp.1." in name:  # station B's own critic network (share_param_critic=False)
                p += 0.5
    after = actor_grad_of_a()
    assert not all(torch.allclose(a, b) for a, b in zip(before, after))


def test_short_experiment_mappo(tmp_path, load_script):
    example = load_script("examples", "benchmarl_pricing")
    args = example.parse_args(["--algo", "mappo"])
    args.budget = 20  # one on-policy iteration of 20 evaluations
    experiment = example.train(args, str(tmp_path))
    assert experiment.total_frames == 20


def test_example_main_smoke(monkeypatch, capsys, load_script):
    monkeypatch.setenv("EVCS_GYM_SMOKE", "1")
    out = load_script("examples", "benchmarl_pricing").main(["--algo", "maddpg"])
    assert out["evaluations"] == 40 and out["verify_evaluations"] > 0
    assert set(out["prices"]) == {"A", "B"}
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in out["prices"].values())
    cert = out["certificate"]
    assert cert.n_seeds == 2 and np.isfinite(cert.relative_nash_conv)
    text = capsys.readouterr().out
    assert "verified NashConv" in text and "evaluations: 40 training" in text


def test_task_config_dataclass_defaults():
    assert TaskConfig().scenario == "tiny" and TaskConfig().rounds is None
