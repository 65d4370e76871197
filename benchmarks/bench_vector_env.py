"""Vector env vs serial stepping: seconds per step, speed-up, identical results.

Steps ``EVCSVectorEnv`` with 2 copies of the repeated game (evaluations in a
``ParallelEvaluatorPool`` of 2 workers) and, with the same seeds and actions, two
history-wrapped envs one after the other in this process. Prints the time per step of
each, the speed-up, and whether every observation, reward and info matched bit for bit.
Figures only, no assertions on time (the machine is shared and noisy).

Run::

    python benchmarks/bench_vector_env.py                       # Sioux Falls, 3 steps
    python benchmarks/bench_vector_env.py --actions uniform --steps 5
    python benchmarks/bench_vector_env.py --scenario tiny --steps 10
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import numpy as np
from gymnasium.utils.env_checker import data_equivalence

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper, make_vector_env


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--actions",
        choices=["training", "uniform"],
        default="training",
        help="training: a pure price of 1.25 plus N(0, 0.1) exploration noise per station and "
        "period (what a learner sends); uniform: uniform over the whole price bounds",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, float | bool]:
    args = parse_args(argv)
    n = args.num_envs
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(args.scenario)
    print(f"{nd.summary()}\nscenario loaded in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    venv = make_vector_env(n, scenario=nd, rounds=args.rounds, n_workers=args.workers)
    print(f"vector env with a {args.workers}-worker pool ready in {time.perf_counter() - t0:.1f} s")
    serial = [
        HistoryWrapper(evcs_gym.parallel_env(scenario=nd), rounds=args.rounds) for _ in range(n)
    ]

    obs_v, _ = venv.reset(seed=args.seed)
    obs_s = [env.reset(seed=args.seed + i)[0] for i, env in enumerate(serial)]
    identical = all(
        np.array_equal(obs_v[a][i], obs_s[i][a]) for i in range(n) for a in venv.possible_agents
    )
    rng = np.random.default_rng(args.seed)
    t_vec: list[float] = []
    t_ser: list[float] = []
    iterations: list[int] = []
    for step in range(args.steps):
        if args.actions == "uniform":
            actions = {
                a: rng.uniform(lo, hi, (n, nd.n_periods)) for a, (lo, hi) in nd.price_bounds.items()
            }
        else:
            actions = {
                a: np.clip(1.25 + rng.normal(0.0, 0.1, (n, nd.n_periods)), lo, hi)
                for a, (lo, hi) in nd.price_bounds.items()
            }
        t0 = time.perf_counter()
        obs_v, rew_v, term_v, trunc_v, info_v = venv.step(actions)
        t_vec.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        outs = [env.step({a: actions[a][i] for a in actions}) for i, env in enumerate(serial)]
        t_ser.append(time.perf_counter() - t0)
        for i, (o, r, te, tr, inf) in enumerate(outs):
            done = all(te[a] or tr[a] for a in r)
            for a in venv.possible_agents:
                got = {k: v for k, v in info_v[i][a].items() if k != "final_observation"}
                identical &= bool(rew_v[a][i] == r[a] and data_equivalence(got, inf[a], exact=True))
                if done:
                    identical &= bool(np.array_equal(info_v[i][a]["final_observation"], o[a]))
            if done:
                o, _ = serial[i].reset()
            identical &= all(np.array_equal(obs_v[a][i], o[a]) for a in venv.possible_agents)
            iterations.append(inf[venv.possible_agents[0]]["ue_iterations"])
        print(
            f"step {step}: vector {t_vec[-1]:6.2f} s   serial {t_ser[-1]:6.2f} s   "
            f"UE iterations {iterations[-n:]}"
        )
    venv.close()
    vec, ser = statistics.mean(t_vec), statistics.mean(t_ser)
    print(
        f"\n{n} copies on {args.scenario}, {args.steps} steps, {args.workers} pool workers, "
        f"{args.actions} actions"
    )
    print(f"seconds per step  vector: {vec:.2f}   serial: {ser:.2f}   speed-up: {ser / vec:.2f}x")
    print(f"identical results (obs, rewards, infos): {identical}")
    return {
        "vector_seconds": vec,
        "serial_seconds": ser,
        "speedup": ser / vec,
        "identical": identical,
    }


if __name__ == "__main__":
    main()
