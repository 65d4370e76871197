"""RLlib multi-agent PPO / SAC on the pricing game, verified in the simulator.

One RLlib module per station (``policies`` + ``policy_mapping_fn``), on the one-shot
game registered by ``evcs_gym.integrations.rllib`` (RLlib's ``ParallelPettingZooEnv``
with the agent order and ``render()`` fixed). Each RLlib env step is one traffic
simulation, so RLlib's defaults are shrunk by ``ppo_config`` / ``sac_config`` (PPO: 64
steps per update instead of 4,000; SAC: 32 warm-up steps instead of 1,500, batches of 32,
``n_step=1``; no sample timeout). Training stops after ``--budget`` env steps
(= simulator evaluations); the stations' deterministic prices (each module's mean action
on the constant observation) are then verified with
``evcs_gym.equilibrium.exploitability``: each station's best unilateral deviation searched
in the simulator with ``--verify-budget`` evaluations, every gain re-evaluated on
``--verify-seeds`` seeds.

Run::

    python examples/rllib_pricing.py --algo ppo --scenario tiny --budget 600
    python examples/rllib_pricing.py --algo sac --scenario tiny --budget 600

On ``tiny`` (2 cores shared with other jobs; full output in
``benchmarks/results/integrations_rllib_{ppo,sac}_tiny.txt``) the first printed::

    learned pure prices (each module's mean action on the constant observation):
           A: 0.914 0.634 1.039 0.827
           B: 1.076 0.906 0.980 1.122
    verified NashConv: 16.45% ± 0.36% of total revenue, max relative gain 20.48%
    evaluations: 600 training + 72 verification; wall time 179 s (training incl. Ray start 158 s)

PPO's 10 updates have not found the competitive prices (both stations at 0.50 where it
matters; each station still gains significantly by deviating). SAC (608 evaluations,
608 + 71 in all, 208 s) verified 20.67 % ± 0.39 %: B at 0.54 in period 1 against A's
0.98 takes most of that period's drivers (A gains 38 %). Verification: 32 evaluations
per station on seed 0, gains re-evaluated on seeds 0-3. The MARL grid's seed-0 PPO
cell, with the same settings, verified 15.70 % ± 0.27 %: two RLlib runs of one seed
need not agree (its sampling runs in Ray workers).

``EVCS_GYM_SMOKE=1`` (or ``--smoke``) runs a smoke-test budget for CI.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import ray

import evcs_gym
from evcs_gym.equilibrium import add_verification_arguments, verify_from_args
from evcs_gym.integrations.rllib import learned_prices, ppo_config, sac_config, train_until

SMOKE = {"budget": 16, "verify_budget": 6, "verify_seeds": 2, "workers": 1}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algo", choices=["ppo", "sac"], default="ppo")
    parser.add_argument("--scenario", default="tiny", help="bundled scenario or folder")
    parser.add_argument(
        "--budget", type=int, default=600, help="simulator evaluations (env steps) to train"
    )
    parser.add_argument(
        "--env-runners", type=int, default=0, help="remote samplers (0: sample in this process)"
    )
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


def make_config(args: argparse.Namespace, nd: evcs_gym.NetworkData) -> Any:
    """RLlib's defaults shrunk to the budget: every env step costs a traffic simulation."""
    common = {
        "scenario": args.scenario,
        "agents": nd.agent_names,
        "num_env_runners": args.env_runners,
        "seed": args.seed,
    }
    if args.algo == "ppo":
        # about 10 updates in the run (RLlib: batches of 4,000 steps)
        batch = min(64, max(8, args.budget // 10))
        return ppo_config(train_batch_size=batch, minibatch_size=max(4, batch // 2), **common)
    # SAC: warm-up and batch at most 1/8 of the run (RLlib: 1,500 and 256)
    small = min(32, max(4, args.budget // 8))
    return sac_config(
        train_batch_size=small,
        learning_starts=small,
        steps_per_iteration=small,
        **common,
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"loaded {nd.summary()}")
    started = not ray.is_initialized()
    if started:  # a small local Ray: no dashboard, RLlib's warnings (API notes) silenced
        ray.init(num_cpus=args.env_runners + 1, include_dashboard=False, logging_level="ERROR")
    try:
        config = make_config(args, nd)
        print(
            f"RLlib {args.algo.upper()}: {args.budget} evaluations, one module per station "
            f"({', '.join(nd.agent_names)}), batch {config.train_batch_size_per_learner}"
        )
        algo = config.build_algo()
        try:
            result = train_until(algo, args.budget)
            evaluations = int(result["num_env_steps_sampled_lifetime"])
            returns = result["env_runners"].get("agent_episode_returns_mean", {})
            print(
                f"  {evaluations} evaluations, {result['training_iteration']} iterations; "
                "last mean reward "
                + ", ".join(f"{a} {float(v):.2f}" for a, v in sorted(returns.items()))
            )
            prices = learned_prices(algo)
        finally:
            algo.stop()
    finally:
        if started:
            ray.shutdown()
    train_s = time.perf_counter() - t0
    cert = verify_from_args(
        nd,
        prices,
        args,
        "learned pure prices (each module's mean action on the constant observation)",
    )
    wall = time.perf_counter() - t0
    print(
        f"evaluations: {evaluations} training + {cert.evaluations} verification; "
        f"wall time {wall:.0f} s (training incl. Ray start {train_s:.0f} s)"
    )
    return {
        "prices": prices,
        "evaluations": evaluations,
        "verify_evaluations": cert.evaluations,
        "certificate": cert,
        "relative_nash_conv": cert.relative_nash_conv,
        "relative_nash_conv_se": cert.relative_nash_conv_se,
        "gains": {a: d.relative_gain for a, d in cert.deviations.items()},
        "wall_s": wall,
    }


if __name__ == "__main__":
    main()
