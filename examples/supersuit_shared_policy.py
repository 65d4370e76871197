"""A policy shared by all stations: SuperSuit vector env + Stable-Baselines3 PPO.

The repeated game (:class:`~evcs_gym.wrappers.HistoryWrapper`: each station sees the
last round's prices of everyone, its own flows and its one-hot id) with actions in
[-1, 1] (:class:`~evcs_gym.wrappers.RescaleActions`) is turned into a Gymnasium-style
vector env with one slot per station (``supersuit.pettingzoo_env_to_vec_env_v1``), then
copied ``--num-vec-envs`` times (``supersuit.concat_vec_envs_v1``) for SB3's PPO. All
stations share one policy, which SuperSuit requires to be possible: every station needs
the same observation and action spaces — true when all stations share price bounds, as on
the bundled scenarios.

Note: SuperSuit 3.11's SB3 wrapper cannot forward ``seed()`` to its Gymnasium 1.x vector
env, so the model is built without ``seed=`` and seeding happens through
``set_random_seed`` and a seeded first ``reset``.

Run::

    python examples/supersuit_shared_policy.py --scenario tiny --total-timesteps 400
    python examples/supersuit_shared_policy.py --scenario siouxfalls --total-timesteps 4000

Prints the prices the shared policy posts for each station in the last round of an
episode and the stations' revenues.
Measured on ``tiny`` with the defaults (4,032 station-steps, 395 s on 2 cores shared with
other jobs; ``benchmarks/results/example_supersuit_shared_policy_tiny.txt``):
both stations post 0.50 in periods 1-3 and ~1.43 in period 4, total revenue 6,750 — the
competitive outcome (both stations at the lower bound in periods 1-3 is where
best-response dynamics end on ``tiny`` too; see docs/guides/baselines.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import supersuit as ss
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.utils import set_random_seed

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper, RescaleActions


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="siouxfalls", help="bundled scenario or folder")
    parser.add_argument(
        "--total-timesteps", type=int, default=4000, help="station-steps (agents x rounds)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds per episode")
    parser.add_argument("--num-vec-envs", type=int, default=1, help="copies of the game")
    parser.add_argument("--num-cpus", type=int, default=0, help="SuperSuit worker processes")
    parser.add_argument("--n-steps", type=int, default=32, help="PPO rollout length per slot")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def make_game(scenario: str, rounds: int) -> RescaleActions:
    env = evcs_gym.parallel_env(scenario=scenario, reward_scale="scenario")
    return RescaleActions(HistoryWrapper(env, rounds=rounds, k=1, agent_id=True))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    set_random_seed(args.seed)
    game = make_game(args.scenario, args.rounds)
    vec = ss.pettingzoo_env_to_vec_env_v1(game)
    vec = ss.concat_vec_envs_v1(
        vec, args.num_vec_envs, num_cpus=args.num_cpus, base_class="stable_baselines3"
    )
    vec.venv.reset(seed=args.seed)
    n_steps = max(2, min(args.n_steps, args.total_timesteps // vec.num_envs))
    model = PPO(
        "MlpPolicy",
        vec,
        n_steps=n_steps,
        batch_size=n_steps * vec.num_envs,
        n_epochs=5,
        gamma=0.5,
        verbose=0,
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.total_timesteps)
    seconds = time.perf_counter() - t0
    vec.close()

    # play one episode with the shared policy (deterministic) on a fresh copy
    game = make_game(args.scenario, args.rounds)
    obs, _ = game.reset(seed=args.seed + 1)
    infos: dict[str, dict[str, Any]] = {}
    while game.agents:
        actions = {a: model.predict(obs[a], deterministic=True)[0] for a in game.agents}
        obs, _, _, _, infos = game.step(actions)
    prices = {a: infos[a]["prices"] for a in game.possible_agents}
    revenue = {a: infos[a]["revenue"] for a in game.possible_agents}

    print(
        f"PPO shared policy on {args.scenario}: {model.num_timesteps} station-steps "
        f"({vec.num_envs} slots) in {seconds:.1f} s"
    )
    print(f"prices in round {args.rounds} of a greedy episode (currency/kWh per period):")
    for agent in game.possible_agents:
        line = " ".join(f"{p:.2f}" for p in prices[agent])
        print(f"  station {agent:>4}: {line}   revenue {revenue[agent]:10.1f}")
    print(f"total revenue: {sum(revenue.values()):.1f}")
    game.close()
    return {"prices": prices, "revenue": revenue, "timesteps": int(model.num_timesteps)}


if __name__ == "__main__":
    main()
