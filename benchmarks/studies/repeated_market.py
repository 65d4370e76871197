"""Study: in the repeated market game, do learning stations compete or collude?

Calvano et al. (AER 2020)'s setting on the ``tiny_market`` game: the stations play the
stage game round after round, each observing the last ``--k`` rounds' prices (and its
own flows) through :class:`~evcs_gym.wrappers.HistoryWrapper`, and learn with discount
``--gamma`` (0.95, Calvano's δ) so that tomorrow's rivals' prices can enter today's
choice. For each algorithm and seed this script

1. trains for ``--budget`` evaluations (episodes of ``--rounds`` rounds). evcs-gym's own
   learners (``maddpg``, ``iddpg``, ``mfddpg``) train with the loop of ``evcs-gym
   train`` (:class:`~evcs_gym.baselines.GameTrainer`, the learner's config from
   :func:`~evcs_gym.baselines.recipe.learner_config` with ``gamma`` set); the peers
   ``agilerl-maddpg`` and ``agilerl-matd3`` with AgileRL's off-policy loop as
   ``examples/agilerl_pricing.py`` (and the grid) runs it, ``gamma`` set. AgileRL needs
   its own environment: where this Python has none, the script runs itself for that
   record in ``--peer-python`` (default: the nox environment ``agilerl``);
2. plays the learned pure policies for ``--horizon`` rounds from mid-bounds (the
   *path*), and again with one station forced to its floor in round ``--shock`` (the
   *impulse*), both on the same evaluation seeds;
3. scores the path's last ``--last`` rounds: their mean prices as a one-step profile,
   verified as the grid verifies its cells of the same training seed (NashConv: 32
   candidates per station searched on 2 seeds, gains on 4, from the training seed) with
   their collusion index Δ = (R − R_N) / (R_M − R_N); and how far the prices still move
   over those rounds (the *cycle amplitude*, the largest swing of a station's mean price,
   as a share of its price range);
4. records whether training settled: the learners' pure prices over each tenth of
   training, and their *drift* between the last two tenths (a share of the range).

An algorithm's seeds read as a *cycle* when the prices still swing by more than 10 % of
the range in the last rounds (median over seeds); as *collusion* when Δ's 95 % interval
over seeds lies above 0.2; as a *price war* when it lies below −0.2; as *competition*
when it lies below 0.3 (to Nash if NashConv is under 5 %, else short of it). The impulse
response says whether a deviation is punished (the rivals' prices fall after the
forced cut, then return) or ignored.

Output in ``--out``: one JSON per (algorithm, seed) (``--resume`` keeps those already
there), ``impulse_response.png`` (every station's mean price per round, the shocked path
over the unshocked one, the Nash and collusive references as lines) and ``report.txt``
(the table and the plain statement).

Run: ``python benchmarks/studies/repeated_market.py --algorithms maddpg iddpg agilerl-matd3
--seeds 0 1 2 --budget 6000 --resume --out benchmarks/results/repeated_tiny_market``
(``nox -s agilerl --install-only`` first, for the peer).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.equilibrium import exploitability
from evcs_gym.equilibrium.collusion import collusion_index
from evcs_gym.scenarios import References, load_references
from evcs_gym.wrappers import HistoryWrapper, make_vector_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the grid's code
from marl.reverify import VERIFY_0_3_0 as REVERIFY_0_3_0  # noqa: E402
from marl.runners.common import (  # noqa: E402  (the grid's verification and examples)
    REPO,
    load_example,
    package_versions,
    verify_options,
)

Policy = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
"""A learned pure policy: ``{station: observation}`` to ``{station: prices}``."""

OURS = ("maddpg", "iddpg", "mfddpg")
SCORED = (
    "relative_nash_conv",
    "relative_nash_conv_se",
    "verify_seeds",
    "verify_evaluations",
    "collusion_index",
)
"""A record's fields that :func:`score` sets."""
VERIFY_0_3_0 = REVERIFY_0_3_0["tiny_market"]
"""The records' verification until evcs-gym 0.3.0 (the grid's: 32 candidates a station)."""
PEERS = {"agilerl-maddpg": "maddpg", "agilerl-matd3": "matd3"}
"""Peer algorithms of the study, by name, and their AgileRL algorithm; they train in the
nox environment ``agilerl`` (``--peer-python``)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a scenario setting (another game: e.g. the 0.3.0 tiny_market's "
        "charging_car_rate=0.3 and reward_scale=2000)",
    )
    p.add_argument(
        "--references",
        nargs=2,
        type=Path,
        metavar=("NASH", "COLLUSIVE"),
        help="the Nash and collusive references of a game that ships none (JSON files of "
        "{station: prices}, e.g. benchmarks/inputs/tiny_market_nash_0.3.0.json)",
    )
    p.add_argument("--algorithms", nargs="+", default=["maddpg"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--budget", type=int, default=6000, help="training evaluations")
    p.add_argument("--rounds", type=int, default=10, help="rounds per training episode")
    p.add_argument("--k", type=int, default=1, help="past rounds each station observes")
    p.add_argument("--gamma", type=float, default=0.95, help="the learners' discount")
    p.add_argument("--num-envs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--horizon", type=int, default=30, help="rounds of the evaluation path")
    p.add_argument("--shock", type=int, default=15, help="round of the forced cut (0-based)")
    p.add_argument("--shocked", default=None, help="the station cut (default: the first)")
    p.add_argument("--last", type=int, default=5, help="rounds scored at the path's end")
    p.add_argument("--out", type=Path, default=Path("runs/repeated_market"))
    p.add_argument("--resume", action="store_true")
    p.add_argument("--report-only", action="store_true")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="verify as the grid's CI smoke run does (a capped search on 2 seeds): for tests",
    )
    p.add_argument(
        "--peer-python",
        type=Path,
        default=REPO / ".nox" / "agilerl" / "bin" / "python",
        help="the Python that trains the AgileRL algorithms where this one has no AgileRL "
        "(default: the nox environment, `nox -s agilerl`)",
    )
    p.add_argument(
        "--rescore",
        action="store_true",
        help="verify the records in --out again (their last rounds' prices; training and "
        "paths kept), e.g. after the verification changed",
    )
    p.add_argument("--no-report", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for algorithm in args.algorithms:
        if algorithm not in (*OURS, *PEERS):
            p.error(f"--algorithms: unknown {algorithm!r}; known: {[*OURS, *PEERS]}")
    return args


def game(args: argparse.Namespace) -> evcs_gym.NetworkData:
    """The game studied: ``--scenario`` with its ``--set`` settings."""
    from evcs_gym.cli.common import parse_settings

    return evcs_gym.load_scenario(args.scenario, **parse_settings(args.set))


def references(args: argparse.Namespace, nd: evcs_gym.NetworkData) -> References:
    """The Nash and collusive references Δ and the plot are measured against:
    ``--references``' files, else the game's shipped ones."""
    if args.references is None:
        return shipped_references(nd)
    nash, collusive = (
        {a: np.asarray(json.loads(path.read_text())[a], dtype=float) for a in nd.agent_names}
        for path in args.references
    )
    how = {"nash": str(args.references[0]), "collusive": str(args.references[1])}
    return References(nash, collusive, nd.settings_hash, how)


def train(args: argparse.Namespace, algorithm: str, seed: int) -> tuple[Policy, dict[str, Any]]:
    """Train one learner on the repeated game; return its pure policy and the run's figures."""
    if algorithm in PEERS:
        return train_agilerl(args, PEERS[algorithm], seed)
    return train_ours(args, algorithm, seed)


