"""TorchRL adapter: specs, one group, state and infos, seeds, pickling, training, the example.

Runs in its own environment (``nox -s torchrl``: torchrl 0.14.1, tensordict 0.14.*).
"""

from __future__ import annotations

import pickle

import pytest

torchrl = pytest.importorskip("torchrl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import evcs_gym  # noqa: E402
from evcs_gym.integrations.torchrl import (  # noqa: E402
    GROUP,
    copy_seeds,
    env_factories,
    learned_prices,
    make_batched_env,
    make_torchrl_env,
)
from evcs_gym.wrappers.numeric_info import NUMERIC_INFO_KEYS  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


@pytest.mark.parametrize("rounds", [None, 3])
def test_specs_one_group_state_and_infos(rounds):
    env = make_torchrl_env("tiny", rounds=rounds, seed=0)
    check_env_specs(env)
    assert env.group_map == {GROUP: ["A", "B"]}
    obs_dim = 4 if rounds is None else 14
    assert env.observation_spec[GROUP, "observation"].shape == (2, obs_dim)
    assert env.observation_spec["state"].shape == ((4,) if rounds is None else (16,))
    spec = env.full_action_spec[GROUP, "action"]
    assert spec.shape == (2, 4)
    assert torch.all(spec.space.low == -1) and torch.all(spec.space.high == 1)
    info_spec = env.observation_spec[GROUP, "info"]
    assert set(info_spec.keys()) == set(NUMERIC_INFO_KEYS)
    assert info_spec["flows"].shape == (2, 4) and info_spec["revenue"].shape == (2,)

    reset = env.reset()
    assert set(reset[GROUP, "info"].keys()) == set(NUMERIC_INFO_KEYS)
    assert torch.all(reset[GROUP, "info", "revenue"] == 0)
    assert "state" in reset.keys()
    td = env.rollout(rounds or 1)
    nxt = td["next"]
    assert "state" in nxt.keys()
    revenue = nxt[GROUP, "info", "revenue"][-1]
    reward = nxt[GROUP, "reward"][-1, :, 0]
    torch.testing.assert_close(reward * 2000.0, revenue, rtol=1e-5, atol=1e-2)  # tiny's scale
    assert revenue.sum() > 0
    assert torch.all(nxt[GROUP, "info", "round"][-1] == (rounds or 1))
    prices = nxt[GROUP, "info", "prices"][-1]
    assert torch.all((prices >= 0.5) & (prices <= 2.0))
    assert bool(nxt["done"][-1])


def test_actions_in_minus_one_one_are_mapped_to_prices():
    env = make_torchrl_env("tiny", seed=0)
    td = env.reset()
    td[GROUP, "action"] = torch.tensor([[-1.0, 0.0, 1.0, 0.5], [0.0] * 4])
    out = env.step(td)
    prices = out["next", GROUP, "info", "prices"]
    torch.testing.assert_close(prices[0], torch.tensor([0.5, 1.25, 2.0, 1.625]))
    raw = make_torchrl_env("tiny", seed=0, rescale_actions=False)
    assert torch.all(raw.full_action_spec[GROUP, "action"].space.high == 2.0)


def test_bad_group_raises():
    with pytest.raises(ValueError, match="group"):
        make_torchrl_env("tiny", group="")


def test_copy_seeds_distinct_and_picklable_factories():
    seeds = copy_seeds(0, 4)
    assert len(set(seeds)) == 4 and not set(seeds) & set(copy_seeds(1, 4))
    factories = pickle.loads(pickle.dumps(env_factories(2, "tiny", seed=0)))
    assert [f.keywords["seed"] for f in factories] == seeds[:2]
    assert factories[0]().group_map == {GROUP: ["A", "B"]}


def test_batched_copies_evaluate_different_seeds():
    env = make_batched_env(2, "tiny", seed=0)
    try:
        check_env_specs(env)
        td = env.reset()
        td[GROUP, "action"] = torch.zeros(2, 2, 4)  # both copies: the same prices
        # one seed would give bit-identical copies; the revenues may agree anyway (with
        # station tastes every seed reaches the same split at these prices), the UE's
        # path to them does not
        out = env.step(td)["next", GROUP, "info", "relative_gap"]
        assert not torch.equal(out[0], out[1])
    finally:
        env.close()


def test_parallel_env_workers_step_like_the_serial_env():
    envs = [make_batched_env(2, "tiny", seed=0, parallel=p) for p in (False, True)]
    try:
        steps = []
        for env in envs:
            td = env.reset()
            td[GROUP, "action"] = torch.linspace(-1, 1, 16).reshape(2, 2, 4)
            steps.append(env.step(td)["next", GROUP])
        serial, parallel = steps
        assert parallel["info", "revenue"].shape == (2, 2)
        assert parallel["info", "revenue"].sum() > 0
        for key in ("reward", ("info", "revenue"), ("info", "relative_gap")):
            assert torch.equal(serial[key], parallel[key]), key  # bit for bit
    finally:
        for env in envs:
            env.close()


def test_learned_prices_within_bounds_and_deterministic(load_script):
    example = load_script("examples", "torchrl_pricing")
    nd = evcs_gym.load_scenario("tiny")
    env = make_torchrl_env("tiny", seed=0)
    policy, exploration, _ = example.build_agents(env, example.Config(), centralized=True)
    prices = learned_prices(policy, env, nd)
    assert set(prices) == {"A", "B"}
    for p in prices.values():
        assert p.shape == (4,) and np.all((p >= 0.5) & (p <= 2.0))
    # an untrained actor starts in the middle of the bounds (TanhDelta on [-1, 1])
    assert all(abs(float(p.mean()) - 1.25) < 0.3 for p in prices.values())
    again = learned_prices(exploration, env, nd)  # exploration off when reading prices
    for a in prices:
        np.testing.assert_array_equal(prices[a], again[a])
    repeated = make_torchrl_env("tiny", rounds=2, seed=0)
    policy, _, _ = example.build_agents(repeated, example.Config(), centralized=False)
    prices = learned_prices(policy, repeated, nd, rounds=2)
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in prices.values())


