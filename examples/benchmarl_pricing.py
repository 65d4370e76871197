"""BenchMARL MADDPG / IDDPG / MASAC / MAPPO on the pricing game, then verified in the simulator.

The task is ``evcs_gym.integrations.benchmarl.EVCSTask`` (all stations in one group
``"stations"``, the global state, numeric infos, distinct seeds per env copy); the
training is BenchMARL's own ``Experiment``. Two settings are changed for a general-sum
game: every algorithm gets ``share_param_critic=False`` and the experiment
``share_policy_params=False``, so each station has its own critic and actor (BenchMARL's
defaults share them within a group, which assumes cooperating agents: a shared
centralised critic gives every station the same value). One thing cannot be changed
by configuration: BenchMARL's MADDPG and MASAC train every actor on the group's joint
value (each station's actor follows every station's critic: a collusive objective, see
``evcs_gym.integrations.benchmarl``), so on this game they learn towards joint-revenue
prices, not an equilibrium; IDDPG and MAPPO are unaffected.

The budget counts simulator evaluations: one env step of one copy is one dynamic user
equilibrium. BenchMARL's defaults (6,000 frames per batch, 1,000 optimiser steps per
iteration, 3 million frames, evaluation every 120,000) would take days, so the sizes
are shrunk and matched to ``evcs_gym.baselines`` where they have a counterpart: 2 env
copies, 10 evaluations per iteration and about one gradient update per evaluation
(off-policy), 64x64 networks, learning rate 1e-3 (BenchMARL has one rate for actor and
critic; 5e-5 would not move in a few hundred updates), discount 0 (the stage game's
immediate reward), target rate 0.01, exploration 0.1 of the price range decaying to a
floor over the budget; IDDPG keeps a 256-row replay memory as ``IDDPGConfig`` does.
MAPPO collects 20 evaluations per iteration and makes 8 minibatch updates on them.
``--parallel`` steps the copies in one worker process each (the task's ``parallel``):
the same evaluations, bit for bit, on as many cores as copies; on ``tiny`` the workers'
start (importing torch and TorchRL) costs more than it saves.
BenchMARL's own evaluation rollouts are off (they would spend evaluations); instead the
learned pure prices are verified with ``evcs_gym.equilibrium.exploitability``: each
station's best unilateral deviation is searched (``--verify-budget`` evaluations per
station, on seed 0) and re-evaluated on ``--verify-seeds`` seeds (NashConv ± SE).

Run::

    python examples/benchmarl_pricing.py --algo maddpg --scenario tiny --budget 600
    python examples/benchmarl_pricing.py --algo mappo --scenario tiny --budget 600
    python examples/benchmarl_pricing.py --algo mappo --scenario siouxfalls --budget 200 --parallel
    EVCS_GYM_SMOKE=1 python examples/benchmarl_pricing.py   # CI smoke budget (--smoke)

Printed on ``tiny`` (seed 0, 600 training evaluations; the verification: 32 evaluations
per station on seed 0, gains re-evaluated on seeds 0-3; 2 cores shared with other jobs;
full output in ``benchmarks/results/integrations_benchmarl_*_tiny.txt``)::

    MADDPG  A 1.945 2.000 2.000 1.380 | B 1.996 2.000 2.000 1.451  (joint-value actors)
            verified NashConv 40.34% ± 0.22% of total revenue 26,706; 600 + 72 evals, 119 s
    IDDPG   A 0.503 1.900 1.969 0.566 | B 0.500 1.979 1.993 1.999
            verified NashConv 35.20% ± 0.54% of total revenue 20,645; 600 + 67, 226 s
    MASAC   A 1.656 1.728 1.793 1.314 | B 1.603 1.731 1.667 1.275  (joint-value actors)
            verified NashConv 33.23% ± 0.19% of total revenue 22,847; 600 + 72, 134 s
    MAPPO   A 0.652 0.639 0.641 1.122 | B 0.573 0.619 0.799 1.375
            verified NashConv 4.79% ± 0.17% of total revenue 8,616; 600 + 66, 145 s

None is at an equilibrium after 600 evaluations (``evcs-gym solve`` reaches 0 % with
both stations at the lower bound); MAPPO comes closest, with both stations at 0.57-0.80
in periods 1-3.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import torch
from benchmarl.algorithms import IddpgConfig, MaddpgConfig, MappoConfig, MasacConfig
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig

import evcs_gym
from evcs_gym.equilibrium import add_verification_arguments, verify_from_args
from evcs_gym.integrations.benchmarl import EVCSTask
from evcs_gym.integrations.torchrl import learned_prices, make_torchrl_env

SMOKE = os.environ.get("EVCS_GYM_SMOKE", "") not in ("", "0")
ALGORITHMS = {
    "maddpg": MaddpgConfig,
    "iddpg": IddpgConfig,
    "masac": MasacConfig,
    "mappo": MappoConfig,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--algo", choices=sorted(ALGORITHMS), default="maddpg")
    p.add_argument("--scenario", default="tiny", help="bundled scenario or folder")
    p.add_argument("--budget", type=int, default=600, help="training evaluations (env steps)")
    p.add_argument("--num-envs", type=int, default=2, help="game copies stepped per step")
    p.add_argument(
        "--parallel",
        action="store_true",
        help="step the copies in worker processes (TorchRL ParallelEnv, one per copy): the "
        "same evaluations on more cores; pays where an evaluation takes seconds",
    )
    p.add_argument("--rounds", type=int, default=None, help="repeated game of this many rounds")
    add_verification_arguments(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="BenchMARL's experiment folder (default: temp)")
    p.add_argument("--smoke", action="store_true", help="tiny CI budget (or EVCS_GYM_SMOKE=1)")
    args = p.parse_args(argv)
    if args.smoke or SMOKE:
        args.budget, args.verify_budget, args.verify_seeds = 40, 4, 2
        args.workers = 1
    if args.budget < 1 or args.num_envs < 1 or args.verify_seeds < 2:
        p.error("--budget and --num-envs must be positive, --verify-seeds at least 2")
    return args


def experiment_config(args: argparse.Namespace, folder: str):
    """BenchMARL's defaults, shrunk to a budget of simulator evaluations (see docstring)."""
    cfg = ExperimentConfig.get_from_yaml()
    cfg.max_n_frames = args.budget  # a frame = one evaluation (one step of one copy)
    cfg.gamma = 0.0
    cfg.lr = 1e-3
    cfg.polyak_tau = 0.01
    cfg.share_policy_params = False  # competing stations: an actor each
    cfg.off_policy_n_envs_per_worker = args.num_envs
    cfg.off_policy_collected_frames_per_batch = 5 * args.num_envs  # default 6,000
    cfg.off_policy_n_optimizer_steps = 5 * args.num_envs  # default 1,000 per iteration
    cfg.off_policy_train_batch_size = 64
    cfg.off_policy_memory_size = 256 if args.algo == "iddpg" else 100_000
    cfg.on_policy_n_envs_per_worker = args.num_envs
    cfg.on_policy_collected_frames_per_batch = 10 * args.num_envs  # default 6,000
    cfg.on_policy_minibatch_size = 5 * args.num_envs  # default 400
    cfg.on_policy_n_minibatch_iters = 4  # default 45
    # DDPG noise std in action units; actions are in [-1, 1], a range of 2
    cfg.exploration_eps_init = 0.1 * 2
    cfg.exploration_eps_end = (0.05 if args.algo == "iddpg" else 0.02) * 2
    cfg.exploration_anneal_frames = args.budget
    cfg.evaluation = False  # evaluation rollouts would spend evaluations; verified below
    cfg.render = False
    cfg.loggers = []
    cfg.create_json = False
    cfg.checkpoint_interval = 0
    cfg.checkpoint_at_end = False
    cfg.save_folder = folder
    return cfg