def train_ours(args: argparse.Namespace, algorithm: str, seed: int) -> tuple[Policy, dict]:
    """evcs-gym's own learner, trained as ``evcs-gym train`` trains it."""
    from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
    from evcs_gym.baselines.recipe import learner_config, make_learner

    nd = game(args)
    venv = make_vector_env(
        args.num_envs,
        scenario=nd,
        rounds=args.rounds,
        history={"k": args.k},
        n_workers=args.workers,
    )
    try:
        cls = ALGORITHMS[algorithm]
        config = dataclasses.replace(
            learner_config(cls.config_cls, args.budget, seed=seed), gamma=args.gamma
        )
        algo = make_learner(cls, venv, config)
        trainer = GameTrainer(
            venv,
            algo,
            TrainerConfig(budget=args.budget, check_every=10**9, seed=seed, progress=False),
        )
        t0 = time.perf_counter()
        result = trainer.train()
        rows = [r for r in trainer.history.evaluations if r.kind == "train"]
        agents = list(venv.possible_agents)
        pure = np.array([[np.mean(r.pure_prices[a]) for a in agents] for r in rows])
        info = {
            "library": "evcs-gym",
            "training_prices": training_blocks(pure, agents, nd),
            "evaluations": result.evaluations,
            "train_seconds": round(time.perf_counter() - t0, 1),
            "raw_simulations": int(sum(r.ue_iterations for r in rows)),
            "config": {
                k: v for k, v in dataclasses.asdict(config).items() if not k.startswith("_")
            },
        }
    finally:
        venv.close()

    def policy(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        batch = {a: np.asarray(o, dtype=np.float32)[None] for a, o in obs.items()}
        return {a: np.asarray(v[0], dtype=float) for a, v in algo.get_pure_actions(batch).items()}

    return policy, info


def train_agilerl(args: argparse.Namespace, algo: str, seed: int) -> tuple[Policy, dict]:
    """AgileRL's MADDPG / MATD3, trained by ``examples/agilerl_pricing.py``'s loop (its
    settings, the grid's) with the discount set to ``--gamma``; needs AgileRL installed
    (the nox environment ``agilerl``)."""
    import torch

    from evcs_gym.integrations.agilerl import learned_prices, make_vect_envs, step_values

    example = load_example("agilerl_pricing")
    torch.set_num_threads(1)
    nd = game(args)
    agents = list(nd.agent_names)
    env = make_vect_envs(args.num_envs, scenario=nd, rounds=args.rounds, k=args.k)
    pure: list[list[float]] = []  # each step's deterministic prices, a station's mean
    raw: list[int] = []  # each step's UE iterations over the copies
    try:
        agent = example.make_agent(algo, env, args.budget, seed, gamma=args.gamma)

        def record(obs: dict[str, np.ndarray], infos: dict[str, Any]) -> None:
            prices = learned_prices(agent, obs)
            pure.append([float(np.mean(prices[a])) for a in agents])
            raw.append(int(step_values(infos, "ue_iterations")[agents[0]].sum()))

        t0 = time.perf_counter()
        _, evaluations, _ = example.train(agent, env, args.budget, seed, on_step=record)
        train_seconds = time.perf_counter() - t0
    finally:
        env.close()
    agent.set_training_mode(False)
    info = {
        "library": "agilerl",
        "training_prices": training_blocks(np.array(pure), agents, nd),
        "evaluations": evaluations,
        "train_seconds": round(train_seconds, 1),
        "raw_simulations": sum(raw),
        "config": {
            "algorithm": algo,
            "num_envs": args.num_envs,
            "batch_size": agent.batch_size,
            "learn_step": agent.learn_step,
            "gamma": agent.gamma,
            "lr_actor": agent.lr_actor,
            "lr_critic": agent.lr_critic,
        },
    }
    return (lambda obs: learned_prices(agent, obs)), info


def training_blocks(pure: np.ndarray, agents: list[str], nd: evcs_gym.NetworkData) -> dict:
    """The learners' pure prices along training (``pure``: one row per training step,
    each station's mean price over its periods): their mean over each tenth of training,
    and the *drift*, the largest change between the last two tenths as a share of the
    price range (small: settled)."""
    blocks = np.array([b.mean(axis=0) for b in np.array_split(pure, 10)])
    span = np.array([nd.price_bounds[a][1] - nd.price_bounds[a][0] for a in agents])
    drift = float(np.max(np.abs(blocks[-1] - blocks[-2]) / span))
    return {"blocks": blocks.tolist(), "drift": drift}


def play(
    policy: Policy,
    nd: evcs_gym.NetworkData,
    args: argparse.Namespace,
    seed: int,
    shocked: str | None,
) -> np.ndarray:
    """Prices ``(horizon, n_agents, n_periods)`` of the learned pure policies from
    mid-bounds; with ``shocked``, that station plays its floor in round ``args.shock``.
    (The observations are the training env's: the same ``HistoryWrapper`` settings.)"""
    env = HistoryWrapper(evcs_gym.parallel_env(scenario=nd), args.horizon, k=args.k)
    obs, _ = env.reset(seed=seed, options={"initial_prices": "mid"})
    agents = list(env.possible_agents)
    path = []
    for t in range(args.horizon):
        actions = {a: np.asarray(v, dtype=float) for a, v in policy(obs).items()}
        if shocked is not None and t == args.shock:
            actions[shocked] = np.full(nd.n_periods, nd.price_bounds[shocked][0])
        obs, _, _, _, infos = env.step(actions)
        path.append([np.asarray(infos[a]["prices"], dtype=float) for a in agents])
    env.close()
    return np.asarray(path)


def run_one(args: argparse.Namespace, algorithm: str, seed: int) -> dict[str, Any]:
    nd = game(args)
    refs = references(args, nd)
    shocked = args.shocked or nd.agent_names[0]
    policy, info = train(args, algorithm, seed)
    path = play(policy, nd, args, seed, None)
    impulse = play(policy, nd, args, seed, shocked)
    last = path[-args.last :]
    prices = {a: last[:, i].mean(axis=0) for i, a in enumerate(nd.agent_names)}
    lo = np.array([nd.price_bounds[a][0] for a in nd.agent_names])
    hi = np.array([nd.price_bounds[a][1] for a in nd.agent_names])
    station_means = last.mean(axis=2)  # (last, n_agents)
    amplitude = float(np.max((station_means.max(axis=0) - station_means.min(axis=0)) / (hi - lo)))
    return {
        "scenario": nd.name,
        "settings_hash": nd.settings_hash,
        "version": evcs_gym.__version__,
        "versions": package_versions(),
        "algorithm": algorithm,
        "seed": seed,
        "rounds": args.rounds,
        "k": args.k,
        "gamma": args.gamma,
        **info,
        "horizon": args.horizon,
        "shock": args.shock,
        "shocked": shocked,
        "last": args.last,
        "path": path.tolist(),
        "impulse": impulse.tolist(),
        "prices": {a: v.tolist() for a, v in prices.items()},
        "cycle_amplitude": amplitude,
        **score(nd, refs, prices, seed, args.workers, args.smoke),
    }


def shipped_references(nd: evcs_gym.NetworkData) -> References:
    """The game's Nash and collusive references, which Δ and the plot are measured
    against; a scenario without them cannot be studied here."""
    shipped = load_references(nd)
    if shipped is None:
        raise SystemExit(f"{nd.name} ships no references for its settings: give --references")
    return shipped


def score(
    nd: evcs_gym.NetworkData,
    references: References,
    prices: dict[str, Any],
    seed: int,
    workers: int,
    smoke: bool = False,
) -> dict[str, Any]:
    """NashConv and Δ of ``prices`` as a one-step profile, verified as the grid verifies
    the cells of training seed ``seed`` (:func:`marl.runners.common.verify_options`: the
    search on the seeds after them, every gain re-evaluated on the seeds
    ``seed, seed + 1, ...``); Δ on the same seeds. ``smoke``: the CI smoke run's capped
    search instead."""
    verify = verify_options(nd.name, smoke=smoke)
    seeds = list(range(seed, seed + verify["seeds"]))
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=workers) as pool:
        cert = exploitability(
            pool,
            prices,
            seeds=seeds,
            search_seeds=verify["search_seeds"],
            held_out=verify["held_out"],
            search=verify["search"],
            budget=verify.get("budget"),
        )
        index = collusion_index(pool, prices, references, seeds=list(cert.seeds))
    return {
        "relative_nash_conv": cert.relative_nash_conv,
        "relative_nash_conv_se": cert.relative_nash_conv_se,
        "verify_seeds": list(cert.seeds),
        "verify_evaluations": cert.evaluations,
        "collusion_index": index.to_dict(),
    }


