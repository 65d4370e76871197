"""``evcs-gym train``: train a baseline through the vector env, verify it, write a run folder.

The learner (``--algo``, one of :data:`evcs_gym.baselines.registry.ALGORITHM_NAMES`)
trains through :func:`~evcs_gym.wrappers.make_vector_env` copies of the game with the
settings :mod:`evcs_gym.baselines.recipe` derives from ``--budget``
(:func:`~evcs_gym.baselines.recipe.learner_config`). Its final pure prices are then
verified in the simulator with the recipe's
:func:`~evcs_gym.baselines.recipe.verification_plan` (``--verify-*``), by
:func:`~evcs_gym.equilibrium.exploitability.exploitability` on the scenario's own
payoffs, even when ``--train-payoffs fast`` trained on others. The run folder holds
``summary.json`` (the trainer's :class:`~evcs_gym.baselines.TrainResult` with the final
prices, revenues, game, certificate and the time split), the evaluations, the weights
and the plots. The last line before the run folder is the time split: loading, training
(with its raw simulations and the worker-seconds each took, the host's speed) and the
verification.

Only the ``--algo`` names are read when the parser is built: PyTorch and the learners are
imported when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evcs_gym.cli.common import (
    add_command,
    add_scenario_argument,
    add_search_arguments,
    add_settings_argument,
    evaluation_backend,
    game_info,
    load_scenario,
    parse_settings,
)

if TYPE_CHECKING:
    from evcs_gym.baselines.game_recipes import GameRecipe
    from evcs_gym.baselines.recipe import VerificationPlan
    from evcs_gym.equilibrium.exploitability import ExploitabilityResult
    from evcs_gym.network import NetworkData

__all__ = ["DEFAULTS", "add_parser", "resolve_recipe", "run"]

DEFAULTS: dict[str, Any] = {"algo": "maddpg", "budget": 400, "rounds": 10}
"""``evcs-gym train``'s flags where neither the command line nor a recipe sets them."""

FLAG_FIELDS = {"noise": "noise_std", "noise_decay": "noise_decay", "actor_lr": "actor_lr"}
"""Learner-config fields that have a flag of their own: flag -> field."""


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``train`` command and its options to ``subparsers``."""
    from evcs_gym.baselines.registry import ALGORITHM_NAMES  # the names alone: no torch

    p = add_command(
        subparsers,
        "train",
        "train a baseline through the vector env, verify it, write a run folder",
    )
    add_scenario_argument(p)
    p.add_argument(
        "--algo",
        choices=list(ALGORITHM_NAMES),
        default=None,
        help="learner (None: the game's recipe's, else maddpg)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        help=f"total training evaluations (None: the recipe's, else {DEFAULTS['budget']})",
    )
    p.add_argument("--workers", type=int, default=2, help="evaluator processes")
    p.add_argument("--num-envs", type=int, default=2, help="game copies stepped per iteration")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds per repeated-game episode (0: the one-step stage game; None: the "
        f"recipe's, else {DEFAULTS['rounds']})",
    )
    p.add_argument(
        "--check-every",
        type=int,
        default=10,
        help="training iterations between checkpoints of the pure strategy (critic NashConv)",
    )
    add_learner_arguments(p)
    add_verify_arguments(p)
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
    add_settings_argument(p)
    p.set_defaults(func=run)
    return p


def add_learner_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that set the learner's settings over the game's recipe: ``--noise``,
    ``--noise-decay``, ``--actor-lr``, ``--recipe`` and ``--hyperparams``."""
    p.add_argument(
        "--noise",
        type=float,
        default=None,
        help="exploration std (action range; None: the recipe's, else 0.1)",
    )
    p.add_argument(
        "--noise-decay",
        type=float,
        default=None,
        help="exploration decay per learning step (None: the recipe's, else 0.999)",
    )
    p.add_argument(
        "--actor-lr",
        type=float,
        default=None,
        help="the actors' learning rate (None: the recipe's, else the learner's, 1e-3)",
    )
    p.add_argument(
        "--recipe",
        default="auto",
        help="the tuned settings to start from: 'auto' (the game's shipped recipe, "
        "evcs_gym/baselines/recipes/<game>.toml, if it has one), 'none' (the package's "
        "defaults) or a recipe file's path; flags win over it",
    )
    p.add_argument(
        "--hyperparams",
        action="append",
        metavar="KEY=VALUE",
        help="set a field of the learner's config (repeatable; VALUE read as JSON), e.g. "
        "updates_per_learn=8; applied last, over the game's recipe",
    )


