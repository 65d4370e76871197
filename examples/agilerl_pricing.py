"""AgileRL MADDPG / MATD3 on the repeated pricing game, verified in the simulator.

Each station is an AgileRL agent with its own actor and critic (station names have no
``_``, so AgileRL does not group them). The game runs as
``evcs_gym.integrations.agilerl.make_vect_envs``: ``--num-envs`` copies of the repeated
game (``HistoryWrapper``, ``--rounds`` rounds: AgileRL's vector env overwrites the
outcome of an episode's last step with its reset, which in the one-step game would be
every step) in worker processes. The loop is AgileRL's own off-policy loop
(``train_multi_agent_off_policy``) without its evolutionary HPO, which would spend
evaluations on a population. It stops after ``--budget`` simulator evaluations, takes
the stations' deterministic prices at the last observation and verifies them with
``evcs_gym.equilibrium.exploitability``: each station's best unilateral deviation searched
in the simulator with ``--verify-budget`` evaluations, every gain re-evaluated on
``--verify-seeds`` seeds.

Run::

    python examples/agilerl_pricing.py --algo maddpg --scenario tiny --budget 600
    python examples/agilerl_pricing.py --algo matd3 --scenario tiny --budget 600

On ``tiny`` (2 cores shared with other jobs; full output in
``benchmarks/results/integrations_agilerl_{maddpg,matd3}_tiny.txt``) the first printed::

    learned pure prices (deterministic actions at the last observation):
           A: 0.500 0.500 0.500 1.998
           B: 0.500 0.500 0.500 0.501
    verified NashConv: 0.00% ± 0.00% of total revenue, max relative gain 0.00%
    evaluations: 600 training + 57 verification; wall time 70 s (training 66 s)

and MATD3 (both stations at 0.50 in periods 1-3 as well) verified NashConv
0.00 % ± 0.00 %, 600 + 58 evaluations, 55 s: both reach the competitive outcome.
Verification: 32 evaluations per station on seed 0, gains re-evaluated on seeds 0-3.
(The MARL grid's one-step ``tiny`` cells run this example with ``--rounds 1``; its
seed-0 MADDPG cell ended at 16.90 % ± 0.31 %, ``benchmarks/results/marl/``.)

``EVCS_GYM_SMOKE=1`` (or ``--smoke``) runs a smoke-test budget for CI.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from agilerl.algorithms import MADDPG, MATD3
from agilerl.components.data import MultiAgentTransition, transition_to_tensordict
from agilerl.components.replay_buffer import ReplayBuffer

import evcs_gym
from evcs_gym.equilibrium import add_verification_arguments, verify_from_args
from evcs_gym.integrations.agilerl import (
    agent_spaces,
    learned_prices,
    make_vect_envs,
    step_values,
    true_next_obs,
)

SMOKE = {"budget": 16, "rounds": 2, "verify_budget": 6, "verify_seeds": 2, "workers": 1}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=["maddpg", "matd3"], default="maddpg")
    parser.add_argument("--scenario", default="tiny", help="bundled scenario or folder")
    parser.add_argument(
        "--budget", type=int, default=600, help="simulator evaluations to train with"
    )
    parser.add_argument("--num-envs", type=int, default=2, help="game copies (processes)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds per episode")
    add_verification_arguments(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="tiny budgets (CI)")
    args = parser.parse_args(argv)
    if args.smoke or os.environ.get("EVCS_GYM_SMOKE") == "1":
        for key, value in SMOKE.items():
            current = getattr(args, key)  # None: the search's own cap
            setattr(args, key, value if current is None else min(current, value))
    if args.verify_seeds < 2:
        parser.error("--verify-seeds must be >= 2 (standard errors need two seeds)")
    return args


def make_agent(algo: str, env: Any, budget: int, seed: int, gamma: float = 0.0) -> MADDPG | MATD3:
    """AgileRL's defaults, shrunk: every env step here costs a traffic simulation.

    ``gamma``: the discount; 0 (stage payoffs) unless a study of the repeated game asks
    for tomorrow's revenue to count (``benchmarks/studies/repeated_market.py``: 0.95).
    """
    torch.manual_seed(seed)
    obs_spaces, act_spaces, ids = agent_spaces(env)
    cls = MADDPG if algo == "maddpg" else MATD3
    return cls(
        obs_spaces,
        act_spaces,
        agent_ids=ids,
        vect_noise_dim=env.num_envs,
        # Gaussian noise (AgileRL: Ornstein-Uhlenbeck, made for physical inertia)
        O_U_noise=False,
        expl_noise=0.1,
        batch_size=min(64, max(8, budget // 8)),  # AgileRL: 64, here at most 1/8 of the run
        learn_step=1,  # AgileRL: 5; an update is cheap next to a simulation
        gamma=gamma,  # 0: stage payoffs, as evcs-gym's own MADDPG (AgileRL: 0.95)
        lr_actor=1e-3,
        lr_critic=3e-3,  # AgileRL: 1e-2
    )


def train(
    agent: MADDPG | MATD3,
    env: Any,
    budget: int,
    seed: int,
    on_step: Callable[[dict[str, np.ndarray], dict[str, Any]], None] | None = None,
) -> tuple[dict[str, np.ndarray], int, list[dict[str, float]]]:
    """AgileRL's off-policy loop for ``budget`` evaluations.

    ``on_step``, if given, is called with each step's real next observations and its infos (a study
    records the deterministic prices along training with it). Returns the last real
    observation, the evaluations used and the mean revenue per station of each fifth of
    the run.
    """
    n = env.num_envs
    memory = ReplayBuffer(max_size=10_000)
    obs, infos = env.reset(seed=seed)
    evaluations, revenues, log = 0, [], []
    report_every = max(n, budget // 5)
    last_obs = obs
    while evaluations < budget:
        action, raw_action = agent.get_action(obs, infos)
        next_obs, rewards, terms, truncs, infos = env.step(action)
        evaluations += n
        last_obs = true_next_obs(next_obs, infos)  # the reset's obs where a round ended
        if on_step is not None:
            on_step(last_obs, infos)
        transition = transition_to_tensordict(
            MultiAgentTransition(
                obs=obs, action=raw_action, reward=rewards, next_obs=last_obs, done=terms
            )
        )
        transition.batch_size = torch.Size([n])
        memory.add(transition)
        if len(memory) >= agent.batch_size:
            for _ in range(max(1, n // agent.learn_step)):
                agent.learn(memory.sample(agent.batch_size))
        done = [i for i in range(n) if all(truncs[a][i] or terms[a][i] for a in truncs)]
        agent.reset_action_noise(done)
        revenues.append({a: float(v.mean()) for a, v in step_values(infos, "reward_raw").items()})
        if evaluations % report_every < n or evaluations >= budget:
            mean = {a: float(np.mean([r[a] for r in revenues])) for a in revenues[0]}
            log.append(mean)
            print(
                f"  {evaluations:5d} evaluations: mean revenue "
                + ", ".join(f"{a} {v:.0f}" for a, v in mean.items()),
                flush=True,
            )
            revenues = []
        obs = next_obs
    return last_obs, evaluations, log


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"loaded {nd.summary()}")
    env = make_vect_envs(args.num_envs, scenario=nd, rounds=args.rounds)
    try:
        agent = make_agent(args.algo, env, args.budget, args.seed)
        print(
            f"AgileRL {args.algo.upper()}: {args.budget} evaluations, {args.num_envs} copies x "
            f"{args.rounds} rounds, batch {agent.batch_size}"
        )
        last_obs, evaluations, log = train(agent, env, args.budget, args.seed)
    finally:
        env.close()
    train_s = time.perf_counter() - t0
    prices = learned_prices(agent, last_obs)
    cert = verify_from_args(
        nd, prices, args, "learned pure prices (deterministic actions at the last observation)"
    )
    wall = time.perf_counter() - t0
    print(
        f"evaluations: {evaluations} training + {cert.evaluations} verification; "
        f"wall time {wall:.0f} s (training {train_s:.0f} s)"
    )
    return {
        "prices": prices,
        "evaluations": evaluations,
        "verify_evaluations": cert.evaluations,
        "certificate": cert,
        "relative_nash_conv": cert.relative_nash_conv,
        "relative_nash_conv_se": cert.relative_nash_conv_se,
        "gains": {a: d.relative_gain for a, d in cert.deviations.items()},
        "revenue_log": log,
        "wall_s": wall,
    }


if __name__ == "__main__":
    main()
