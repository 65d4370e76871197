"""Study: does tabular Q-learning collude, as Calvano et al. (AER 2020) found, on the
traffic markets?

Calvano, Calzolari, Denicolò and Pastorello let two tabular Q-learners set prices round
after round in a logit market (15 prices, memory of one round, α = 0.15, β = 4 × 10⁻⁶,
δ = 0.95) and find that they learn to collude: an average profit gain Δ of 0.85,
sustained by punishments after a deviation. This script runs their protocol, with the
package's pieces, on four grid games:

1. ``anchor``: their market in closed form (:class:`~evcs_gym.tabular.LogitMarket`), no
   simulator: the reproduction;
2. ``simulator``: the same market built as a congestion-free scenario folder (one-kWh
   drivers, the outside option, logit quasi-random tastes) and tabulated in the
   simulator: its table against the closed form's, and its Q-learning Δ;
3. ``tiny_market`` and 4. ``siouxfalls_market``: the traffic markets, on Calvano's grid
   from each game's shipped Nash reference N to its collusive reference M
   (:func:`~evcs_gym.tabular.calvano_grid`; ``--m-tiny`` and ``--m-sioux`` levels).

For each: the grid game's table (:func:`~evcs_gym.tabular.simulator_table`, on a pool,
kept in the disk cache and under ``--out``/tables), what the grid game says (pure
equilibria, the joint optimum, against the continuous N and M), ``--sessions``
Q-learning sessions (:func:`~evcs_gym.baselines.qlearning.run_qlearning`, seed
``--seed``), and per session: converged or not, rounds to converge, the limit cycle and
its prices, Δ, the stage game's NashConv on the grid, the one-shot and best-reply gains
in the repeated game, and impulse responses (each station in turn deviates for one round
to its static best response; is it punished, does play return?).

Output in ``--out``: ``run.json`` (the command and the games), ``<part>.json`` per part
(``--resume`` keeps those whose table key and configuration are unchanged),
``tables/<part>.npz`` (the tables, read back by a later run when their keys hold),
``delta.png`` (Δ over sessions per part), ``impulse_<part>.png`` and ``report.md`` (the
tables and the plain answer).

Run: ``python benchmarks/studies/calvano.py --resume`` (all four parts, 100 sessions
each). A smoke run: ``--parts anchor tiny_market --sessions 2 --max-rounds 2000 --m-tiny 3``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.baselines.qlearning import QLearningConfig, run_qlearning
from evcs_gym.baselines.strategies import impulse_response, session_outcome
from evcs_gym.envs import TablePricingEnv
from evcs_gym.tabular import LogitMarket, PayoffTable, calvano_grid, save_table, simulator_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calvano_report  # noqa: E402  (the report and plots of this study)

PARTS = ("anchor", "simulator", "tiny_market", "siouxfalls_market")
REPO = Path(__file__).resolve().parents[2]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--seed", type=int, default=0, help="the Q-learning run's seed")
    p.add_argument("--max-rounds", type=int, default=10_000_000)
    p.add_argument("--window", type=int, default=100_000, help="rounds of unchanged strategies")
    p.add_argument("--alpha", type=float, default=0.15)
    p.add_argument("--beta", type=float, default=4e-6)
    p.add_argument("--delta", type=float, default=0.95)
    p.add_argument("--m-anchor", type=int, default=15, help="levels of the logit markets")
    p.add_argument("--m-tiny", type=int, default=15, help="levels of tiny_market's grid")
    p.add_argument("--m-sioux", type=int, default=6, help="levels of siouxfalls_market's grid")
    p.add_argument("--xi", type=float, default=0.1)
    p.add_argument("--drivers", type=int, default=2000, help="drivers of the simulator's market")
    p.add_argument("--table-seed", type=int, default=0, help="evaluation seed of the tables")
    p.add_argument("--horizon", type=int, default=30, help="rounds of the impulse responses")
    p.add_argument("--workers", type=int, default=2, help="pool workers filling a table")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/calvano"))
    p.add_argument("--resume", action="store_true")
    p.add_argument("--report-only", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for part in args.parts:
        path = args.out / f"{part}.json"
        if args.report_only or args.resume:
            kept = _kept(path, part, args)
            if kept is not None and "references" not in kept:  # records before these fields
                kept["table_env_step_us"] = step_time(table_of(part, args))
                kept["references"] = reference_prices(part, args)
                path.write_text(json.dumps(kept, default=_jsonable))
            if kept is not None or args.report_only:
                results[part] = kept
                continue
        t0 = time.perf_counter()
        print(f"== {part}", flush=True)
        results[part] = run_part(part, args)
        results[part]["wall_seconds"] = time.perf_counter() - t0
        path.write_text(json.dumps(results[part], default=_jsonable))
    results = {k: v for k, v in results.items() if v is not None}
    command = ["python benchmarks/studies/calvano.py", *(sys.argv[1:] if argv is None else argv)]
    run = {"command": " ".join(command), "games": games(results)}
    (args.out / "run.json").write_text(json.dumps(run, indent=2))
    text = calvano_report.write(results, args, sys.argv if argv is None else argv)
    print(text)
    return results


def games(results: dict[str, Any]) -> dict[str, list[str]]:
    """The game each part played, as the results index reads it."""
    from evcs_gym import __version__

    out = {}
    for part, record in results.items():
        settings = record["table"]["meta"].get("settings_hash")
        out[part] = [f"evcs-gym {__version__}, settings {settings}"] if settings else []
    return out


def config(args: argparse.Namespace) -> QLearningConfig:
    return QLearningConfig(
        alpha=args.alpha,
        beta=args.beta,
        delta=args.delta,
        sessions=args.sessions,
        window=args.window,
        max_rounds=args.max_rounds,
        seed=args.seed,
    )


def _kept(path: Path, part: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """The part's record if it was run with this configuration on the same table."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    same = record.get("qlearning", {}).get("config") == dataclasses.asdict(config(args))
    if not same or record.get("table_key") != _expected_key(part, args):
        print(f"{path}: stale (another configuration or table); running {part} again")
        return None
    return record


