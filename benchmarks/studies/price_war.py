"""Study: why do the DDPG-family learners drive market prices into a price war?

On ``tiny_market`` our MADDPG ends some seeds far below the Nash reference (Δ < −1):
a price war. This script trains one learner as ``evcs-gym train --scenario tiny_market
--algo maddpg --rounds 0`` does (the package's defaults), stopping at ``--stages``
evaluation counts, and at each stage compares what the learner believes with what the
game pays. For each station and period it sweeps that one price over ``--points``
levels from floor to ceiling, the other prices at the learner's pure (noise-free)
profile, and records

- the station's **critic** value ``Q(obs, prices)`` along the line (MADDPG's critic sees
  every station's prices), in currency (the learner's and the scenario's reward scales
  undone), and
- the **simulator**'s revenue along the same line (``EVCSRewardEvaluator`` on seed
  ``--eval-seed``), in the same units.

It also records the pure prices after every evaluation of training (the path into the
war), the share of the actors' outputs within 2 % of a bound (tanh saturation), and the
exploration noise. A critic whose argmax along a line sits at a bound where the
simulator's does not is extrapolating; one that agrees with the simulator while the
actor still walks away from the argmax points at the actor's update instead.

Output in ``--out``: ``<algo>__seed<S>.json`` (every stage's lines and the training
path), ``<algo>__seed<S>.png`` (critic against simulator, one panel per station and
period, a line per stage) and ``report.md``.

Run: ``python benchmarks/studies/price_war.py --seeds 0 1 --out
benchmarks/results/price_war_tiny_market`` (about 20 minutes a seed on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import evcs_gym
from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
from evcs_gym.baselines.recipe import learner_config, make_learner
from evcs_gym.scenarios import load_references
from evcs_gym.wrappers import make_vector_env


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--algo", default="maddpg", choices=sorted(ALGORITHMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--budget", type=int, default=600, help="training evaluations")
    p.add_argument("--stages", nargs="+", type=int, default=[128, 300, 600])
    p.add_argument("--points", type=int, default=9, help="prices along each line (>= 3)")
    p.add_argument("--eval-seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/price_war"))
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)
    if sorted(args.stages) != args.stages or args.stages[-1] > args.budget:
        p.error(f"--stages must rise to at most --budget, got {args.stages}")
    if args.points < 3:
        p.error(f"--points must be >= 3 (a curvature needs three), got {args.points}")
    return args


def critic_line(algo: Any, obs: dict[str, np.ndarray], pure: dict[str, np.ndarray],
                agent: str, period: int, prices: np.ndarray) -> np.ndarray:  # fmt: skip
    """The agent's critic along one price line (its other prices and the rivals' at
    ``pure``), in the env's reward units (the learner's ``reward_scale`` undone)."""
    q = algo.get_critics()[agent]
    n = len(prices)
    acts = {a: np.repeat(np.asarray(v, np.float32)[None], n, axis=0) for a, v in pure.items()}
    acts[agent][:, period] = prices
    obs_t = {a: torch.as_tensor(np.repeat(o[:1], n, axis=0)) for a, o in obs.items()}
    with torch.no_grad():
        values = q(obs_t, {a: torch.as_tensor(x) for a, x in acts.items()})
    return values.numpy().astype(float) * algo.config.reward_scale


def simulator_lines(
    pool: Any, pure: dict[str, np.ndarray], agents: list[str], prices: np.ndarray, seed: int
) -> dict[str, list[list[float]]]:
    """Each station's own revenue along each of its period lines, on one seed (one pool
    batch), in currency."""
    profiles, where = [], []
    for i, agent in enumerate(agents):
        for period in range(len(pure[agent])):
            for x in prices:
                profile = {a: np.array(v, float) for a, v in pure.items()}
                profile[agent][period] = x
                profiles.append(profile)
                where.append((i, agent, period))
    results = pool.evaluate_batch(profiles, seeds=[seed] * len(profiles))
    out: dict[str, list[list[float]]] = {a: [[] for _ in pure[a]] for a in agents}
    for (_, agent, period), res in zip(where, results, strict=True):
        out[agent][period].append(float(res.rewards[agent]))
    return out


def saturation(pure: dict[str, np.ndarray], bounds: dict[str, tuple[float, float]]) -> float:
    """The share of the pure prices within 2 % of the range from a bound."""
    near = [
        abs(x - lo) < 0.02 * (hi - lo) or abs(hi - x) < 0.02 * (hi - lo)
        for a, (lo, hi) in bounds.items()
        for x in pure[a]
    ]
    return float(np.mean(near))


def run_seed(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    nd = evcs_gym.load_scenario(args.scenario)
    agents = list(nd.agent_names)
    bounds = {a: tuple(map(float, nd.price_bounds[a])) for a in agents}
    lo, hi = bounds[agents[0]]
    prices = np.linspace(lo, hi, args.points)
    venv = make_vector_env(2, scenario=nd, rounds=None, n_workers=args.workers)
    stages = []
    try:
        cls = ALGORITHMS[args.algo]
        config = learner_config(cls.config_cls, args.budget, seed=seed)
        algo = make_learner(cls, venv, config)
        trainer = GameTrainer(
            venv, algo, TrainerConfig(budget=1, check_every=10, seed=seed, progress=False)
        )  # evcs-gym train's checks (they may reset the noise), without its verification
        with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
            for stage in args.stages:
                t0 = time.perf_counter()
                trainer.config = dataclasses.replace(trainer.config, budget=stage)
                trainer.train()
                stages.append(measure_stage(trainer, algo, pool, prices, bounds, args.eval_seed))
                stages[-1]["seconds"] = round(time.perf_counter() - t0, 1)
                print(f"seed {seed}: {summary(stages[-1], prices)}", flush=True)
        path = [
            {a: np.asarray(r.pure_prices[a], float).tolist() for a in agents}
            for r in trainer.history.evaluations
            if r.kind == "train"
        ]
    finally:
        venv.close()
    references = load_references(nd)
    return {
        "scenario": nd.name,
        "settings_hash": nd.settings_hash,
        "algo": args.algo,
        "seed": seed,
        "config": {k: v for k, v in dataclasses.asdict(config).items() if not k.startswith("_")},
        "prices": prices.tolist(),
        "stages": stages,
        "path": path,
        "references": None if references is None else {
            "nash": {a: list(map(float, v)) for a, v in references.nash.items()},
            "collusive": {a: list(map(float, v)) for a, v in references.collusive.items()},
        },
    }  # fmt: skip


def measure_stage(
    trainer: GameTrainer,
    algo: Any,
    pool: Any,
    prices: np.ndarray,
    bounds: dict[str, tuple[float, float]],
    eval_seed: int,
) -> dict[str, Any]:
    """The learner's pure prices now, and the critic and the simulator along every line."""
    obs = trainer.observation
    assert obs is not None
    one = {a: o[:1] for a, o in obs.items()}
    pure = {a: np.asarray(v[0], float) for a, v in algo.get_pure_actions(one).items()}
    unit = trainer.env.network.settings.reward_scale  # env rewards are currency / this
    critic = {
        a: [
            (unit * critic_line(algo, obs, pure, a, p, prices)).tolist()
            for p in range(len(pure[a]))
        ]
        for a in pure
    }
    return {
        "evaluations": trainer.evaluations,
        "pure_prices": {a: v.tolist() for a, v in pure.items()},
        "saturation": saturation(pure, bounds),
        "noise_std": {a: float(n.std) for a, n in algo.noise.items()},
        "critic": critic,
        "simulator": simulator_lines(pool, pure, list(pure), prices, eval_seed),
    }


