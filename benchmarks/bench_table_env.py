"""Benchmark: a step of the tabulated game against an evaluation of the simulator.

:class:`~evcs_gym.envs.TablePricingEnv` replays a payoff table, so that Calvano's
Q-learners can play the millions of rounds they need. This prints what a step of it
costs next to what it replaces, one ``tiny_market`` evaluation in the simulator (a
random uniform price for both stations, a new seed each), both timed in this process
and in one run, and their ratio.

Run: ``python benchmarks/bench_table_env.py [--steps 200000] [--evaluations 20]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import evcs_gym
from evcs_gym.envs import TablePricingEnv
from evcs_gym.tabular import LogitMarket


def seconds_per_table_step(steps: int) -> float:
    """Seconds a step of the repeated game on Calvano's logit market (15 price levels)."""
    market = LogitMarket()
    env = TablePricingEnv(market.table(market.grid()), rounds=steps + 1)
    env.reset(seed=0)
    actions = {"1": 3, "2": 7}
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(actions)
    return (time.perf_counter() - t0) / steps


def seconds_per_evaluation(market: evcs_gym.NetworkData, evaluations: int) -> float:
    """Seconds an evaluation of ``market`` in the simulator (the scenario already loaded)."""
    evaluator = evcs_gym.EVCSRewardEvaluator(market)
    rng = np.random.default_rng(0)
    lo, hi = market.price_bounds[market.agent_names[0]]
    t0 = time.perf_counter()
    for seed in range(evaluations):
        price = float(rng.uniform(lo, hi))
        evaluator.evaluate(
            evcs_gym.uniform_prices(market.agent_names, market.n_periods, price), seed=seed
        )
    return (time.perf_counter() - t0) / evaluations


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Time both and print them; return the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000, help="table steps timed")
    parser.add_argument("--evaluations", type=int, default=20, help="simulator evaluations timed")
    args = parser.parse_args(argv)
    market = evcs_gym.load_scenario("tiny_market")
    print(f"evcs-gym {evcs_gym.__version__}, tiny_market settings {market.settings_hash}")
    step = seconds_per_table_step(args.steps)
    evaluation = seconds_per_evaluation(market, args.evaluations)
    print(
        f"TablePricingEnv step (logit market, 15 levels): {step * 1e6:.1f} µs, {args.steps:,} steps"
    )
    n = args.evaluations
    print(f"tiny_market in the simulator: {evaluation * 1e3:.1f} ms an evaluation, {n} runs")
    print(f"a table step costs 1/{evaluation / step:,.0f} of an evaluation")
    return {"step_s": step, "evaluation_s": evaluation, "ratio": evaluation / step}


if __name__ == "__main__":
    main()