def test_learned_prices_rejects_another_scenario_shape(load_script):
    example = load_script("examples", "torchrl_pricing")
    env = make_torchrl_env("tiny", seed=0)
    policy, _, _ = example.build_agents(env, example.Config(), centralized=True)
    other = evcs_gym.load_scenario("tiny", charging_periods=2)
    with pytest.raises(ValueError, match="shape"):
        learned_prices(policy, env, other)


@pytest.mark.parametrize("algo", ["maddpg", "iddpg"])
def test_short_training_updates_the_critic_and_actor(algo, load_script):
    example = load_script("examples", "torchrl_pricing")
    args = example.parse_args(["--algo", algo, "--budget", "20", "--num-envs", "2"])
    args.budget = 20  # 2 iterations of 10 evaluations, whatever EVCS_GYM_SMOKE says
    env = make_batched_env(2, "tiny", seed=0)
    cfg = example.Config.for_algo(algo)
    cfg.batch_size = 8
    torch.manual_seed(0)
    untrained, _, _ = example.build_agents(env, cfg, centralized=algo == "maddpg")
    torch.manual_seed(0)  # train() builds the same initial networks
    policy, evaluations = example.train(args, env, cfg)
    assert env.is_closed  # the collector closed it
    assert evaluations == 20
    before = dict(untrained.named_parameters())
    moved = [not torch.equal(p, before[n]) for n, p in policy.named_parameters()]
    assert len(moved) == len(before) and all(moved)  # 10 updates after the first batch
    nd = evcs_gym.load_scenario("tiny")
    prices = learned_prices(policy, make_torchrl_env("tiny", seed=1), nd)
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in prices.values())


def test_maddpg_critic_is_centralised_iddpg_is_not(load_script):
    example = load_script("examples", "torchrl_pricing")
    env = make_torchrl_env("tiny", seed=0)
    td = env.reset()
    td[GROUP, "action"] = torch.zeros(2, 4)
    for centralized in (True, False):
        _, _, critic = example.build_agents(env, example.Config(), centralized=centralized)
        base = critic(td.clone())[GROUP, "state_action_value"]
        moved = td.clone()
        moved[GROUP, "action"] = torch.tensor([[0.0] * 4, [0.9] * 4])  # only B's price moves
        value_a = critic(moved)[GROUP, "state_action_value"][0]
        assert (not torch.allclose(value_a, base[0])) == centralized


def test_actor_loss_follows_own_critic_only(load_script):
    """Station A's actor gradient must not move when B's critic changes (DDPGLoss's does)."""
    from tensordict import TensorDict
    from torchrl.objectives import DDPGLoss

    example = load_script("examples", "torchrl_pricing")
    env = make_torchrl_env("tiny", seed=0)
    torch.manual_seed(0)
    policy, _, critic = example.build_agents(env, example.Config(), centralized=True)
    sample = TensorDict(
        {GROUP: {"observation": torch.rand(16, 2, 4), "action": torch.rand(16, 2, 4) * 2 - 1}},
        batch_size=[16],
    )
    last = dict(critic.named_parameters())["module.1.module.params.4.weight"]  # per station

    def actor_grad_of_a(loss_fn):
        policy.zero_grad()
        loss_fn().backward()
        return [p.grad[0].clone() for p in policy.parameters()]  # station A's slice

    def own():
        return example.own_value_actor_loss(sample, policy, critic, 0.0)

    ddpg = DDPGLoss(actor_network=policy, value_network=critic, delay_value=True)
    ddpg.set_keys(state_action_value=(GROUP, "state_action_value"))

    def joint():
        return ddpg.loss_actor(sample)[0]

    before_own, before_joint = actor_grad_of_a(own), actor_grad_of_a(joint)
    with torch.no_grad():
        last[1] += 1.0  # change only station B's critic (its output layer)
    after_own, after_joint = actor_grad_of_a(own), actor_grad_of_a(joint)
    assert all(torch.allclose(a, b) for a, b in zip(before_own, after_own))
    assert not all(torch.allclose(a, b) for a, b in zip(before_joint, after_joint))


def test_example_main_smoke(monkeypatch, capsys, load_script):
    monkeypatch.setenv("EVCS_GYM_SMOKE", "1")
    out = load_script("examples", "torchrl_pricing").main(["--algo", "maddpg"])
    assert out["evaluations"] == 40 and out["verify_evaluations"] > 0
    assert set(out["prices"]) == {"A", "B"}
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in out["prices"].values())
    cert = out["certificate"]
    assert cert.n_seeds == 2 and np.isfinite(cert.relative_nash_conv)
    text = capsys.readouterr().out
    assert "verified NashConv" in text and "evaluations: 40 training" in text
