"""Study: tune a learner's recipe for one game with Optuna, on training seeds of its own.

Each trial trains the learner with ``evcs-gym train --recipe none --hyperparams ...`` (the
package's defaults plus the trial's settings) at the game's budget on every ``--seeds``
seed, and scores it by the mean verified NashConv (the converged search, the grid's), the
quantity the grid reports. The seeds default to 100 and 101, never the grid's reported
0-4, so that a recipe is confirmed on seeds it was not tuned on. The first trial is the
game's shipped recipe, or the package's defaults if it has none (``--no-baseline`` skips
it), so the study says what it improves.

The sampler is Optuna's TPE, seeded. Its first 10 trials are random draws (TPE's
startup), so a study of 10 trials or fewer is a seeded random search. Every finished
trial is written to ``trials.json`` at once; ``--resume`` replays them into a new study
and goes on to ``--trials`` in all, so an interrupted study loses at most the trial in
flight. A resumed sampler is seeded by the trials it replays (``--sampler-seed`` plus
their number): seeded as the interrupted one was, it would redraw that one's first
settings.

The search space (:data:`SPACE`) covers what the price-war study found to matter
(gradient steps per evaluation, the warm-up) and the usual DDPG settings: the two
learning rates, the exploration noise and its decay, the batch, the target-network rate
and the replay buffer's size (an independent critic sees its rivals only through its
rows, so old rows describe rivals that have moved on: IDDPG's default keeps 256).

``--confirm TRIAL ... --seeds 0 1 2 3 4`` trains chosen trials' settings on other seeds
(the grid's) and adds the runs to ``trials.json`` and ``tuning.md``: a candidate confirmed
on seeds it was not chosen on.

Output in ``--out``: ``trials.json`` (each trial's settings, whether it is the shipped
recipe, per-seed NashConv, Δ and raw simulations), ``logs/`` (each training run's
output), ``tuning.md`` (the trials ranked, the best as a recipe table) and ``run.json``
(the commands run).

Run: ``python benchmarks/studies/tune_recipe.py --scenario tiny_market --algo iddpg
--trials 6 --out benchmarks/results/tuning_tiny_market/iddpg --resume`` (about 4 minutes
a trial and seed on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna

from evcs_gym.baselines.game_recipes import game_recipe
from evcs_gym.baselines.registry import ALGORITHM_NAMES
from evcs_gym.cli import main as cli

SPACE: dict[str, optuna.distributions.BaseDistribution] = {
    "actor_lr": optuna.distributions.FloatDistribution(1e-4, 3e-3, log=True),
    "critic_lr": optuna.distributions.FloatDistribution(3e-4, 1e-2, log=True),
    "noise_std": optuna.distributions.FloatDistribution(0.02, 0.3, log=True),
    "noise_decay": optuna.distributions.CategoricalDistribution([0.99, 0.995, 0.999, 1.0]),
    "updates_per_learn": optuna.distributions.CategoricalDistribution([4, 8, 16, 32, 64]),
    "random_warmup": optuna.distributions.CategoricalDistribution([32, 64, 128, 256]),
    "batch_size": optuna.distributions.CategoricalDistribution([32, 64, 128]),
    "tau": optuna.distributions.CategoricalDistribution([0.005, 0.01, 0.05]),
    "buffer_size": optuna.distributions.CategoricalDistribution([128, 256, 512, 100_000]),
}
"""The learner config fields tuned, and their ranges."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--algo", default="maddpg", choices=list(ALGORITHM_NAMES))
    p.add_argument(
        "--budget", type=int, default=None, help="None: the recipe's [train] budget, else 600"
    )
    p.add_argument("--trials", type=int, default=16, help="trials in all (with --resume)")
    p.add_argument("--seeds", nargs="+", type=int, default=[100, 101], help="training seeds")
    p.add_argument("--verify-seeds", type=int, default=4)
    p.add_argument("--verify-budget", type=int, default=None, help="None: converged search")
    p.add_argument("--sampler-seed", type=int, default=0)
    p.add_argument(
        "--transfer-from",
        metavar="GAME",
        help="also try GAME's recipe for --algo as the next trial (does it transfer?)",
    )
    p.add_argument(
        "--no-baseline", action="store_true", help="no first trial of the recipe or defaults"
    )
    p.add_argument(
        "--confirm",
        nargs="+",
        type=int,
        metavar="TRIAL",
        help="no new trials: train these trials' settings on --seeds (the grid's) and record them",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/tune_recipe"))
    p.add_argument("--resume", action="store_true", help="keep the trials of trials.json")
    return p.parse_args(argv)


def baseline_params(scenario: str, algo: str, budget: int | None = None) -> dict[str, Any]:
    """The settings ``evcs-gym train`` uses today for ``algo`` on ``scenario`` at ``budget``
    evaluations (None: the recipe's, else 600), on the tuned fields: the shipped recipe's,
    or the package's defaults if the game has none."""
    from evcs_gym.baselines import ALGORITHMS
    from evcs_gym.baselines.recipe import learner_config

    recipe = game_recipe(scenario)
    if budget is None:
        budget = game_budget(scenario)
    overrides = recipe.learner(algo) if recipe is not None else None
    config = learner_config(ALGORITHMS[algo].config_cls, budget, overrides=overrides)
    return {name: getattr(config, name) for name in SPACE}


def space_with(
    params: Sequence[Mapping[str, Any]],
) -> dict[str, optuna.distributions.BaseDistribution]:
    """:data:`SPACE` widened to hold ``params`` (the baseline and transfer trials: a 0.2.0
    game's defaults take 2 updates a learning step, a budget of 200 a warm-up of 50)."""
    space = dict(SPACE)
    for name, dist in SPACE.items():
        values = [p[name] for p in params]
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            extra = [v for v in values if v not in dist.choices]
            space[name] = optuna.distributions.CategoricalDistribution(
                sorted([*dist.choices, *dict.fromkeys(extra)])
            )
        elif isinstance(dist, optuna.distributions.FloatDistribution):
            low, high = min([dist.low, *values]), max([dist.high, *values])
            space[name] = optuna.distributions.FloatDistribution(low, high, log=dist.log)
    return space


def search_space(args: argparse.Namespace) -> dict[str, optuna.distributions.BaseDistribution]:
    """The study's space: :data:`SPACE`, widened to hold its enqueued trials."""
    fixed = [] if args.no_baseline else [baseline_params(args.scenario, args.algo, budget_of(args))]
    if args.transfer_from:
        fixed.append(baseline_params(args.transfer_from, args.algo, budget_of(args)))
    return space_with(fixed)


def baseline_name(scenario: str) -> str:
    """What trial 0 is: the game's shipped recipe, or the package's defaults."""
    return "the shipped recipe" if game_recipe(scenario) is not None else "the package's defaults"


def train_once(
    args: argparse.Namespace, number: int, params: Mapping[str, Any], seed: int
) -> dict[str, Any]:
    """Train and verify one seed through ``evcs-gym train`` (its output to
    ``logs/trial<number>_seed<seed>.log``); the run's figures."""
    with tempfile.TemporaryDirectory() as out:
        argv = ["train", "--scenario", args.scenario, "--algo", args.algo, "--recipe", "none"]
        argv += ["--budget", str(budget_of(args)), "--rounds", "0", "--seed", str(seed)]
        argv += ["--verify-seeds", str(args.verify_seeds), "--workers", str(args.workers)]
        if args.verify_budget is not None:
            argv += ["--verify-budget", str(args.verify_budget)]
        for name, value in params.items():
            argv += ["--hyperparams", f"{name}={json.dumps(value)}"]
        log = args.out / "logs" / f"trial{number}_seed{seed}.log"
        log.parent.mkdir(exist_ok=True)
        with log.open("w") as f, contextlib.redirect_stdout(f):
            print("evcs-gym", " ".join(argv))
            status = cli([*argv, "--out", out, "--quiet"])
        if status != 0:
            raise RuntimeError(f"evcs-gym {' '.join(argv)} failed (log: {log})")
        summary = json.loads((Path(out) / "summary.json").read_text())
    certificate = summary["verified_exploitability"]
    return {
        "seed": seed,
        "nash_conv_pct": 100 * float(certificate["relative_nash_conv"]),
        "delta": (summary.get("collusion_index") or {}).get("delta"),
        "raw_simulations": summary["time_split"]["raw_simulations"],
    }


def game_budget(scenario: str) -> int:
    """The game's training budget: its recipe's ``[train]`` budget (not a learner's own
    ``[train.<learner>]``: the trials of one game share one budget), else 600."""
    recipe = game_recipe(scenario)
    return int(recipe.train.get("budget", 600)) if recipe is not None else 600


def budget_of(args: argparse.Namespace) -> int:
    return int(args.budget) if args.budget is not None else game_budget(args.scenario)


def run_trial(args: argparse.Namespace, number: int, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every seed of one trial; its record (the objective: mean NashConv, %)."""
    start = time.perf_counter()
    runs = [train_once(args, number, params, seed) for seed in args.seeds]
    value = sum(r["nash_conv_pct"] for r in runs) / len(runs)
    return {
        "number": number,
        "params": dict(params),
        "value": value,
        "runs": runs,
        "minutes": (time.perf_counter() - start) / 60,
    }


def new_study(args: argparse.Namespace, records: Sequence[Mapping[str, Any]]) -> optuna.Study:
    """A TPE study holding ``records``, its sampler seeded by their number: a sampler
    seeded as the interrupted study's was would replay that study's first random draws."""
    sampler = optuna.samplers.TPESampler(seed=args.sampler_seed + len(records))
    study = optuna.create_study(sampler=sampler)
    replay(study, records, search_space(args))
    return study


def replay(
    study: optuna.Study,
    records: Sequence[Mapping[str, Any]],
    space: Mapping[str, optuna.distributions.BaseDistribution],
) -> None:
    """Add finished trials of an earlier run to ``study``."""
    for r in records:
        study.add_trial(
            optuna.trial.create_trial(
                params=dict(r["params"]), distributions=dict(space), value=float(r["value"])
            )
        )


def report(args: argparse.Namespace, records: Sequence[Mapping[str, Any]]) -> str:
    """``tuning.md``: the trials ranked by the objective, and the best as a recipe table."""
    names = list(SPACE)
    lines = [
        f"# Tuning {args.algo} on {args.scenario}",
        "",
        f"Optuna TPE (sampler seed {args.sampler_seed}; its first 10 trials are random "
        f"draws), {len(records)} trials, budget "
        f"{budget_of(args)} evaluations, training seeds {', '.join(map(str, args.seeds))}; "
        f"objective: mean verified NashConv ({_search(args)}, {args.verify_seeds} seeds)."
        + (
            f" Trial 0 is {records[0].get('baseline', 'the shipped recipe')}."
            if records and records[0]["recipe"]
            else ""
        )
        + "".join(
            f" Trial {r['number']} is {r['transfer']}'s recipe."
            for r in records
            if r.get("transfer")
        ),
        "",
        "| trial | NashConv % | per seed | Δ per seed | " + " | ".join(names) + " |",
        "|---" * (len(names) + 4) + "|",
    ]
    for r in sorted(records, key=lambda r: r["value"]):
        seeds = ", ".join(f"{x['nash_conv_pct']:.2f}" for x in r["runs"])
        deltas = ", ".join("-" if x["delta"] is None else f"{x['delta']:.2f}" for x in r["runs"])
        cells = " | ".join(_fmt(r["params"][n]) for n in names)
        lines.append(f"| {r['number']} | {r['value']:.2f} | {seeds} | {deltas} | {cells} |")
    if records:
        best = min(records, key=lambda r: r["value"])
        lines += ["", f"Best (trial {best['number']}), as a recipe table:", "", "```toml"]
        lines += [f"[{args.algo}]"] + [f"{k} = {_fmt(v)}" for k, v in best["params"].items()]
        lines += ["```"]
    return "\n".join([*lines, *confirmation_report(records)]) + "\n"


def confirmation_report(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """``tuning.md``'s lines on the trials confirmed on other seeds (``--confirm``)."""
    confirmed = [(r, seeds, c) for r in records for seeds, c in r.get("confirmed", {}).items()]
    if not confirmed:
        return []
    lines = ["", "## Confirmed on other seeds (`--confirm`)", ""]
    lines += ["| trial | seeds | NashConv % | per seed | Δ per seed |", "|---|---|---|---|---|"]
    for r, seeds, c in sorted(confirmed, key=lambda x: (x[1], x[2]["value"])):
        per_seed = ", ".join(f"{x['nash_conv_pct']:.2f}" for x in c["runs"])
        deltas = ", ".join("-" if x["delta"] is None else f"{x['delta']:.2f}" for x in c["runs"])
        lines.append(f"| {r['number']} | {seeds} | {c['value']:.2f} | {per_seed} | {deltas} |")
    return lines


def confirm(args: argparse.Namespace, path: Path) -> None:
    """Train each ``--confirm`` trial's settings on ``--seeds`` once (seeds it was not
    chosen on, such as the grid's), recording the runs in the trial's ``confirmed`` in
    ``path`` (``trials.json``), and rewrite ``tuning.md``."""
    if not path.exists():
        raise SystemExit(f"--confirm needs a study in --out {args.out}: no {path.name} there")
    data = json.loads(path.read_text())
    key = " ".join(map(str, args.seeds))
    for number in args.confirm:
        record = data["trials"][number]
        done = record.setdefault("confirmed", {})
        if key in done:
            continue
        result = run_trial(args, number, record["params"])
        done[key] = {k: result[k] for k in ("value", "runs", "minutes")}
        path.write_text(json.dumps(data, indent=1))
        print(
            f"trial {number} on seeds {key}: {result['value']:.2f} % ({result['minutes']:.1f} min)"
        )
    tuned = argparse.Namespace(**{**data["args"], "out": args.out})  # the study's settings
    (args.out / "tuning.md").write_text(report(tuned, data["trials"]))


def _search(args: argparse.Namespace) -> str:
    if args.verify_budget is None:
        return "converged search"
    return f"converged search capped at {args.verify_budget} candidates"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "trials.json"
    if args.confirm:
        write_run(args, argv)
        confirm(args, path)
        return 0
    records: list[dict[str, Any]] = []
    if args.resume and path.exists():
        records = json.loads(path.read_text())["trials"]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = new_study(args, records)
    baseline = (
        None if args.no_baseline else baseline_params(args.scenario, args.algo, budget_of(args))
    )
    if baseline is not None and not records:
        study.enqueue_trial(baseline)
    if args.transfer_from and not any(r.get("transfer") for r in records):
        study.enqueue_trial(baseline_params(args.transfer_from, args.algo, budget_of(args)))
    write_run(args, argv)
    space = search_space(args)
    while len(records) < args.trials:
        trial = study.ask(space)
        record = run_trial(args, len(records), trial.params)
        record["recipe"] = baseline is not None and not records  # the enqueued trial 0
        if record["recipe"]:
            record["baseline"] = baseline_name(args.scenario)  # as the game was then
        record["transfer"] = _is_transfer(args, records, trial.params)
        study.tell(trial, record["value"])
        records.append(record)
        path.write_text(json.dumps({"args": _args(args), "trials": records}, indent=1))
        print(f"trial {record['number']}: {record['value']:.2f} % ({record['minutes']:.1f} min)")
    (args.out / "tuning.md").write_text(report(args, records))
    return 0


def _is_transfer(
    args: argparse.Namespace, records: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> str | None:
    """The game whose recipe this trial is (``--transfer-from``'s trial), else None."""
    if not args.transfer_from or any(r.get("transfer") for r in records):
        return None
    recipe = baseline_params(args.transfer_from, args.algo, budget_of(args))
    return args.transfer_from if dict(params) == recipe else None


def write_run(args: argparse.Namespace, argv: Sequence[str] | None) -> None:
    """``run.json``: every command that wrote into ``--out`` (a new study starts it afresh;
    ``--resume`` and ``--confirm`` add to the study there)."""
    path = args.out / "run.json"
    adds = args.resume or bool(args.confirm)
    run = json.loads(path.read_text()) if adds and path.exists() else {"commands": []}
    command = " ".join(["python benchmarks/studies/tune_recipe.py", *(argv or sys.argv[1:])])
    run["commands"].append({"command": command, "date": time.strftime("%Y-%m-%d %H:%M")})
    path.write_text(json.dumps(run, indent=1))


def _args(args: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


if __name__ == "__main__":
    raise SystemExit(main())
