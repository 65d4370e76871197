"""TorchRL MADDPG / IDDPG on the pricing game: ``DDPGLoss`` + ``MultiAgentMLP``, then verified.

Every station is one agent of the group ``"stations"`` (``make_batched_env``: TorchRL's
``PettingZooWrapper`` with one group, the global state and numeric infos, two copies
with distinct seeds, stepped in this process; ``--parallel``: a TorchRL ``ParallelEnv``
with a worker per copy). Each station has its own actor (``MultiAgentMLP``, no parameter
sharing: the stations compete) and its own critic: ``--algo maddpg`` gives every critic
all stations' observations and actions (``centralized=True``), ``--algo iddpg`` only its
own (``centralized=False``). The critics learn with TorchRL's ``DDPGLoss`` (TD(0)
targets, soft target updates); the actors with ``own_value_actor_loss``: each station
ascends its own critic only, the others' actions held at their replayed values.
``DDPGLoss``'s own actor loss would let each actor follow every station's centralised
critic, i.e. the stations' joint revenue — collusion, not competition. The default
game is the one-step stage game (a constant context observation, so each learned actor
is a pure price profile); ``--rounds 10`` trains on the repeated game instead.

The budget counts simulator evaluations: each env step of each copy is one dynamic
user equilibrium. TorchRL's tutorial sizes (thousands of frames per batch, a million
frames) would take days, so everything is shrunk and matched to
``evcs_gym.baselines`` (``MADDPGConfig`` / ``IDDPGConfig``: 64x64 networks, learning
rates, discount 0, exploration 0.1 of the price range decaying to a floor, about one
gradient update per evaluation, the small pre-tanh penalty; IDDPG's short replay memory
and slow actor; the baselines play the repeated game, this example the stage game by
default). At the end
the learned pure prices are verified in the simulator with
``evcs_gym.equilibrium.exploitability``: each station's best unilateral deviation is
searched (``--verify-budget`` evaluations per station, on seed 0), then re-evaluated
on ``--verify-seeds`` seeds, which gives NashConv ± standard error.

Run::

    python examples/torchrl_pricing.py --algo maddpg --scenario tiny --budget 600
    python examples/torchrl_pricing.py --algo iddpg --scenario tiny --budget 600
    EVCS_GYM_SMOKE=1 python examples/torchrl_pricing.py   # CI smoke budget (--smoke)

Printed on ``tiny`` (seed 0, 600 training evaluations; the verification: 32 evaluations
per station on seed 0, gains re-evaluated on seeds 0-3; 2 cores shared with other jobs;
full output in ``benchmarks/results/integrations_torchrl_*_tiny.txt``)::

    MADDPG  A 0.521 1.060 1.432 1.996 | B 0.699 1.095 0.503 1.981
            verified NashConv 20.57% ± 0.43% of total revenue 10,767 (B gains 30.3% ± 0.7%,
            A 10.1% ± 0.5%); 600 + 65 evaluations, 170 s
    IDDPG   A 0.779 0.876 0.785 1.355 | B 0.784 0.696 1.116 1.279
            verified NashConv 13.26% ± 0.73% of total revenue 10,662 (B gains 18.7% ± 0.3%,
            A 8.0% ± 1.4%); 600 + 72 evaluations, 130 s

Neither is near an equilibrium after 600 evaluations (``evcs-gym solve`` reaches 0 % on
``tiny`` with 372, both stations at the lower bound): the stage game is Bertrand-like
and the learners are still at mid-range prices in some periods.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, RandomSampler, ReplayBuffer
from torchrl.modules import AdditiveGaussianModule, MultiAgentMLP, ProbabilisticActor, TanhDelta
from torchrl.objectives import DDPGLoss, SoftUpdate, ValueEstimators

import evcs_gym
from evcs_gym.equilibrium import add_verification_arguments, verify_from_args
from evcs_gym.integrations.torchrl import GROUP, learned_prices, make_batched_env, make_torchrl_env

SMOKE = os.environ.get("EVCS_GYM_SMOKE", "") not in ("", "0")


@dataclass
class Config:
    """Hyper-parameters (the ``evcs_gym.baselines`` defaults; IDDPG differs as there)."""

    hidden: tuple[int, ...] = (64, 64)
    """Hidden widths of every actor and critic MLP."""
    actor_lr: float = 1e-3
    """Adam rate of the actors (IDDPG: 1e-4, so each critic tracks the current rival)."""
    critic_lr: float = 3e-3
    """Adam rate of the critics (plain regression on rewards at discount 0)."""
    batch_size: int = 64
    """Minibatch of one gradient update."""
    buffer_size: int = 100_000
    """Replay rows (IDDPG: 256: an independent critic must forget old rival prices)."""
    tau: float = 0.01
    """Soft target update rate."""
    gamma: float = 0.0
    """Discount: 0 fits the stage game's immediate reward (the one-step game ends anyway)."""
    noise: float = 0.1
    """Initial exploration std, as a share of the price range."""
    noise_min: float = 0.02
    """Exploration floor, same units (IDDPG: 0.05)."""
    steps_per_batch: int = 5
    """Env steps per copy and collector iteration (TorchRL's tutorials: 6,000 frames per
    batch; here a frame is a traffic simulation)."""
    updates_per_evaluation: float = 1.0
    """Gradient updates per collected evaluation (the baselines make one)."""
    actor_reg: float = 1e-3
    """Weight of the pre-tanh penalty in the actor loss (as the baselines)."""

    @classmethod
    def for_algo(cls, algo: str) -> Config:
        if algo == "iddpg":
            return cls(actor_lr=1e-4, buffer_size=256, noise_min=0.05)
        return cls()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--algo", choices=["maddpg", "iddpg"], default="maddpg")
    p.add_argument("--scenario", default="tiny", help="bundled scenario or folder")
    p.add_argument("--budget", type=int, default=600, help="training evaluations (env steps)")
    p.add_argument("--num-envs", type=int, default=2, help="game copies stepped per step")
    p.add_argument(
        "--parallel",
        action="store_true",
        help="one worker process per copy (TorchRL ParallelEnv; each worker imports torch and "
        "torchrl first, which pays off only for runs of many minutes)",
    )
    p.add_argument("--rounds", type=int, default=None, help="repeated game of this many rounds")
    add_verification_arguments(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="tiny CI budget (or EVCS_GYM_SMOKE=1)")
    args = p.parse_args(argv)
    if args.smoke or SMOKE:
        args.budget, args.verify_budget, args.verify_seeds = 40, 4, 2
        args.workers = 1
    if args.budget < 1 or args.num_envs < 1 or args.verify_seeds < 2:
        p.error("--budget and --num-envs must be positive, --verify-seeds at least 2")
    return args