def _expected_key(part: str, args: argparse.Namespace) -> str | None:
    """The key the part's table would have now (None for the closed form)."""
    if part == "anchor":
        return None
    nd, grid = game(part, args)
    from evcs_gym.scenarios import load_references
    from evcs_gym.tabular import table_key

    return table_key(nd, grid, args.table_seed, load_references(nd))


# ---------------------------------------------------------------------- the tables
def game(part: str, args: argparse.Namespace) -> tuple[evcs_gym.NetworkData, Any]:
    """The scenario and Calvano grid of a simulator part."""
    if part == "simulator":
        folder = LogitMarket().write_scenario(args.out / "scenario", drivers=args.drivers)
        nd = evcs_gym.load_scenario(folder)
        return nd, calvano_grid(nd, m=args.m_anchor, xi=args.xi)
    nd = evcs_gym.load_scenario(part)
    m = args.m_tiny if part == "tiny_market" else args.m_sioux
    return nd, calvano_grid(nd, m=m, xi=args.xi)


def table_of(part: str, args: argparse.Namespace) -> PayoffTable:
    """The part's table: the closed form, or the simulator's (cache, shipped file, pool)."""
    if part == "anchor":
        market = LogitMarket()
        return market.table(market.grid(m=args.m_anchor, xi=args.xi))
    nd, grid = game(part, args)
    shipped = args.out / "tables" / f"{part}.npz"
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(
                f"  {part}: {done}/{total} profiles, {time.perf_counter() - t0:.0f} s", flush=True
            )

    table = simulator_table(
        nd, grid, seed=args.table_seed, n_workers=args.workers, shipped=shipped, progress=progress
    )
    save_table(table, shipped)
    return table


# ---------------------------------------------------------------------- one part
def run_part(part: str, args: argparse.Namespace) -> dict[str, Any]:
    table = table_of(part, args)
    record: dict[str, Any] = {
        "part": part,
        "table_key": table.meta.get("key"),
        "table": table_summary(table),
        "grid_game": grid_game(table),
        "references": reference_prices(part, args),
    }
    if part == "simulator":
        record["closed_form"] = against_closed_form(table, args)
    record["table_env_step_us"] = step_time(table)
    record["qlearning"] = learn(table, args)
    return record


def step_time(table: PayoffTable, steps: int = 5000) -> float:
    """Microseconds a step of :class:`~evcs_gym.envs.TablePricingEnv` on ``table``."""
    env = TablePricingEnv(table, rounds=steps)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    plays = [
        {a: int(x) for a, x in zip(env.possible_agents, rng.integers(table.m, size=table.n_agents))}
        for _ in range(steps)
    ]
    t0 = time.perf_counter()
    for actions in plays:
        env.step(actions)
    return (time.perf_counter() - t0) / steps * 1e6


