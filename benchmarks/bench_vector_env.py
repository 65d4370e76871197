"""Vector env vs serial stepping: seconds per step, speed-up, identical results.

Steps ``EVCSVectorEnv`` with 2 copies of the repeated game (evaluations in a
``ParallelEvaluatorPool`` of 2 workers) and, with the same seeds and actions, two
history-wrapped envs one after the other in this process. Prints the time per step of
each, the speed-up, and whether every observation, reward and info matched bit for bit.
Figures only, no assertions on time (the machine is shared and noisy).

The vector and the serial step alternate which goes first, so a drift in the machine's
speed hits both alike. Next to each step the benchmark also measures the machine's own
ceiling: the speed-up of two independent pure-Python CPU loops (no simulation, no
communication) run in two processes instead of one after the other. On a shared virtual
machine this ceiling is itself below 2x and moves with the neighbours' load; the
vector env's speed-up is printed next to it.

Run::

    python benchmarks/bench_vector_env.py                       # Sioux Falls, 12 steps
    python benchmarks/bench_vector_env.py --actions uniform --steps 5
    python benchmarks/bench_vector_env.py --scenario tiny --steps 10
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import data_equivalence

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper, make_vector_env


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-ceiling",
        action="store_true",
        help="skip the machine-ceiling measurement (two pure CPU loops, serial vs parallel)",
    )
    parser.add_argument(
        "--actions",
        choices=["training", "uniform"],
        default="training",
        help="training: a pure price of 1.25 plus N(0, 0.1) exploration noise per station and "
        "period (what a learner sends); uniform: uniform over the whole price bounds",
    )
    return parser.parse_args(argv)


class MachineCeiling:
    """Speed-up of two independent CPU loops in two processes over one after the other.

    The best any two-process parallelism can do on this machine at this moment. The loop
    is ``sum(range(n))``: pure CPU, no memory traffic to speak of, and a builtin, so it
    pickles by reference into the worker processes wherever this script is loaded from.
    """

    def __init__(self, seconds: float = 0.3) -> None:
        # spawn: never fork this process, which already runs the vector env's pool threads
        self.executor = ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn"))
        list(self.executor.map(sum, [range(10), range(10)]))  # start both processes
        t0 = time.perf_counter()
        sum(range(1_000_000))
        self.n = max(10_000, int(1_000_000 * seconds / (time.perf_counter() - t0)))

    def sample(self) -> float:
        t0 = time.perf_counter()
        sum(range(self.n))
        sum(range(self.n))
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        list(self.executor.map(sum, [range(self.n), range(self.n)]))
        return serial / (time.perf_counter() - t0)

    def close(self) -> None:
        self.executor.shutdown()


def makespan(work: Sequence[float], workers: int) -> float:
    """Finish time of ``work`` items handed in order to the first free of ``workers``.

    >>> makespan([6, 3], 2), makespan([3, 3, 3, 3], 2), makespan([6, 3, 3, 3], 2)
    (6.0, 6.0, 9.0)
    """
    free = [0.0] * workers
    for w in work:
        k = free.index(min(free))
        free[k] += w
    return max(free)


def step_serially(envs: Sequence[Any], actions: dict[str, np.ndarray]) -> list[tuple]:
    """Step copy ``i`` with row ``i`` of every agent's batched action, one after another."""
    return [env.step({a: v[i] for a, v in actions.items()}) for i, env in enumerate(envs)]


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
    ceiling = None if args.no_ceiling else MachineCeiling()
    ceilings: list[float] = []
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
        runs = [("vector", venv.step), ("serial", partial(step_serially, serial))]
        out: dict[str, Any] = {}
        seconds: dict[str, float] = {}
        for name, run in runs if step % 2 == 0 else runs[::-1]:  # drift hits both alike
            t0 = time.perf_counter()
            out[name] = run(actions)
            seconds[name] = time.perf_counter() - t0
        t_vec.append(seconds["vector"])
        t_ser.append(seconds["serial"])
        obs_v, rew_v, term_v, trunc_v, info_v = out["vector"]
        outs = out["serial"]
        if ceiling is not None:
            ceilings.append(ceiling.sample())
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
        line = (
            f"step {step}: vector {t_vec[-1]:6.2f} s   serial {t_ser[-1]:6.2f} s   "
            f"speed-up {t_ser[-1] / t_vec[-1]:4.2f}x   UE iterations {iterations[-n:]}"
        )
        print(line + (f"   machine ceiling {ceilings[-1]:4.2f}x" if ceilings else ""))
    venv.close()
    vec, ser = statistics.mean(t_vec), statistics.mean(t_ser)
    per_step = statistics.median(s / v for s, v in zip(t_ser, t_vec))
    print(
        f"\n{n} copies on {args.scenario}, {args.steps} steps, {args.workers} pool workers, "
        f"{args.actions} actions"
    )
    print(
        f"seconds per step  vector: {vec:.2f}   serial: {ser:.2f}   speed-up: {ser / vec:.2f}x "
        f"(median of steps {per_step:.2f}x)"
    )
    steps = [iterations[k : k + n] for k in range(0, len(iterations), n)]
    balance = sum(map(sum, steps)) / sum(makespan(s, args.workers) for s in steps)
    print(
        f"UE iteration balance: {balance:.2f}x (the speed-up the iteration counts allow "
        f"on {args.workers} cores that run {args.workers} processes at full speed)"
    )
    figures: dict[str, float | bool] = {
        "vector_seconds": vec,
        "serial_seconds": ser,
        "speedup": ser / vec,
        "median_step_speedup": per_step,
        "iteration_balance": balance,
        "identical": identical,
    }
    if ceiling is not None:
        ceiling.close()
        top, top_median = statistics.mean(ceilings), statistics.median(ceilings)
        print(
            f"machine ceiling (2 pure CPU loops, parallel vs serial, sampled after each step): "
            f"{top:.2f}x (median {top_median:.2f}x, range {min(ceilings):.2f}-{max(ceilings):.2f})"
        )
        print(f"vector env speed-up / machine ceiling: {ser / vec / top:.2f}")
        figures |= {"machine_ceiling": top, "machine_ceiling_median": top_median}
    print(f"identical results (obs, rewards, infos): {identical}")
    return figures


if __name__ == "__main__":
    main()