def summary(stage: dict[str, Any], prices: np.ndarray) -> str:
    """Where the critic's and the simulator's argmax lie on each line, and the pure price."""
    parts = [f"{stage['evaluations']} evaluations"]
    for agent, lines in stage["simulator"].items():
        for p, sim in enumerate(lines):
            crit = stage["critic"][agent][p]
            parts.append(
                f"{agent}{p}: pure {stage['pure_prices'][agent][p]:.2f} "
                f"critic* {prices[int(np.argmax(crit))]:.2f} sim* {prices[int(np.argmax(sim))]:.2f}"
            )
    return "; ".join(parts)


def stage_figures(stage: dict[str, Any], prices: np.ndarray) -> dict[str, float]:
    """One stage's diagnosis over every (station, period) line: the share of the learner's
    prices within 2 % of a bound; the share of lines whose argmax lies at a bound, for the
    critic and for the simulator; the share whose slope at the learner's price the critic
    gets the sign of; and the critic's curvature against the simulator's (the second
    difference's mean over interior points, as a ratio of their magnitudes)."""
    at_bound = {"critic": [], "simulator": []}
    signs, curvature = [], []
    for agent, lines in stage["simulator"].items():
        for p, sim in enumerate(lines):
            crit = np.asarray(stage["critic"][agent][p])
            sim = np.asarray(sim)
            for name, line in (("critic", crit), ("simulator", sim)):
                at_bound[name].append(int(np.argmax(line)) in (0, len(line) - 1))
            k = int(
                np.clip(np.searchsorted(prices, stage["pure_prices"][agent][p]), 1, len(prices) - 1)
            )
            signs.append(np.sign(crit[k] - crit[k - 1]) == np.sign(sim[k] - sim[k - 1]))
            curvature.append(abs(np.diff(crit, 2).mean()) / max(abs(np.diff(sim, 2).mean()), 1e-9))
    return {
        "evaluations": stage["evaluations"],
        "saturation": stage["saturation"],
        "critic_argmax_at_bound": float(np.mean(at_bound["critic"])),
        "simulator_argmax_at_bound": float(np.mean(at_bound["simulator"])),
        "slope_sign_right": float(np.mean(signs)),
        "curvature_ratio": float(np.median(curvature)),
    }