def build_agents(env: Any, cfg: Config, centralized: bool) -> tuple[Any, Any, Any]:
    """The deterministic policy, its exploring version and the critic."""
    obs_dim = env.observation_spec[GROUP, "observation"].shape[-1]
    spec = env.full_action_spec[GROUP, "action"]
    while spec.ndim > 2:  # a batched env's spec: (num_envs, n_stations, n_periods)
        spec = spec[0]
    n_agents, act_dim = spec.shape
    low, high = spec.space.low, spec.space.high

    def mlp(n_in: int, n_out: int, centralized: bool) -> MultiAgentMLP:
        return MultiAgentMLP(
            n_agent_inputs=n_in,
            n_agent_outputs=n_out,
            n_agents=n_agents,
            centralized=centralized,
            share_params=False,  # competing stations: a network each
            depth=len(cfg.hidden),
            num_cells=list(cfg.hidden),
            activation_class=nn.ReLU,
        )

    actor_net = TensorDictModule(
        mlp(obs_dim, act_dim, False),
        in_keys=[(GROUP, "observation")],
        out_keys=[(GROUP, "param")],
    )
    policy = ProbabilisticActor(  # tanh: actions in [-1, 1], mapped to prices by the env
        actor_net,
        spec=spec,
        in_keys=[(GROUP, "param")],
        out_keys=[(GROUP, "action")],
        distribution_class=TanhDelta,
        distribution_kwargs={"low": low, "high": high},
        return_log_prob=False,
    )
    price_range = float((high - low).mean())  # 2: actions in [-1, 1]
    exploration = TensorDictSequential(
        policy,
        AdditiveGaussianModule(
            spec=spec,
            sigma_init=cfg.noise * price_range,
            sigma_end=cfg.noise_min * price_range,
            annealing_num_steps=1,  # set by train() to the training budget
            action_key=(GROUP, "action"),
        ),
    )
    critic = TensorDictSequential(
        TensorDictModule(
            lambda obs, act: torch.cat([obs, act], dim=-1),
            in_keys=[(GROUP, "observation"), (GROUP, "action")],
            out_keys=[(GROUP, "obs_action")],
        ),
        TensorDictModule(  # Q_i(all obs, all actions) for MADDPG, Q_i(o_i, a_i) for IDDPG
            mlp(obs_dim + act_dim, 1, centralized),
            in_keys=[(GROUP, "obs_action")],
            out_keys=[(GROUP, "state_action_value")],
        ),
    )
    return policy, exploration, critic