def rescore(args: argparse.Namespace, nd: evcs_gym.NetworkData) -> None:
    """Verify every record in ``--out`` again with today's verification (its last rounds'
    prices; training, paths and Δ's revenue seeds kept); the old score moves to the
    record's ``superseded`` list with the search that produced it."""
    refs = references(args, nd)
    search = dict(verify_options(nd.name, smoke=args.smoke))
    for path in sorted(args.out.glob("*__seed*.json")):
        record = json.loads(path.read_text())
        if record["settings_hash"] != nd.settings_hash:
            raise SystemExit(f"{path.name} was measured on other settings: give its --set")
        old = {k: record[k] for k in SCORED if k in record}
        old.setdefault("search", record.get("verification", VERIFY_0_3_0))
        seed = int(record["seed"])
        record.update(score(nd, refs, record["prices"], seed, args.workers, args.smoke))
        record["verification"] = search
        record["superseded"] = [*record.get("superseded", []), old]
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(
            f"rescored {path.name}: NashConv {record['relative_nash_conv']:.2%} "
            f"(was {old['relative_nash_conv']:.2%})",
            flush=True,
        )


def verdict(deltas: np.ndarray, nash_convs: np.ndarray, amplitudes: np.ndarray) -> str:
    """The plain statement for one algorithm's seeds (module docstring)."""
    lo, hi = interval(deltas)
    if np.median(amplitudes) > 0.10:
        return "cycle: the prices still swing by more than 10 % of the range"
    if lo > 0.2:
        return f"collude above Nash (Δ {deltas.mean():.2f}, 95 % interval above 0.2)"
    if hi < -0.2:
        return "compete below Nash: a price war (Δ's 95 % interval below -0.2)"
    if hi < 0.3:
        if np.mean(nash_convs) < 0.05:
            return "compete to Nash (no collusion: Δ's interval below 0.3; NashConv under 5 %)"
        return (
            "compete, without reaching the equilibrium: prices settle (no cycle) at about "
            "Nash's revenue (Δ's interval below 0.3), but a station still gains by "
            f"deviating (NashConv {np.mean(nash_convs):.1%})"
        )
    return "no clear answer: Δ's interval spans competition and collusion"


