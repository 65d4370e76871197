"""Study: is the price war's flat critic short of data or short of gradient steps?

The price-war study (``price_war.py``) finds MADDPG's warm-up critic nearly linear along
every station's own price, its maximum at a bound, on ``tiny_market``. This script asks
why, offline: it draws ``--rows`` joint price profiles uniformly in the price box (as the
learners' random warm-up does) and evaluates them once in the simulator, then fits a fresh
learner's critic to the first 64, 128, ... of those rows with ``--steps`` gradient updates
(the learner's own ``learn()``, the budget-600 config of ``evcs-gym train``), at
``--fit-seeds`` network seeds. Along each station's price in each period, the others at
the game's Nash reference N, it compares the critic with the simulator's revenue (seed
0): where the critic's maximum lies (at a bound or not, and how far from the simulator's)
and its curvature as a share of the simulator's.

In training, ``updates_per_learn=2`` updates per two evaluations give the critic 64
updates by the end of a 128-row warm-up: the first column of the table.

Output in ``--out``: ``rows.json`` (the profiles and their revenues, the simulator's lines;
reused with ``--resume``, so that every learner is fitted to the same rows),
``critic_refit.json`` and ``critic_refit.md`` for MADDPG's joint critic, else
``critic_refit[_<algo>][_<structure>].*`` (the learner named unless MADDPG, the structure
unless joint), and ``run.json`` (the commands run).

Run: ``python benchmarks/studies/critic_refit.py --out
benchmarks/results/price_war_tiny_market`` (about 25 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import evcs_gym
from evcs_gym.baselines import ALGORITHMS
from evcs_gym.baselines.recipe import learner_config, make_learner
from evcs_gym.scenarios import load_references

sys.path.insert(0, str(Path(__file__).parent))
from price_war import critic_line, simulator_lines  # noqa: E402


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--algo", default="maddpg", choices=sorted(ALGORITHMS))
    p.add_argument("--rows", nargs="+", type=int, default=[64, 128, 256])
    p.add_argument("--steps", nargs="+", type=int, default=[64, 512, 2048])
    p.add_argument("--fit-seeds", type=int, default=3, help="network seeds per cell")
    p.add_argument(
        "--critic-structure",
        default="joint",
        choices=["joint", "additive"],
        help="the learner's critic_structure (MADDPGConfig)",
    )
    p.add_argument("--points", type=int, default=9, help="prices along each line")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/critic_refit"))
    p.add_argument("--resume", action="store_true", help="reuse rows.json")
    return p.parse_args(argv)


def collect_rows(args: argparse.Namespace, nd: Any) -> dict[str, Any]:
    """``max(--rows)`` uniform profiles and their revenues (seed = row), and the
    simulator's lines through N (seed 0), in the env's reward units."""
    agents = list(nd.agent_names)
    lo, hi = map(float, nd.price_bounds[agents[0]])
    nash = {a: np.asarray(v, float) for a, v in load_references(nd).nash.items()}
    rng = np.random.default_rng(123)
    n = max(args.rows)
    rows = [{a: rng.uniform(lo, hi, nd.n_periods) for a in agents} for _ in range(n)]
    prices = np.linspace(lo, hi, args.points)
    unit = nd.settings.reward_scale
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
        results = pool.evaluate_batch(rows, seeds=list(range(n)))
        lines = simulator_lines(pool, nash, agents, prices, 0)
    return {
        "scenario": nd.name,
        "settings_hash": nd.settings_hash,
        "rows": [{a: v.tolist() for a, v in r.items()} for r in rows],
        "rewards": [[r.rewards[a] / unit for a in agents] for r in results],
        "prices": prices.tolist(),
        "nash": {a: v.tolist() for a, v in nash.items()},
        "simulator": {a: (np.asarray(v) / unit).tolist() for a, v in lines.items()},
    }


def fitted_lines(
    data: dict[str, Any], algo_name: str, rows: int, steps: int, seed: int, structure: str
):
    """A fresh learner's critic lines through N after ``steps`` updates on ``rows`` rows."""
    env = evcs_gym.parallel_env(scenario=data["scenario"])
    obs, _ = env.reset(seed=0)
    agents = list(env.possible_agents)
    cls = ALGORITHMS[algo_name]
    config = learner_config(
        cls.config_cls, 600, seed=seed, overrides={"critic_structure": structure}
    )
    algo = make_learner(cls, env, config)
    one = {a: obs[a][None].astype(np.float32) for a in agents}
    done = {a: np.array([True]) for a in agents}
    for profile, reward in zip(data["rows"][:rows], data["rewards"][:rows], strict=True):
        act = {a: np.asarray(profile[a], np.float32)[None] for a in agents}
        rew = {a: np.array([r], np.float32) for a, r in zip(agents, reward, strict=True)}
        algo.store_experience(one, act, rew, one, done)
    for _ in range(steps // algo.config.updates_per_learn):
        algo.learn()
    nash = {a: np.asarray(v, np.float32) for a, v in data["nash"].items()}
    prices = np.asarray(data["prices"])
    return {
        a: [critic_line(algo, one, nash, a, p, prices).tolist() for p in range(len(nash[a]))]
        for a in agents
    }


def line_figures(critic: dict, simulator: dict, prices: np.ndarray) -> dict[str, float]:
    """Share of lines whose critic maximum is at a bound; mean distance between the critic's
    and the simulator's argmax (price units); median curvature ratio (critic / simulator)."""
    at_bound, distance, curvature = [], [], []
    for agent, lines in simulator.items():
        for p, sim in enumerate(lines):
            crit, sim = np.asarray(critic[agent][p]), np.asarray(sim)
            at_bound.append(int(np.argmax(crit)) in (0, len(crit) - 1))
            distance.append(abs(prices[int(np.argmax(crit))] - prices[int(np.argmax(sim))]))
            curvature.append(np.diff(crit, 2).mean() / np.diff(sim, 2).mean())
    return {
        "critic_argmax_at_bound": float(np.mean(at_bound)),
        "argmax_distance": float(np.mean(distance)),
        "curvature_ratio": float(np.median(curvature)),
    }


def report(data: dict[str, Any], cells: list[dict[str, Any]]) -> str:
    sim = {a: np.asarray(v) for a, v in data["simulator"].items()}
    at_bound = np.mean([int(np.argmax(x)) in (0, len(x) - 1) for v in sim.values() for x in v])
    step = data["prices"][1] - data["prices"][0]
    lines = [
        f"# The warm-up critic: rows against gradient steps ({data['scenario']}, "
        f"{data['settings_hash']}; {cells[0]['algo']}, {cells[0]['critic_structure']} critic)",
        "",
        f"Lines through N, {len(data['prices'])} prices ({step:.2f} apart); the "
        f"simulator's maximum is at a bound on {at_bound:.0%} of them. Means over the "
        "network seeds.",
        "",
        "| rows | gradient steps | critic's maximum at a bound | distance of the maxima | "
        "critic's curvature / simulator's |",
        "|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['rows']} | {c['steps']} | {c['critic_argmax_at_bound']:.0%} | "
            f"{c['argmax_distance']:.2f} | {c['curvature_ratio']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def record_command(path: Path, argv: Sequence[str] | None) -> None:
    """Add this run's command to ``run.json``'s ``commands`` (its other keys kept)."""
    run = json.loads(path.read_text()) if path.exists() else {}
    command = " ".join(["python benchmarks/studies/critic_refit.py", *(argv or sys.argv[1:])])
    if command not in run.setdefault("commands", []):
        run["commands"].append(command)
    path.write_text(json.dumps(run, indent=2) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    record_command(args.out / "run.json", argv)
    nd = evcs_gym.load_scenario(args.scenario)
    path = args.out / "rows.json"
    if args.resume and path.exists():
        data = json.loads(path.read_text())
    else:
        data = collect_rows(args, nd)
        path.write_text(json.dumps(data) + "\n")
    prices = np.asarray(data["prices"])
    cells = []
    for rows in args.rows:
        for steps in args.steps:
            fits = [
                fitted_lines(data, args.algo, rows, steps, s, args.critic_structure)
                for s in range(args.fit_seeds)
            ]
            figures = [line_figures(fit, data["simulator"], prices) for fit in fits]
            cell = {
                "rows": rows,
                "steps": steps,
                "algo": args.algo,
                "critic_structure": args.critic_structure,
            }
            cell.update({k: float(np.mean([f[k] for f in figures])) for k in figures[0]})
            cells.append(cell)
            print(cell, flush=True)
    name = "_".join(
        ["critic_refit"]
        + ([args.algo] if args.algo != "maddpg" else [])
        + ([args.critic_structure] if args.critic_structure != "joint" else [])
    )
    (args.out / f"{name}.json").write_text(json.dumps(cells, indent=1) + "\n")
    text = report(data, cells)
    (args.out / f"{name}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