def add_verify_arguments(p: argparse.ArgumentParser) -> None:
    """The ``--verify-*`` flags of the final verification (:func:`verify_plan_from_args`
    reads them)."""
    from evcs_gym.equilibrium.verification import add_verify_seed_arguments

    add_search_arguments(p, prefix="verify-")  # --verify-budget 0 skips the verification
    add_verify_seed_arguments(p)


def verify_plan_from_args(args: argparse.Namespace, n_periods: int) -> VerificationPlan:
    """The verification the ``--verify-*`` flags ask for, of a game of ``n_periods``
    periods (a station's action: its price in every period)."""
    from evcs_gym.baselines.recipe import verification_plan

    return verification_plan(
        n_periods,
        budget=args.verify_budget,
        grid=args.verify_grid,
        seeds=args.verify_seeds,
        search_seeds=args.verify_search_seeds,
        search=args.verify_search,
        resolution=args.verify_resolution,
        held_out=args.verify_held_out,
    )


def run(args: argparse.Namespace) -> int:
    """Train, print the final prices and the verification, write the run folder; 0."""
    from evcs_gym.baselines import ALGORITHMS, GameTrainer, TrainerConfig
    from evcs_gym.baselines.recipe import learner_config, make_learner
    from evcs_gym.wrappers import make_vector_env

    t_start = time.perf_counter()
    nd = load_scenario(args)
    load_seconds = time.perf_counter() - t_start
    print(f"loaded {nd.summary()}")
    recipe, fields = resolve_recipe(args, nd.name)
    resolved = {**{key: getattr(args, key) for key in DEFAULTS}, **fields}
    print(describe_recipe(recipe, args.algo, nd.settings_hash, resolved))
    out = Path(args.out or f"runs/{nd.name}-{args.algo}-seed{args.seed}")
    train_nd = training_payoffs(nd, args.train_payoffs)
    rounds = args.rounds or None  # 0: the one-step stage game
    venv = make_vector_env(args.num_envs, scenario=train_nd, rounds=rounds, n_workers=args.workers)
    with contextlib.ExitStack() as stack:
        stack.callback(venv.close)
        algo_cls = ALGORITHMS[args.algo]
        config = learner_config(
            algo_cls.config_cls,
            args.budget,
            seed=args.seed,
            noise_std=fields.pop("noise_std", 0.1),
            noise_decay=fields.pop("noise_decay", 0.999),
            actor_lr=fields.pop("actor_lr", None),
            overrides=fields,
        )
        verifier = Verifier(args, nd, venv.pool, train_nd is not nd, stack)
        trainer = GameTrainer(
            venv,
            make_learner(algo_cls, venv, config),
            TrainerConfig(
                budget=args.budget,
                check_every=args.check_every,
                seed=args.seed,
                progress=not args.quiet,
            ),
            verifier=verifier if verifier.plan.enabled else None,
        )
        summary = trainer.train().to_dict()
        t_verify = time.perf_counter()
        final = trainer.evaluate_pure(1)
        pure = {a: np.asarray(v, dtype=float) for a, v in final.last_pure_actions.items()}
        summary.update(
            final_pure_prices={a: v.tolist() for a, v in pure.items()},
            final_revenue=final.mean_reward,
            **run_metadata(args, nd, train_nd, recipe, config),
        )
        print_final_prices(nd, pure, final.mean_reward, train_nd is not nd)
        if verifier.plan.enabled:
            summary.update(verify_final_prices(trainer, verifier, pure))
        timing = time_split(
            load_seconds,
            summary["train_seconds"],
            time.perf_counter() - t_verify,
            raw_simulations=sum(
                r.ue_iterations for r in trainer.history.evaluations if r.kind == "train"
            ),
            workers=args.workers,
        )
        summary["time_split"] = timing
        print(format_time_split(timing, summary["evaluations"]))
        paths = trainer.save_outputs(out, summary)
        plots = ", ".join(p.name for p in paths.values() if p.suffix == ".png")
        print(f"run folder: {out} (plots: {plots})")
    return 0


def training_payoffs(nd: NetworkData, kind: str) -> NetworkData:
    """The game the learner trains on: ``nd`` itself (``"scenario"``), or ``nd`` with the
    fast stop settings (``"fast"``), which it says."""
    from evcs_gym.network.settings import FAST_STOP_SETTINGS

    if kind != "fast":
        return nd
    fast_nd = nd.with_stop_settings(**FAST_STOP_SETTINGS)
    fast = ", ".join(f"{k}={v}" for k, v in FAST_STOP_SETTINGS.items())
    print(
        f"training payoffs: fast ({fast}; settings {fast_nd.settings_hash}); "
        "the verification measures the gains on the scenario's own"
    )
    return fast_nd