def interval(values: np.ndarray) -> tuple[float, float]:
    """A 95 % interval of the mean over seeds (normal, from the standard error)."""
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    half = 1.96 * float(np.std(values, ddof=1) / np.sqrt(len(values)))
    return float(values.mean() - half), float(values.mean() + half)


def command(args: argparse.Namespace, records: list[dict[str, Any]]) -> str:
    """The command that reproduces ``records``: their algorithms and seeds, every option
    spelled out."""
    algorithms = sorted({r["algorithm"] for r in records})
    seeds = sorted({int(r["seed"]) for r in records})
    game = "".join(f" --set {pair}" for pair in args.set or ())
    if args.references:
        game += f" --references {args.references[0]} {args.references[1]}"
    return (
        f"python benchmarks/studies/repeated_market.py --scenario {args.scenario}{game} "
        f"--algorithms {' '.join(algorithms)} --seeds {' '.join(map(str, seeds))} "
        f"--budget {args.budget} --rounds {args.rounds} --k {args.k} --gamma {args.gamma} "
        f"--horizon {args.horizon} --shock {args.shock} --last {args.last} --resume "
        f"--out {args.out}"
    )


def report(args: argparse.Namespace, records: list[dict[str, Any]]) -> str:
    nd = game(args)
    lines = [
        f"$ {command(args, records)}",
        f"Repeated {nd.name} (settings {nd.settings_hash}): k = {args.k} past round(s) "
        f"observed, discount {args.gamma}, {args.budget} training evaluations in episodes "
        f"of {args.rounds} rounds; scored on the last {args.last} of {args.horizon} rounds "
        "from mid-bounds",
        f"NashConv verified as the grid's cells of the same seed: "
        f"{records[0].get('verification', VERIFY_0_3_0)} (a rescored record: was, the earlier "
        "figure)",
        "",
        "| algorithm | seed | NashConv | Δ | cycle amplitude | training drift | training "
        "(raw sims) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["algorithm"], r["seed"])):
        ci = r["collusion_index"]
        was = "".join(f" (was {old['relative_nash_conv']:.2%})" for old in r.get("superseded", []))
        lines.append(
            f"| {r['algorithm']} | {r['seed']} | {r['relative_nash_conv']:.2%} ± "
            f"{r['relative_nash_conv_se']:.2%}{was} | "
            f"{ci['delta']:.2f} ± {ci['delta_se'] or 0:.2f} | "
            f"{r['cycle_amplitude']:.0%} | {r['training_prices']['drift']:.1%} | "
            f"{r['train_seconds'] / 60:.1f} min "
            f"({r['raw_simulations']}) |"
        )
    lines.append("")
    for algorithm in sorted({r["algorithm"] for r in records}):
        rs = [r for r in records if r["algorithm"] == algorithm]
        deltas = np.array([r["collusion_index"]["delta"] for r in rs])
        ncs = np.array([r["relative_nash_conv"] for r in rs])
        amps = np.array([r["cycle_amplitude"] for r in rs])
        lo, hi = interval(deltas)
        lines.append(
            f"{algorithm} ({len(rs)} seeds): Δ {deltas.mean():.2f} [{lo:.2f}, {hi:.2f}], "
            f"NashConv {ncs.mean():.2%}, cycle amplitude {np.median(amps):.0%} (median): "
            + verdict(deltas, ncs, amps)
        )
    ci = records[0]["collusion_index"]
    lines.append(
        f"references on seeds {ci['seeds']}: Nash total revenue {ci['nash_revenue']:.0f}, "
        f"collusive {ci['collusive_revenue']:.0f}"
    )
    return "\n".join(lines) + "\n"


def plot(args: argparse.Namespace, records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nd = game(args)
    refs = references(args, nd)
    algorithms = sorted({r["algorithm"] for r in records})
    seeds = sorted({r["seed"] for r in records})
    fig, axes = plt.subplots(
        len(algorithms),
        len(seeds),
        figsize=(3.0 * len(seeds) + 0.6, 2.8 * len(algorithms) + 0.6),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax in axes.flat:
        ax.set_visible(False)
    for r in records:
        ax = axes[algorithms.index(r["algorithm"])][seeds.index(r["seed"])]
        ax.set_visible(True)
        base = np.asarray(r["path"]).mean(axis=2)
        shocked = np.asarray(r["impulse"]).mean(axis=2)
        rounds = np.arange(len(base))
        for i, a in enumerate(nd.agent_names):
            c = colors[i % len(colors)]
            ax.plot(rounds, shocked[:, i], color=c, label=a)
            ax.plot(rounds, base[:, i], color=c, ls=":", lw=1)
            ax.axhline(np.mean(refs.nash[a]), color=c, ls="--", lw=0.8, alpha=0.6)
            ax.axhline(np.mean(refs.collusive[a]), color=c, ls="-.", lw=0.8, alpha=0.6)
        ax.axvline(r["shock"], color="grey", lw=0.8)
        ax.set_title(f"{r['algorithm']}, seed {r['seed']}", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("round")
    for row in axes:
        row[0].set_ylabel("mean price")
    first = records[0]
    axes[0][0].legend(
        fontsize=7, title=f"{first['shocked']} cut in round {first['shock']}", title_fontsize=7
    )
    fig.suptitle(
        f"Repeated {nd.name}: solid with the cut, dotted without;\n"
        "dashed: Nash reference, dash-dot: collusive reference",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_in_peer_python(args: argparse.Namespace, algorithm: str, seed: int) -> None:
    """Run this script for one peer record in ``--peer-python`` (the record lands in
    ``--out``); a failure there stops the study."""
    python = args.peer_python
    if not python.exists():
        raise SystemExit(
            f"{algorithm} needs AgileRL: no Python at --peer-python {python} "
            "(run `nox -s agilerl --install-only`)"
        )
    argv = [str(python), str(Path(__file__).resolve()), "--algorithms", algorithm]
    argv += ["--seeds", str(seed), "--out", str(args.out), "--no-report"]
    options = ("scenario", "budget", "rounds", "k", "gamma", "num_envs", "workers")
    for name in (*options, "horizon", "shock", "last"):
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.shocked is not None:
        argv += ["--shocked", args.shocked]
    for pair in args.set or ():
        argv += ["--set", pair]
    if args.references:
        argv += ["--references", *map(str, args.references)]
    subprocess.run(argv, check=True, cwd=REPO)


def has_agilerl() -> bool:
    return importlib.util.find_spec("agilerl") is not None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    nd = game(args)
    if not args.report_only:
        for algorithm in args.algorithms:
            for seed in args.seeds:
                path = args.out / f"{algorithm}__seed{seed}.json"
                if args.resume and path.exists():
                    old = json.loads(path.read_text())
                    if old.get("settings_hash") == nd.settings_hash:
                        print(f"kept {path.name}", flush=True)
                        continue
                if algorithm in PEERS and not has_agilerl():
                    run_in_peer_python(args, algorithm, seed)
                    continue
                t0 = time.perf_counter()
                record = run_one(args, algorithm, seed)
                record["wall_s"] = round(time.perf_counter() - t0, 1)
                path.write_text(json.dumps(record, indent=1) + "\n")
                ci = record["collusion_index"]
                print(
                    f"{path.name}: NashConv {record['relative_nash_conv']:.2%}, Δ "
                    f"{ci['delta']:.2f}, cycle {record['cycle_amplitude']:.0%}, "
                    f"{record['wall_s'] / 60:.1f} min",
                    flush=True,
                )
    if args.rescore:
        rescore(args, nd)
    if args.no_report:
        return 0
    records = [json.loads(p.read_text()) for p in sorted(args.out.glob("*__seed*.json"))]
    if records:
        text = report(args, records)
        (args.out / "report.txt").write_text(text)
        plot(args, records, args.out / "impulse_response.png")
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
