"""Command-line interface: ``evcs-gym <command> ...``.

Commands:
    evaluate   evaluate one price profile (uniform ``--price`` or a JSON ``--prices`` file)
    train      train MADDPG / IDDPG / MFDDPG through the vector env, verify, write a run folder
    exploit    verify a price profile: each station's best unilateral deviation
    solve      run the reference solver (best-response dynamics) to a verified equilibrium
    convergence  revenues against UE start and tolerance, with seed spread
    scenarios  list the bundled scenarios
    settings   list the scenario settings with their values and meanings

Every command that loads a scenario takes ``--set KEY=VALUE`` (repeatable) to override
one of its settings (:class:`evcs_gym.ScenarioSettings`); the value is read as JSON, else
as a string. ``--budget`` is always a total number of simulator evaluations;
per-station search budgets are ``--budget-per-station``. ``--help`` shows every default.

Example:
    $ evcs-gym evaluate --scenario siouxfalls --price 1.25
    $ evcs-gym evaluate --scenario tiny --prices prices.json --json
    $ evcs-gym convergence --scenario siouxfalls --set ue_payoff_precision=0.02
    $ evcs-gym settings --scenario tiny
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["build_parser", "main"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help line; descriptions and epilogs kept as written."""


def package_version() -> str:
    """The installed distribution's version (``evcs_gym.__version__`` if not installed)."""
    try:
        return version("evcs-gym")
    except PackageNotFoundError:  # pragma: no cover - run from a bare source tree
        import evcs_gym

        return evcs_gym.__version__