def algorithm_config(algo: str):
    cfg = ALGORITHMS[algo].get_from_yaml()
    cfg.share_param_critic = False  # general-sum: a critic per station
    return cfg


def train(args: argparse.Namespace, folder: str):
    """Run the BenchMARL experiment; returns it (policy in ``experiment.policy``).

    The task's actions are in [-1, 1] (see ``evcs_gym.integrations.torchrl``: TorchRL's
    ``TanhDelta``, BenchMARL's DDPG actor, would otherwise start near the price cap).
    """
    name = args.scenario.upper() + ("" if args.rounds is None else "_REPEATED")
    member = EVCSTask[name] if name in EVCSTask.__members__ else EVCSTask.TINY
    task = member.get_task(
        {"scenario": args.scenario, "rounds": args.rounds, "parallel": args.parallel}
    )
    model = MlpConfig.get_from_yaml()
    model.num_cells = [64, 64]  # default 256x256
    experiment = Experiment(
        task=task,
        algorithm_config=algorithm_config(args.algo),
        model_config=model,
        critic_model_config=None,
        seed=args.seed,
        config=experiment_config(args, folder),
    )
    experiment.run()
    return experiment


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"loaded {nd.summary()}")
    print(
        f"BenchMARL {args.algo.upper()}: {args.budget} training evaluations on {args.num_envs} "
        f"copies ({'one-step game' if args.rounds is None else f'{args.rounds} rounds'})",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out or tmp
        os.makedirs(folder, exist_ok=True)
        experiment = train(args, folder)
    evaluations = int(experiment.total_frames)
    env = make_torchrl_env(args.scenario, rounds=args.rounds, seed=args.seed)
    prices = learned_prices(experiment.policy, env, nd, rounds=args.rounds)
    if args.rounds is not None:  # the deterministic rollout that read the prices
        evaluations += args.rounds
    train_time = time.perf_counter() - t0
    cert = verify_from_args(
        nd, prices, args, f"{experiment.n_iters_performed} iterations; learned pure prices"
    )
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
        "experiment": experiment,
    }


if __name__ == "__main__":
    main()