class Verifier:
    """``train``'s verification of a profile: :func:`exploitability` with the
    ``--verify-*`` flags' plan, on the scenario's own payoffs (opened on first use when
    the learner trains on others, the search then scored on the training pool), keeping
    every certificate."""

    def __init__(
        self,
        args: argparse.Namespace,
        nd: NetworkData,
        training_pool: Any,
        other_payoffs: bool,
        stack: contextlib.ExitStack,
    ) -> None:
        self.plan = verify_plan_from_args(args, nd.n_periods)
        self.nd = nd
        self.seed = args.seed
        self.workers = args.workers
        self.training_pool = training_pool
        self.other_payoffs = other_payoffs
        self._stack = stack
        self._game: Any = None
        self.certificates: list[ExploitabilityResult] = []

    @property
    def game(self) -> Any:
        """The backend of the scenario's own payoffs."""
        if not self.other_payoffs:
            return self.training_pool
        if self._game is None:
            self._game = self._stack.enter_context(evaluation_backend(self.nd, self.workers))
        return self._game

    def __call__(self, prices: dict[str, np.ndarray]) -> dict[str, Any]:
        """Verify ``prices``; the certificate as a dict (kept in :attr:`certificates`)."""
        from evcs_gym.equilibrium.exploitability import exploitability

        self.certificates.append(
            exploitability(
                self.game,
                prices,
                search_pool=self.training_pool if self.other_payoffs else None,
                seed=self.seed,
                seeds=self.plan.seeds,
                search_seeds=self.plan.search_seeds,
                held_out=self.plan.held_out,
                search=self.plan.spec(),
            )
        )
        return self.certificates[-1].to_dict()


def run_metadata(
    args: argparse.Namespace,
    nd: NetworkData,
    train_nd: NetworkData,
    recipe: GameRecipe | None,
    config: Any,
) -> dict[str, Any]:
    """What ``summary.json`` records of the run besides its results: the scenario, the
    recipe, the flags, the learner's config, the game and the training payoffs."""
    from evcs_gym.network.settings import STOP_SETTINGS

    return {
        "scenario": nd.name,
        "recipe": None if recipe is None else {"source": recipe.source, **asdict(recipe)},
        "train_flags": {"algo": args.algo, "budget": args.budget, "rounds": args.rounds},
        "learner_config": asdict(config),
        "game": game_info(nd),
        "training_payoffs": {
            "kind": args.train_payoffs,
            "stop_settings": {k: getattr(train_nd.settings, k) for k in STOP_SETTINGS},
            "settings_hash": train_nd.settings_hash,
        },
    }


def print_final_prices(
    nd: NetworkData, pure: dict[str, np.ndarray], revenue: dict[str, float], other: bool
) -> None:
    """Print the final pure prices and each station's revenue in the evaluation rollout
    (``other``: on the training payoffs, not the scenario's)."""
    rollout = "evaluation rollout" + (", training payoffs" if other else "")
    print(f"\nfinal pure prices and revenue ({rollout}):")
    for a in nd.agent_names:
        print(
            f"  {a:>6}: " + " ".join(f"{v:.3f}" for v in pure[a]) + f"   revenue {revenue[a]:.1f}"
        )


def verify_final_prices(
    trainer: Any, verifier: Verifier, pure: dict[str, np.ndarray]
) -> dict[str, Any]:
    """Verify the final pure prices, print the certificate and the collusion index Δ
    (where the game ships references); the summary's fields for them."""
    from evcs_gym.equilibrium.collusion import collusion_index
    from evcs_gym.scenarios.references import load_references

    plan = verifier.plan
    print(
        f"verifying in the simulator ({plan.spec().describe()}; each candidate "
        f"scored on the mean of {plan.search_seeds} seed(s) "
        f"{'after' if plan.held_out else 'among'} the {plan.seeds} seeds of the "
        "gains; where it stopped is printed below)..."
    )
    cert = trainer.verify(pure)
    assert cert is not None  # the trainer has the verifier
    print(verifier.certificates[-1].summary())
    print(
        f"verified NashConv: {cert['relative_nash_conv']:.2%} of total revenue, "
        f"max relative gain {cert['max_relative_gain']:.2%}"
    )
    fields: dict[str, Any] = {"verified_exploitability": cert, "collusion_index": None}
    references = load_references(verifier.nd)
    if references is not None:
        seeds = list(verifier.certificates[-1].seeds)
        index = collusion_index(verifier.game, pure, references, seeds=seeds)
        fields["collusion_index"] = index.to_dict()
        print(index.summary())
    return fields