def parse_settings(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` as settings overrides; each value is JSON, else a string.

    Example:
        >>> parse_settings(["ue_max_iterations=20", "warm_start_price=null", "network_name=x"])
        {'ue_max_iterations': 20, 'warm_start_price': None, 'network_name': 'x'}
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"evcs-gym: --set wants KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _scenario(args: argparse.Namespace):
    """``load_scenario(args.scenario, **--set overrides)``; a bad setting exits with its message."""
    import evcs_gym

    try:
        return evcs_gym.load_scenario(args.scenario, **parse_settings(args.set))
    except evcs_gym.ScenarioError as e:
        raise SystemExit(f"evcs-gym: {e}") from None


def _game(nd) -> dict[str, str]:
    """The game a result was measured on: the package version and the settings' hash."""
    import evcs_gym

    return {"version": evcs_gym.__version__, "settings_hash": nd.settings_hash}


def _load_prices(args: argparse.Namespace, nd) -> dict[str, np.ndarray]:
    from evcs_gym.ue.prices import uniform_prices

    if args.prices is not None:
        return _read_price_file(args.prices, "--prices")
    return uniform_prices(nd.agent_names, nd.n_periods, args.price)


def _read_price_file(path: str, option: str) -> dict[str, np.ndarray]:
    """``{station: [price per period]}`` from a JSON file, or from the ``"prices"`` entry
    of one (the output of ``solve --out`` or ``train``)."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"evcs-gym: cannot read {option} {path!r}: {e}") from None
    if isinstance(raw, dict) and "prices" in raw and isinstance(raw["prices"], dict):
        raw = raw["prices"]
    if not isinstance(raw, dict):
        raise SystemExit(f"evcs-gym: {option} {path!r} must hold {{station: [prices]}}")
    return {str(k): np.asarray(v, dtype=float) for k, v in raw.items()}


def format_result(nd, res, seconds: float) -> str:
    """Human-readable table of prices, flows and revenues per station and period."""
    periods = nd.n_periods
    width = max(8, max(len(a) for a in nd.agent_names) + 2)
    plen = nd.settings.period_length
    lines = [
        f"scenario {nd.name}: {nd.n_agents} stations, {periods} periods of {plen:.0f} s, "
        f"seed {res.seed}",
        "",
    ]
    head = f"{'station':<{width}}{'':<8}" + "".join(f"{'p' + str(p):>9}" for p in range(periods))
    head += f"{'total':>11}"
    lines.append(head)
    lines.append("-" * len(head))
    for a in nd.agent_names:
        price = "".join(f"{v:>9.3f}" for v in res.prices[a])
        flow = "".join(f"{v:>9.0f}" for v in res.flows[a])
        lines.append(f"{a:<{width}}{'price':<8}{price}")
        lines.append(f"{'':<{width}}{'flow':<8}{flow}{res.flows[a].sum():>11.0f}")
        lines.append(f"{'':<{width}}{'revenue':<8}{'':>{9 * periods}}{res.revenues[a]:>11.1f}")
    total_flow = sum(f.sum() for f in res.flows.values())
    lines += [
        "-" * len(head),
        f"total revenue {sum(res.revenues.values()):.1f}, vehicles charged {total_flow:.0f} "
        f"of {res.ue_stats['simulated_charging_vehicles']} charging trips",
        f"UE: {res.ue_iterations} iterations, converged={res.converged}, "
        f"relative gap {res.ue_stats['relative_gap']:.4f}, "
        f"completed {res.ue_stats['completed_ratio']:.3f}, {seconds:.2f} s",
    ]
    return "\n".join(lines)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import evcs_gym

    t0 = time.perf_counter()
    nd = _scenario(args)
    load_s = time.perf_counter() - t0
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    prices = _load_prices(args, nd)
    try:
        res = ev.evaluate(prices, seed=args.seed)
    except evcs_gym.PriceError as e:
        print(f"evcs-gym: invalid prices: {e}", file=sys.stderr)
        return 2
    if args.json:
        out: dict[str, Any] = res.to_dict()
        out["scenario"] = nd.name
        out["game"] = _game(nd)
        out["load_seconds"] = load_s
        print(json.dumps(out, indent=2))
    else:
        print(f"loaded {nd.summary()} in {load_s:.1f} s")
        print(format_result(nd, res, res.timings["total"]))
    return 0


@contextlib.contextmanager
def _evaluator(nd, workers: int):
    """A process pool for ``workers > 1``, else the scenario itself (serial evaluation)."""
    if workers > 1:
        from evcs_gym.parallel.pool import ParallelEvaluatorPool

        with ParallelEvaluatorPool(nd, n_workers=workers) as pool:
            yield pool
    else:
        yield nd


def _cmd_exploit(args: argparse.Namespace) -> int:
    from evcs_gym.equilibrium.exploitability import exploitability

    nd = _scenario(args)
    prices = _load_prices(args, nd)
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        backend = stack.enter_context(_evaluator(nd, args.workers))
        searcher = None
        if args.search_payoffs == "fast":
            from evcs_gym.network.settings import FAST_STOP_SETTINGS

            fast = nd.with_stop_settings(**FAST_STOP_SETTINGS)
            searcher = stack.enter_context(_evaluator(fast, args.workers))
        res = exploitability(
            backend,
            prices,
            seed=args.seed,
            seeds=args.seeds,
            search_seeds=args.search_seeds,
            budget=_exploit_budget(args),
            grid=args.grid,
            search_pool=searcher,
        )
    if args.json:
        out = {**res.to_dict(), "game": _game(nd)}
        print(json.dumps(out, indent=2))
    else:
        print(f"{nd.summary()}\n{res.summary()}")
        print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


def _exploit_budget(args: argparse.Namespace) -> int:
    """``--budget-per-station``, or the deprecated ``--budget`` (with a warning)."""
    if args.deprecated_budget is None:
        return args.budget_per_station
    print(
        "evcs-gym: warning: `exploit --budget` is deprecated, use --budget-per-station "
        "(--budget is a total in train and solve)",
        file=sys.stderr,
    )
    return args.deprecated_budget


def _cmd_solve(args: argparse.Namespace) -> int:
    from evcs_gym.equilibrium.best_response import BestResponseDynamics

    nd = _scenario(args)
    with _evaluator(nd, args.workers) as backend:
        solver = BestResponseDynamics(
            backend,
            target=args.target,
            damping=args.damping,
            min_damping=args.min_damping,
            budget_per_station=args.budget_per_station,
            max_rounds=args.rounds,
            budget=args.budget,
            seed=args.seed,
            seeds=args.seeds,
            search_seeds=args.search_seeds,
            verbose=not args.json,
        )
        res = solver.solve(_read_price_file(args.start, "--start") if args.start else None)
    out = {
        "scenario": nd.name,
        "game": _game(nd),
        "prices": {a: v.tolist() for a, v in res.prices.items()},
        "converged": res.converged,
        "rounds": res.rounds,
        "evaluations": res.evaluations,
        "seconds": res.seconds,
        "certificate": res.certificate.to_dict(),
        "history": res.history,
    }
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(res.summary())
        if args.out:
            print(f"written to {args.out}")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
    from evcs_gym.equilibrium.exploitability import exploitability
    from evcs_gym.network.settings import FAST_STOP_SETTINGS, STOP_SETTINGS
    from evcs_gym.wrappers import make_vector_env

    nd = _scenario(args)
    out = Path(args.out or f"runs/{nd.name}-{args.algo}-seed{args.seed}")
    print(f"loaded {nd.summary()}")
    train_nd = nd
    if args.train_payoffs == "fast":
        train_nd = nd.with_stop_settings(**FAST_STOP_SETTINGS)
        fast = ", ".join(f"{k}={v}" for k, v in FAST_STOP_SETTINGS.items())
        print(
            f"training payoffs: fast ({fast}; settings {train_nd.settings_hash}); "
            "the verification measures the gains on the scenario's own"
        )
    rounds = args.rounds or None  # 0: the one-step stage game
    venv = make_vector_env(args.num_envs, scenario=train_nd, rounds=rounds, n_workers=args.workers)
    game = None  # the scenario's own payoffs, opened to verify when training is on others
    with contextlib.ExitStack() as stack:
        stack.callback(venv.close)
        spaces_obs = {a: venv.observation_space(a) for a in venv.possible_agents}
        spaces_act = {a: venv.action_space(a) for a in venv.possible_agents}
        config_cls = ALGORITHMS[args.algo].config_cls
        config = config_cls(
            seed=args.seed,
            batch_size=min(64, max(8, args.budget // 8)),
            learning_starts=min(64, max(8, args.budget // 8)),
            random_warmup=min(128, args.budget // 4),  # the first critics see every price
            noise_std=args.noise,
            noise_decay=args.noise_decay,
            noise_min=min(config_cls.noise_min, args.noise),  # the floor never above the start
        )
        algo = ALGORITHMS[args.algo](spaces_obs, spaces_act, config, agents=venv.possible_agents)

        certificates = []  # the verifier's results, for their printed summary

        verify_budget = args.verify_budget
        if verify_budget is None:  # the current prices, each period at each bound, the
            verify_budget = 2 + 2 * nd.n_periods + args.verify_grid  # levels, the combined move

        def verifier(prices):
            nonlocal game
            if train_nd is not nd and game is None:
                game = stack.enter_context(_evaluator(nd, args.workers))
            certificates.append(
                exploitability(
                    venv.pool if game is None else game,
                    prices,
                    search_pool=None if game is None else venv.pool,
                    seed=args.seed,
                    seeds=args.verify_seeds,
                    search_seeds=min(args.verify_search_seeds, args.verify_seeds),
                    budget=verify_budget,
                    grid=args.verify_grid,
                    period_moves=0,
                )
            )
            return certificates[-1].to_dict()

        trainer = GameTrainer(
            venv,
            algo,
            TrainerConfig(
                budget=args.budget,
                check_every=args.check_every,
                seed=args.seed,
                progress=not args.quiet,
            ),
            verifier=verifier if verify_budget > 0 else None,
        )
        summary = trainer.train()
        final = trainer.evaluate_pure(1)
        pure = {a: np.asarray(v, dtype=float) for a, v in final.last_pure_actions.items()}
        summary["final_pure_prices"] = {a: v.tolist() for a, v in pure.items()}
        summary["final_revenue"] = final.mean_reward
        summary["scenario"] = nd.name
        summary["game"] = _game(nd)
        summary["training_payoffs"] = {
            "kind": args.train_payoffs,
            "stop_settings": {k: getattr(train_nd.settings, k) for k in STOP_SETTINGS},
            "settings_hash": train_nd.settings_hash,
        }
        rollout = "evaluation rollout" + (", training payoffs" if train_nd is not nd else "")
        print(f"\nfinal pure prices and revenue ({rollout}):")
        for a in nd.agent_names:
            print(
                f"  {a:>6}: "
                + " ".join(f"{v:.3f}" for v in pure[a])
                + f"   revenue {final.mean_reward[a]:.1f}"
            )
        if verify_budget > 0:
            print(
                f"verifying in the simulator (<= {verify_budget} price vectors per station, "
                f"in this order while they last: the current prices, each period alone at "
                f"each bound, {args.verify_grid} uniform levels, the combined move; each "
                f"scored on the mean of {min(args.verify_search_seeds, args.verify_seeds)} "
                "seeds; what was reached is printed below)..."
            )
            cert = trainer.verify(pure)
            summary["verified_exploitability"] = cert
            print(certificates[-1].summary())
            print(
                f"verified NashConv: {cert['relative_nash_conv']:.2%} of total revenue, "
                f"max relative gain {cert['max_relative_gain']:.2%}"
            )
        paths = trainer.save_outputs(out, summary)
        plots = ", ".join(p.name for p in paths.values() if p.suffix == ".png")
        print(f"run folder: {out} (plots: {plots})")
    return 0


def _cmd_scenarios(args: argparse.Namespace) -> int:
    import evcs_gym

    for name in evcs_gym.available_scenarios():
        print(name)
    return 0


def _cmd_settings(args: argparse.Namespace) -> int:
    from evcs_gym.errors import ScenarioError
    from evcs_gym.scenarios.setting_docs import scenario_settings, settings_table
    from evcs_gym.utils import to_jsonable

    try:
        settings = scenario_settings(args.scenario, parse_settings(args.set))
    except ScenarioError as e:
        raise SystemExit(f"evcs-gym: {e}") from None
    if args.json:
        print(json.dumps(to_jsonable(settings), indent=2))
    else:
        print(settings_table(settings))
    return 0


def _cmd_convergence(args: argparse.Namespace) -> int:
    from evcs_gym.studies.convergence import convergence_study, study_profiles

    nd = _scenario(args)
    base = _load_prices(args, nd) if args.prices else None
    profiles = study_profiles(
        nd,
        base,
        deviations=args.deviations,
        training_like=args.training,
        random=args.random,
        seed=args.profile_seed,
    )
    print(f"{nd.summary()}\nprofiles: {', '.join(profiles)}; seeds {args.seeds}", flush=True)
    t0 = time.perf_counter()
    study = convergence_study(
        args.scenario,
        profiles,
        seeds=args.seeds,
        conditions=args.conditions,
        workers=args.workers,
        progress=True,
        **parse_settings(args.set),
    )
    print(study.table())
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**study.to_dict(), "game": _game(nd)}, indent=2))
        print(f"written to {args.out}")
    return 0 if study.all_agree or not args.check else 1


def _cmd_cache(args: argparse.Namespace) -> int:
    from evcs_gym.scenarios.cache import default_cache

    cache = default_cache()
    if args.action == "dir":
        print(cache.folder)
    elif args.action == "list":
        entries = cache.entries()
        total = sum(e.bytes for e in entries)
        print(f"{cache.folder}: {len(entries)} entries, {total / 1e6:.1f} MB")
        for e in entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.modified))
            print(f"  {e.key[:12]}  {e.bytes / 1e6:8.1f} MB  {when}  {e.label}")
    else:
        print(f"{cache.folder}: deleted {cache.clear()} entries")
    return 0


def _add_seed_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="search seed")
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="verify gains on seeds seed..seed+N-1, with standard errors (None: seed alone)",
    )
    p.add_argument("--search-seeds", type=int, default=1, help="seeds the searches average over")


def _add_scenario_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scenario",
        default="siouxfalls",
        help="bundled scenario name (`evcs-gym scenarios`) or a scenario folder's path",
    )


def _set_help() -> str:
    """The ``--set`` help: its syntax and every setting it accepts."""
    from evcs_gym.scenarios.setting_docs import setting_names

    return (
        "override a scenario setting (repeatable); VALUE is read as JSON, else as a string, "
        "e.g. ue_max_iterations=50. Settings (`evcs-gym settings` shows their values and "
        "meanings): " + ", ".join(setting_names())
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``evcs-gym`` argument parser, one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="evcs-gym",
        description="EV charging-station pricing games on UXsim.",
        epilog="Run `evcs-gym <command> --help` for a command's options and defaults.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="<command>")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, formatter_class=HelpFormatter)

    p = command("evaluate", "evaluate one price profile in the simulator")
    _add_scenario_argument(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--price", type=float, default=1.25, help="uniform price per kWh")
    group.add_argument(
        "--prices", help='JSON file {"station": [price per period, ...], ...} (replaces --price)'
    )
    p.add_argument(
        "--seed", type=int, default=None, help="evaluation seed (None: the scenario's default_seed)"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=_cmd_evaluate)

    p = command("train", "train a baseline through the vector env, verify it, write a run folder")
    _add_scenario_argument(p)
    p.add_argument(
        "--algo", choices=["maddpg", "iddpg", "mfddpg"], default="maddpg", help="learner"
    )
    p.add_argument("--budget", type=int, default=400, help="total training evaluations")
    p.add_argument("--workers", type=int, default=2, help="evaluator processes")
    p.add_argument("--num-envs", type=int, default=2, help="game copies stepped per iteration")
    p.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="rounds per repeated-game episode (0: the one-step stage game)",
    )
    p.add_argument(
        "--check-every",
        type=int,
        default=10,
        help="training iterations between checkpoints of the pure strategy (critic NashConv)",
    )
    p.add_argument("--noise", type=float, default=0.1, help="exploration std (action range)")
    p.add_argument(
        "--noise-decay", type=float, default=0.999, help="exploration decay per learning step"
    )
    p.add_argument(
        "--verify-budget",
        type=int,
        default=None,
        help="price vectors tried per station by the final verification (0: skip; None: "
        "the current prices, every period alone at each bound, the uniform levels and "
        "the combined move, 2 + 2 x periods + --verify-grid)",
    )
    p.add_argument(
        "--verify-grid", type=int, default=7, help="uniform price levels the verification tries"
    )
    p.add_argument(
        "--verify-seeds",
        type=int,
        default=4,
        help="seeds the verified gains are averaged over (standard errors)",
    )
    p.add_argument(
        "--verify-search-seeds",
        type=int,
        default=2,
        help="seeds each candidate of the verification's search is evaluated on (the "
        "search maximises their mean revenue; at most --verify-seeds)",
    )
    p.add_argument(
        "--train-payoffs",
        choices=["scenario", "fast"],
        default="scenario",
        help="the training evaluations' payoff: the scenario's own, or fast "
        "(FAST_STOP_SETTINGS: the same UE loops cut after 10 iterations once the "
        "revenues are known to 5 %%; about half the iterations on Sioux Falls; the "
        "verification's search is then scored on them too). The verified gains are "
        "always the scenario's payoffs",
    )
    p.add_argument("--seed", type=int, default=0, help="training and verification seed")
    p.add_argument("--out", help="run folder (None: runs/<scenario>-<algo>-seed<seed>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)

    p = command("exploit", "verify a price profile: each station's best deviation in the simulator")
    _add_scenario_argument(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--price", type=float, default=1.25, help="uniform price per kWh")
    group.add_argument(
        "--prices",
        help="JSON file {station: [prices per period]}, or a solve/train output (replaces --price)",
    )
    p.add_argument(
        "--budget-per-station",
        type=int,
        default=64,
        help="evaluations of each station's deviation search",
    )
    p.add_argument(
        "--budget",
        dest="deprecated_budget",
        metavar="N",
        type=int,
        default=None,
        help="deprecated alias of --budget-per-station (elsewhere --budget is a total)",
    )
    p.add_argument("--grid", type=int, default=7, help="uniform price levels tried first")
    p.add_argument(
        "--search-payoffs",
        choices=["scenario", "fast"],
        default="scenario",
        help="what the search scores its candidates on: the scenario's payoffs, or fast "
        "ones (FAST_STOP_SETTINGS, the same UE loops cut earlier; on a Sioux Falls "
        "profile 7.6 instead of about 13 min). The gains are always measured on the "
        "scenario's payoffs",
    )
    p.add_argument("--workers", type=int, default=1, help="evaluator processes")
    _add_seed_arguments(p)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=_cmd_exploit)

    p = command("solve", "reference equilibrium by best-response dynamics, each round verified")
    _add_scenario_argument(p)
    p.add_argument("--target", type=float, default=0.02, help="relative NashConv to reach")
    p.add_argument("--damping", type=float, default=1.0, help="step towards the best responses")
    p.add_argument(
        "--min-damping",
        type=float,
        default=None,
        help="halve a station's step on reversals, down to this (None: never halve)",
    )
    p.add_argument(
        "--budget-per-station",
        type=int,
        default=48,
        help="evaluations of each station's best-response search per round",
    )
    p.add_argument("--rounds", type=int, default=20, help="rounds at most")
    p.add_argument(
        "--budget", type=int, default=None, help="total evaluations at most (None: no limit)"
    )
    p.add_argument(
        "--start",
        help="JSON file {station: [prices per period]} to start from (None: mid-bound prices)",
    )
    p.add_argument("--workers", type=int, default=1, help="evaluator processes")
    _add_seed_arguments(p)
    p.add_argument("--out", help="write prices and certificate to this JSON file")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=_cmd_solve)

    p = command(
        "convergence",
        "revenues against UE start, stop-rule tolerance and iteration cap, with seed spread",
    )
    _add_scenario_argument(p)
    p.add_argument(
        "--prices",
        help="JSON file of the base profile, e.g. `solve --out` (None: mid-bound prices)",
    )
    p.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 in every condition")
    p.add_argument("--deviations", type=int, default=2, help="single-period spikes")
    p.add_argument("--training", type=int, default=1, help="training-like noisy profiles")
    p.add_argument("--random", type=int, default=1, help="uniform-random profiles")
    p.add_argument(
        "--profile-seed", type=int, default=0, help="seed of the spikes' and noisy profiles' draws"
    )
    from evcs_gym.studies.convergence import CONDITIONS, STANDARD_CONDITIONS

    p.add_argument(
        "--conditions",
        nargs="+",
        default=list(STANDARD_CONDITIONS),
        choices=list(CONDITIONS),
        help="UE variants compared with the default (default: %(default)s)",
    )
    p.add_argument("--workers", type=int, default=2, help="evaluator processes")
    p.add_argument("--out", help="write the study as JSON")
    p.add_argument("--check", action="store_true", help="exit 1 unless every station agrees")
    p.set_defaults(func=_cmd_convergence)

    p = command("scenarios", "list the bundled scenarios")
    p.set_defaults(func=_cmd_scenarios)

    p = command("settings", "list the scenario settings with their values and meanings")
    p.add_argument(
        "--scenario",
        default=None,
        help="show this scenario's values, bundled name or folder (None: the built-in defaults)",
    )
    p.add_argument("--json", action="store_true", help="print the values as JSON")
    p.set_defaults(func=_cmd_settings)

    p = command("cache", "list or clear the on-disk cache of prepared scenarios")
    p.add_argument(
        "action",
        choices=("list", "clear", "dir"),
        help="list: every entry with its size and scenario; clear: delete them all; "
        "dir: print the cache folder ($EVCS_GYM_CACHE_DIR or the platform's user cache)",
    )
    p.set_defaults(func=_cmd_cache)

    set_help = _set_help()
    for name, subparser in sub.choices.items():
        if name not in ("scenarios", "cache"):
            subparser.add_argument("--set", action="append", metavar="KEY=VALUE", help=set_help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
