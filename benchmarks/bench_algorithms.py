"""Benchmark: MADDPG / IDDPG / MFDDPG and the reference solver on one evaluation budget.

For each scenario (default: tiny) every learner trains through the vector env
(``--num-envs`` copies, ``--workers`` evaluator processes) for ``--budget`` evaluations
with the same seeds; its final pure prices are then verified in the simulator
(:func:`evcs_gym.equilibrium.exploitability`, the ``--verify-search``, by default the
converged search). The reference solver (:class:`~evcs_gym.baselines.BestResponseDynamics`) gets
the same evaluation budget. Prints a table: final prices, total revenue, verified
relative NashConv, the largest per-station relative gain, evaluations and wall time.

Run: ``python benchmarks/bench_algorithms.py --scenarios tiny siouxfalls --budget 3000``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import evcs_gym
from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
from evcs_gym.cli.common import parse_settings
from evcs_gym.equilibrium import BestResponseDynamics, exploitability
from evcs_gym.parallel.pool import ParallelEvaluatorPool
from evcs_gym.wrappers import make_vector_env


def run_learner(name, nd, pool, args) -> dict:
    t0 = time.perf_counter()
    venv = make_vector_env(args.num_envs, scenario=nd, rounds=args.rounds, pool=pool)
    obs_spaces = {a: venv.observation_space(a) for a in venv.possible_agents}
    act_spaces = {a: venv.action_space(a) for a in venv.possible_agents}
    config = ALGORITHMS[name].config_cls(seed=args.seed, **json.loads(args.config))
    algo = ALGORITHMS[name](obs_spaces, act_spaces, config)
    trainer = GameTrainer(
        venv, algo, TrainerConfig(budget=args.budget, seed=args.seed, progress=False)
    )
    trainer.train()
    final = trainer.evaluate_pure(1)
    venv.close()
    prices = {a: np.asarray(v, dtype=float) for a, v in final.last_pure_actions.items()}
    train_s = time.perf_counter() - t0
    cert = exploitability(
        pool,
        prices,
        seed=args.seed,
        seeds=args.verify_seeds,
        search=args.verify_search,
        budget=args.verify_budget,
    )
    return {
        "name": name,
        "prices": prices,
        "cert": cert,
        "evaluations": trainer.evaluations,
        "seconds": train_s,
    }


def run_solver(nd, pool, args) -> dict:
    t0 = time.perf_counter()
    solver = BestResponseDynamics(
        pool,
        target=args.target,
        budget=args.budget,
        seed=args.seed,
        budget_per_station=args.verify_budget,
        search=args.verify_search,
        seeds=args.verify_seeds,
        max_rounds=1000,
    )
    res = solver.solve()
    return {
        "name": "best-response",
        "prices": res.prices,
        "cert": res.certificate,
        "evaluations": res.evaluations,
        "seconds": time.perf_counter() - t0,
    }


def _fmt_gains(cert) -> str:
    """Each station's best verified relative gain ± SE, ``*`` where significant."""
    return ", ".join(
        f"{a}: {d.relative_gain:.2%} ± {d.relative_gain_se:.2%}" + ("*" if d.significant else "")
        for a, d in cert.deviations.items()
    )


def _fmt_prices(prices) -> str:
    return " | ".join(f"{a}: " + " ".join(f"{v:.2f}" for v in p) for a, p in prices.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=["tiny"])
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument(
        "--verify-search", default="converged", help="the deviation search (a preset name)"
    )
    parser.add_argument(
        "--verify-budget", type=int, default=None, help="its cap per station (None: default)"
    )
    parser.add_argument(
        "--verify-seeds", type=int, default=4, help="seeds of the verified gains (SEs)"
    )
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--target", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--config",
        default="{}",
        help="JSON overrides of every learner's config (each starts from its own defaults)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=[*ALGORITHMS, "brd"],
        choices=[*ALGORITHMS, "brd"],
        help="learners to train and/or brd (the reference solver)",
    )
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario setting (repeatable), e.g. ue_stall_patience=20",
    )
    args = parser.parse_args()
    overrides = parse_settings(args.set)
    torch.set_num_threads(1)
    for name in args.scenarios:
        nd = evcs_gym.load_scenario(name, **overrides)
        print(f"\n== {nd.summary()}; budget {args.budget} evaluations, seed {args.seed}")
        if overrides:
            print(f"settings overridden: {overrides}")
        rows = []
        with ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
            for method in args.methods:
                if method == "brd":
                    row = run_solver(nd, pool, args)
                else:
                    row = run_learner(method, nd, pool, args)
                rows.append(row)
                c = row["cert"]
                print(  # a long run keeps what is done if it is stopped
                    f"  {row['name']} verified ({row['seconds']:.0f} s of training or"
                    f" solving, the table's s): NashConv"
                    f" {c.relative_nash_conv:.2%} ± {c.relative_nash_conv_se:.2%} of"
                    f" {c.total_reward:.0f}, prices {_fmt_prices(row['prices'])};"
                    f" per-station gains {_fmt_gains(c)}",
                    flush=True,
                )
        head = (
            f"{'method':<15}{'revenue':>10}{'NashConv ± SE':>17}{'max gain':>10}"
            f"{'evals':>7}{'s':>7}  prices"
        )
        print(head)
        print("-" * len(head))
        for r in rows:
            c = r["cert"]
            prices = _fmt_prices(r["prices"])
            print(
                f"{r['name']:<15}{c.total_reward:>10.0f}"
                f"{f'{c.relative_nash_conv:.2%} ± {c.relative_nash_conv_se:.2%}':>17}"
                f"{c.max_relative_gain:>10.2%}{r['evaluations']:>7}{r['seconds']:>7.0f}  {prices}"
            )
        print(
            "\nper-station relative gains (best verified deviation gain / own revenue, mean ± SE"
            f" over {args.verify_seeds} seeds, * significant):"
        )
        for r in rows:
            print(f"  {r['name']:<15}{_fmt_gains(r['cert'])}")


if __name__ == "__main__":
    main()