def resolve_recipe(args: argparse.Namespace, game: str) -> tuple[GameRecipe | None, dict[str, Any]]:
    """Fill ``args.algo``, ``args.budget`` and ``args.rounds`` where no flag set them, from
    the recipe ``args.recipe`` names (``auto``: ``game``'s shipped one), else
    :data:`DEFAULTS`; return the recipe and the learner-config fields to set: the
    recipe's for that learner, then the flags' (``--noise`` ...), then ``--hyperparams``.

    Example:
        >>> args = argparse.Namespace(recipe="auto", algo=None, budget=None, rounds=3,
        ...     noise=0.05, noise_decay=None, actor_lr=None, hyperparams=["tau=0.02"])
        >>> recipe, fields = resolve_recipe(args, "tiny_market")
        >>> args.algo, args.budget, args.rounds, fields["noise_std"], fields["tau"]
        ('maddpg', 600, 3, 0.05, 0.02)
        >>> resolve_recipe(argparse.Namespace(**{**vars(args), "recipe": "none"}), "x")[0]
    """
    from evcs_gym.baselines.game_recipes import game_recipe, load_recipe

    recipe = (
        None if args.recipe == "none"
        else game_recipe(game) if args.recipe == "auto"
        else load_recipe(args.recipe)
    )  # fmt: skip
    if args.algo is None:
        args.algo = recipe.train.get("algo", DEFAULTS["algo"]) if recipe else DEFAULTS["algo"]
    train = recipe.train_for(args.algo) if recipe is not None else {}
    for key, default in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, train.get(key, default))
    fields = recipe.learner(args.algo) if recipe is not None else {}
    given = {f: getattr(args, flag) for flag, f in FLAG_FIELDS.items()}
    fields.update({f: v for f, v in given.items() if v is not None})
    fields.update(parse_settings(args.hyperparams, "--hyperparams"))
    return recipe, fields


def describe_recipe(
    recipe: GameRecipe | None,
    algo: str,
    settings_hash: str,
    resolved: dict[str, Any] | None = None,
) -> str:
    """The line ``evcs-gym train`` prints about the recipe it trains with.

    ``resolved``: what the run trains with (train flags and learner fields); the values
    in it that differ from the recipe's are named as the flags' overrides.

    Example:
        >>> from evcs_gym.baselines.game_recipes import game_recipe
        >>> recipe = game_recipe("tiny_market")
        >>> print(describe_recipe(recipe, "maddpg", recipe.settings_hash, {"budget": 50}))
        ... # doctest: +ELLIPSIS
        recipe tiny_market.toml (...): maddpg, budget=600, ...; flags override: budget=50
    """
    if recipe is None:
        return f"recipe: none (the package's defaults), {algo}"
    line = recipe.describe(algo)
    sets = {**DEFAULTS, **recipe.train_for(algo), **recipe.learner(algo)}
    overrides = {k: v for k, v in (resolved or {}).items() if sets.get(k) != v}
    if overrides:
        line += "; flags override: " + ", ".join(f"{k}={v}" for k, v in overrides.items())
    if recipe.settings_hash != settings_hash:
        line += f" -- set on settings {recipe.settings_hash}, this game's are {settings_hash}"
    return line


def time_split(
    load: float, training: float, verification: float, *, raw_simulations: int, workers: int
) -> dict[str, float]:
    """Seconds of a run's phases, and the worker-seconds one training simulation took.

    ``verification`` covers everything after training: the evaluation rollout, the
    verification and the collusion index. ``seconds_per_raw_simulation`` is the training
    loop's wall time × ``workers`` over its raw simulations (UE iterations): the host's
    speed, with the loop's own overhead in it (an upper bound).

    Example:
        >>> t = time_split(20.0, 400.0, 100.0, raw_simulations=8000, workers=2)
        >>> t["total"], t["seconds_per_raw_simulation"]
        (520.0, 0.1)
    """
    return {
        "load": load,
        "training": training,
        "verification": verification,
        "total": load + training + verification,
        "raw_simulations": float(raw_simulations),
        "seconds_per_raw_simulation": training * workers / max(raw_simulations, 1),
    }


def format_time_split(t: dict[str, float], evaluations: int) -> str:
    """The time line of ``evcs-gym train``.

    Example:
        >>> t = time_split(20.0, 400.0, 100.0, raw_simulations=8000, workers=2)
        >>> print(format_time_split(t, 1000))
        time: 8.7 min in all: load 20 s, training 6.7 min (1000 evaluations, 8000 raw \
simulations, 0.10 worker-s each), verification 1.7 min
    """
    return (
        f"time: {t['total'] / 60:.1f} min in all: load {t['load']:.0f} s, training "
        f"{t['training'] / 60:.1f} min ({evaluations} evaluations, "
        f"{t['raw_simulations']:.0f} raw simulations, "
        f"{t['seconds_per_raw_simulation']:.2f} worker-s each), "
        f"verification {t['verification'] / 60:.1f} min"
    )