def own_value_actor_loss(sample: Any, policy: Any, critic: Any, actor_reg: float) -> Any:
    """Each station ascends its own critic only, the other stations' actions held fixed.

    ``DDPGLoss``'s actor loss is ``-mean_i Q_i(o, pi(o))`` with every station's action
    from its live actor: with a centralised critic each actor then follows the gradient
    of *all* stations' values — the stations' joint revenue, i.e. collusion, which is
    right for a cooperative team and wrong for competing stations. Here the critic is
    evaluated ``n`` times; in copy ``i`` only station ``i``'s action comes from its actor
    and the others' are the sampled (replayed) ones, as in MADDPG's paper and
    ``evcs_gym.baselines``, and station ``i``'s loss is ``-Q_i`` of copy ``i``. For
    IDDPG (``Q_i(o_i, a_i)``) this equals ``DDPGLoss``'s actor loss. Plus the
    baselines' small penalty on the pre-tanh output, which keeps the tanh from
    saturating at a bound.
    """
    obs = sample[GROUP, "observation"]
    replayed = sample[GROUP, "action"]
    td = policy(sample.select((GROUP, "observation")).clone())
    live, preact = td[GROUP, "action"], td[GROUP, "param"]  # (batch, n, periods)
    n = live.shape[-2]
    own = torch.eye(n, dtype=live.dtype).reshape(n, *([1] * (live.dim() - 2)), n, 1)
    joint = own * live + (1 - own) * replayed  # (n copies, batch, n, periods)
    copies = TensorDict(
        {GROUP: {"observation": obs.expand(n, *obs.shape), "action": joint}},
        batch_size=joint.shape[:-2],
    )
    q = critic(copies)[GROUP, "state_action_value"]  # (n copies, batch, n, 1)
    index = torch.arange(n)
    q_own = q[index, ..., index, 0]  # copy i, station i: (n, batch)
    return -q_own.mean() + actor_reg * preact.pow(2).mean()


def step(optim: dict[str, Any], name: str, loss: Any) -> None:
    """One Adam step of ``optim[name]`` (every gradient zeroed first: the actor loss
    reaches the critic's parameters too, which only the value loss may move)."""
    for opt in optim.values():
        opt.zero_grad()
    loss.backward()
    optim[name].step()


