"""Tabular Q-learning on the discrete pricing game, as Calvano et al. (AER 2020) run it.

Each station of ``tiny_market`` picks one of ``--levels`` price profiles a round
(:class:`~evcs_gym.wrappers.DiscretePrices`: Calvano's grid on the path from the game's
Nash reference to its collusive one). The stage game is evaluated once per joint level
in the simulator (:func:`~evcs_gym.tabular.simulator_table`, on 2 worker processes, kept
in the disk cache), Q-learning runs on that table for millions of rounds in minutes
(:func:`~evcs_gym.baselines.qlearning.run_qlearning`), and one session's learned
strategies then play a few rounds in the simulator itself, which pays what the table
said, to the bit.

Run: ``python examples/qlearning_discrete.py [--sessions 10] [--max-rounds 3000000]``
(the table: 225 evaluations, under a minute on 2 cores; the learning: a few minutes).
"""

from __future__ import annotations

import argparse

import numpy as np

import evcs_gym
from evcs_gym.baselines.qlearning import QLearningConfig, run_qlearning
from evcs_gym.baselines.strategies import session_outcome
from evcs_gym.tabular import simulator_table
from evcs_gym.wrappers import DiscretePrices


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--levels", type=int, default=15)
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--max-rounds", type=int, default=3_000_000)
    p.add_argument("--window", type=int, default=100_000)
    args = p.parse_args(argv)

    # the discrete game, every step evaluated at seed 0; its table, once per joint level
    env = DiscretePrices(evcs_gym.parallel_env(scenario=args.scenario, eval_seed=0), m=args.levels)
    table = simulator_table(env.unwrapped.network, env.grid, seed=0, n_workers=2)

    # Calvano's learners (alpha 0.15, beta 4e-6, delta 0.95), all sessions at once
    cfg = QLearningConfig(sessions=args.sessions, max_rounds=args.max_rounds, window=args.window)
    result = run_qlearning(table, cfg)
    outcomes = [
        session_outcome(table, result.strategies[s], result.last_state[s], cfg.delta)
        for s in range(cfg.sessions)
    ]
    deltas = [o.delta for o in outcomes]
    print(
        f"{result.converged.sum()} of {cfg.sessions} sessions converged in {result.seconds:.0f} s;"
    )
    print(f"collusion index of the limit cycles: mean {np.mean(deltas):.2f}, {np.round(deltas, 2)}")

    # session 0's strategies in the simulator: the state is last round's joint level
    agents, state = env.possible_agents, int(result.last_state[0])
    for round_ in range(3):
        levels = {a: int(result.strategies[0, i, state]) for i, a in enumerate(agents)}
        env.reset(seed=round_)
        _, rewards, _, _, infos = env.step(levels)
        state = table.grid.index([levels[a] for a in agents])
        assert [infos[a]["reward_raw"] for a in agents] == table.rewards[state].tolist()
        prices = {a: infos[a]["prices"].round(2).tolist() for a in agents}
        print(f"round {round_ + 1}: levels {levels}, prices {prices}")
    return {"deltas": deltas, "converged": result.converged.tolist(), "outcomes": outcomes}


if __name__ == "__main__":
    main()