def reference_prices(part: str, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Each station's prices at the continuous N and M (the grid's path ends)."""
    if part == "anchor":
        market = LogitMarket()
        pn, pm = market.nash_prices(), market.monopoly_prices()
        return {a: {"nash": [pn[i]], "collusive": [pm[i]]} for i, a in enumerate(market.agents)}
    from evcs_gym.scenarios import load_references

    nd, _ = game(part, args)
    refs = load_references(nd)
    assert refs is not None  # the grid was built from them
    return {
        a: {"nash": refs.nash[a].tolist(), "collusive": refs.collusive[a].tolist()}
        for a in nd.agent_names
    }


def table_summary(table: PayoffTable) -> dict[str, Any]:
    grid = table.grid
    return {
        "agents": list(grid.agents),
        "m": grid.m,
        "t": None if grid.t is None else grid.t.tolist(),
        "prices": grid.prices.tolist(),
        "profiles": grid.n_profiles,
        "nash_rewards": table.reference_rewards["nash"].tolist(),
        "collusive_rewards": table.reference_rewards["collusive"].tolist(),
        "reward_scale": table.reward_scale,
        "meta": table.meta,
    }


def grid_game(table: PayoffTable) -> dict[str, Any]:
    """What the grid game says, against the continuous N and M."""
    grid, n = table.grid, table.n_agents

    def describe(levels: Sequence[int]) -> dict[str, Any]:
        total = table.total(levels)
        return {
            "levels": [int(x) for x in levels],
            "t": None if grid.t is None else [float(grid.t[x]) for x in levels],
            "delta": table.delta(total),
            "nash_conv": table.nash_conv(levels),
        }

    every = grid.levels(np.arange(grid.n_profiles))
    conv = np.array([table.nash_conv(lv) for lv in every])
    sym = [describe([k] * n) for k in range(grid.m)]
    return {
        "pure_nash": [describe(lv) for lv in table.pure_nash()],
        "near_nash_1pct": len(table.pure_nash(tol=0.01)),
        "least_exploitable": describe(every[int(conv.argmin())]),
        "joint_optimum": describe(table.joint_optimum()),
        "symmetric_levels": sym,
        "best_response_dynamics": {
            start: table.best_response_dynamics([k] * n)[-3:].tolist()
            for start, k in (("lowest", 0), ("highest", grid.m - 1))
        },
    }


def against_closed_form(table: PayoffTable, args: argparse.Namespace) -> dict[str, Any]:
    """The simulator's market against the closed form: rewards per driver, in drivers."""
    market = LogitMarket()
    closed = market.table(market.grid(m=args.m_anchor, xi=args.xi))
    levels = table.grid.levels(np.arange(table.grid.n_profiles))
    margin = table.grid.prices[np.arange(table.n_agents), levels, 0] - 1.0
    drivers_off = np.abs(table.rewards - args.drivers * closed.rewards) / margin
    return {
        "drivers": args.drivers,
        "max_drivers_off": float(drivers_off.max()),
        "mean_drivers_off": float(drivers_off.mean()),
        "max_profit_error_per_driver": float(
            np.abs(table.rewards / args.drivers - closed.rewards).max()
        ),
        "same_joint_optimum": table.joint_optimum() == closed.joint_optimum(),
        "same_pure_nash": table.pure_nash() == closed.pure_nash(),
        "nash_reward_per_driver": (table.reference_rewards["nash"] / args.drivers).tolist(),
        "closed_nash_profit": closed.reference_rewards["nash"].tolist(),
    }


def learn(table: PayoffTable, args: argparse.Namespace) -> dict[str, Any]:
    """Q-learning sessions on the table and what each learned."""
    cfg = config(args)
    print(f"  Q-learning: {cfg.sessions} sessions, up to {cfg.max_rounds:,} rounds", flush=True)
    result = run_qlearning(table, cfg)
    print(f"  {result.seconds:.0f} s, {result.rounds_run:,} rounds", flush=True)
    t0 = time.perf_counter()
    sessions = []
    for s in range(cfg.sessions):
        strategies, state = result.strategies[s], int(result.last_state[s])
        outcome = session_outcome(table, strategies, state, cfg.delta).to_dict()
        irs = [
            impulse_response(table, strategies, state, i, args.horizon)
            for i in range(table.n_agents)
        ]
        outcome.update(
            converged=bool(result.converged[s]),
            rounds_to_converge=int(result.rounds_to_converge[s]),
            impulse=[_ir_record(ir) for ir in irs],
        )
        sessions.append(outcome)
    return {
        "config": dataclasses.asdict(cfg),
        "seconds": result.seconds,
        "analysis_seconds": time.perf_counter() - t0,
        "rounds_run": result.rounds_run,
        "sessions": sessions,
        "summary": calvano_report.summarize(sessions, table),
    }


def _ir_record(ir: Any) -> dict[str, Any]:
    return {
        "deviator": ir.deviator,
        "levels": ir.levels.tolist(),
        "mean_prices": ir.prices.mean(axis=2).tolist(),
        "returned": ir.returned,
        "punishment_length": None if math.isnan(ir.punishment_length) else ir.punishment_length,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value)}")


if __name__ == "__main__":
    main()