def train(args: argparse.Namespace, env: Any, cfg: Config) -> tuple[Any, int]:
    """Collect ``args.budget`` evaluations and learn; returns the policy and evaluations."""
    policy, exploration, critic = build_agents(env, cfg, centralized=args.algo == "maddpg")
    frames_per_batch = args.num_envs * cfg.steps_per_batch
    iterations = max(1, math.ceil(args.budget / frames_per_batch))
    exploration[-1].annealing_num_steps = max(1, iterations * frames_per_batch)
    loss = DDPGLoss(actor_network=policy, value_network=critic, delay_value=True)
    loss.set_keys(
        state_action_value=(GROUP, "state_action_value"),
        reward=(GROUP, "reward"),
        done=(GROUP, "done"),
        terminated=(GROUP, "terminated"),
    )
    loss.make_value_estimator(ValueEstimators.TD0, gamma=cfg.gamma)
    target = SoftUpdate(loss, tau=cfg.tau)
    optim = {
        "actor": torch.optim.Adam(policy.parameters(), lr=cfg.actor_lr),
        "value": torch.optim.Adam(critic.parameters(), lr=cfg.critic_lr),
    }
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(cfg.buffer_size),
        sampler=RandomSampler(),
        batch_size=cfg.batch_size,
    )
    learning_starts = min(64, max(8, args.budget // 8))  # as `evcs-gym train`
    collector = Collector(
        env,
        exploration,
        frames_per_batch=frames_per_batch,
        total_frames=iterations * frames_per_batch,
    )
    evaluations = 0
    try:
        for i, batch in enumerate(collector):
            evaluations += batch.numel()
            buffer.extend(batch.reshape(-1).exclude((GROUP, "info"), ("next", GROUP, "info")))
            if len(buffer) >= learning_starts:
                for _ in range(round(cfg.updates_per_evaluation * batch.numel())):
                    sample = buffer.sample()
                    value_loss, _ = loss.loss_value(sample)  # TD(0) on target networks
                    step(optim, "value", value_loss)
                    step(
                        optim, "actor", own_value_actor_loss(sample, policy, critic, cfg.actor_reg)
                    )
                    target.step()
            exploration[-1].step(batch.numel())
            collector.update_policy_weights_()
            if i % 10 == 0 or i == iterations - 1:
                revenue = batch["next", GROUP, "info", "revenue"]
                revenue = revenue.reshape(-1, revenue.shape[-1])  # (evaluations, stations)
                print(
                    f"iter {i + 1:3d}/{iterations}  evaluations {evaluations:5d}  mean revenue "
                    + " ".join(f"{v:9.1f}" for v in revenue.mean(0).tolist()),
                    flush=True,
                )
    finally:
        collector.shutdown()  # closes env too (TorchRL's collectors own their env)
    return policy, evaluations


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    cfg = Config.for_algo(args.algo)
    print(f"loaded {nd.summary()}")
    print(
        f"TorchRL {args.algo.upper()}: {args.budget} training evaluations on {args.num_envs} "
        f"copies ({'one-step game' if args.rounds is None else f'{args.rounds} rounds'})"
    )
    env = make_batched_env(
        args.num_envs, nd, seed=args.seed, parallel=args.parallel, rounds=args.rounds
    )
    policy, evaluations = train(args, env, cfg)  # the collector closes env at the end
    prices = learned_prices(
        policy, make_torchrl_env(nd, rounds=args.rounds, seed=args.seed), nd, rounds=args.rounds
    )
    if args.rounds is not None:  # the deterministic rollout that read the prices
        evaluations += args.rounds
    train_time = time.perf_counter() - t0
    cert = verify_from_args(nd, prices, args, "learned pure prices")
    wall = time.perf_counter() - t0
    print(
        f"evaluations: {evaluations} training + {cert.evaluations} verification = "
        f"{evaluations + cert.evaluations}; wall time {wall:.0f} s (training {train_time:.0f} s)"
    )
    return {
        "algo": args.algo,
        "prices": prices,
        "certificate": cert,
        "evaluations": evaluations,
        "verify_evaluations": cert.evaluations,
        "wall_time": wall,
    }


if __name__ == "__main__":
    main()