def report(records: list[dict[str, Any]]) -> str:
    """The table of :func:`stage_figures` per seed and stage."""
    lines = [
        "# The price war: the critic against the simulator",
        "",
        "| algo | seed | evaluations | prices at a bound | critic's argmax at a bound | "
        "simulator's argmax at a bound | critic's slope sign right | critic's curvature / "
        "simulator's (median) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        prices = np.asarray(record["prices"])
        for stage in record["stages"]:
            f = stage_figures(stage, prices)
            lines.append(
                f"| {record['algo']} | {record['seed']} | {f['evaluations']} | "
                f"{f['saturation']:.0%} | {f['critic_argmax_at_bound']:.0%} | "
                f"{f['simulator_argmax_at_bound']:.0%} | {f['slope_sign_right']:.0%} | "
                f"{f['curvature_ratio']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = record["stages"]
    agents = list(stages[0]["simulator"])
    periods = len(stages[0]["simulator"][agents[0]])
    fig, axes = plt.subplots(
        len(agents), periods, figsize=(3.2 * periods, 2.8 * len(agents)), squeeze=False
    )
    x = np.asarray(record["prices"])
    colours = plt.cm.viridis(np.linspace(0, 0.85, len(stages)))
    for i, agent in enumerate(agents):
        for p in range(periods):
            ax = axes[i][p]
            for stage, colour in zip(stages, colours, strict=True):
                label = f"{stage['evaluations']} evals"
                ax.plot(
                    x, stage["simulator"][agent][p], "-", color=colour, label=f"simulator, {label}"
                )
                ax.plot(x, stage["critic"][agent][p], "--", color=colour, label=f"critic, {label}")
                ax.axvline(stage["pure_prices"][agent][p], color=colour, lw=0.8, ls=":")
            if record["references"]:
                ax.axvline(record["references"]["nash"][agent][p], color="k", lw=0.8, label="N")
            ax.set_title(f"station {agent}, period {p}", fontsize=9)
            ax.set_xlabel("price")
            if p == 0:
                ax.set_ylabel("own reward")
    axes[0][0].legend(fontsize=6)
    fig.suptitle(
        f"{record['algo']} seed {record['seed']} on {record['scenario']}: critic (dashed) "
        "against the simulator (solid) along each price; dotted: the learner's price"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        path = args.out / f"{args.algo}__seed{seed}.json"
        if args.resume and path.exists():
            print(f"kept {path.name}")
            continue
        record = run_seed(args, seed)
        path.write_text(json.dumps(record) + "\n")
        plot(record, path.with_suffix(".png"))
    records = [json.loads(p.read_text()) for p in sorted(args.out.glob("*__seed*.json"))]
    text = report(records)
    (args.out / "report.md").write_text(text)
    print(text)
    command = ["python benchmarks/studies/price_war.py", *(sys.argv[1:] if argv is None else argv)]
    (args.out / "run.json").write_text(json.dumps({"command": " ".join(command)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
