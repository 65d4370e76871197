"""``evcs-gym train`` on tiny: its printout, run folder, default verification and fast
payoffs; its ``--algo`` choices (the learners' registry) and its recipe
(``evcs_gym.baselines.recipe``: the settings it derives from the budget)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import evcs_gym
from evcs_gym.baselines.game_recipes import game_recipe
from evcs_gym.baselines.recipe import (
    verification_plan,
)
from evcs_gym.baselines.registry import ALGORITHM_NAMES
from evcs_gym.cli import main
from evcs_gym.cli.train import DEFAULTS, verify_plan_from_args
from evcs_gym.network.settings import FAST_STOP_SETTINGS
from tests.cli.helpers import commands, options

SUMMARY_KEYS = [
    "algorithm", "config", "seed", "evaluations", "iterations", "converged", "noise_resets",
    "train_seconds", "versions", "final_pure_prices", "critic_nash_conv", "final_revenue",
    "scenario", "recipe", "train_flags", "learner_config", "game", "training_payoffs",
    "verified_exploitability", "collusion_index", "time_split", "files",
]  # fmt: skip
"""summary.json's keys, in order: the trainer's ``TrainResult``, then the command's."""


# ------------------------------------------------------------------ the command
@pytest.mark.timeout(300)
def test_train_prints_prices_revenues_verification_and_writes_a_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--algo", "maddpg", "--budget", "16"]
    argv += ["--workers", "1", "--verify-budget", "4", "--check-every", "2"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "final pure prices and revenue" in text
    assert "verified NashConv" in text and "best deviation" in text
    assert f"run folder: {out}" in text and "prices.png" in text
    for name in ("evaluations.csv", "summary.json", "weights.pt", "prices.png"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == 16
    assert summary["training_payoffs"]["kind"] == "scenario"  # the default
    assert "training payoffs" not in text
    assert 0 <= summary["verified_exploitability"]["relative_nash_conv"]
    tiny = evcs_gym.load_scenario("tiny", warm_start=False)
    assert summary["game"] == {"version": evcs_gym.__version__, "settings_hash": tiny.settings_hash}
    assert list(summary) == SUMMARY_KEYS
    assert summary["config"]["budget"] == 16 and summary["algorithm"] == "maddpg"
    assert "verifying in the simulator (converged search: bounds" in text
    split = summary["time_split"]
    assert split["total"] >= split["training"] > 0 and split["raw_simulations"] >= 16
    assert "time: " in text and "raw simulations" in text and "worker-s each" in text


@pytest.mark.timeout(300)
def test_train_verifies_with_the_converged_search_by_default(tmp_path, capsys):
    """Without ``--verify-*`` search options the verification is the converged search: the
    global candidates (every period alone at each bound, the uniform levels), then a
    pattern search to its resolution, on one search seed after the gains' seeds (held
    out); it says where it stopped."""
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--budget", "8", "--workers", "1", "--rounds", "0"]
    argv += ["--verify-grid", "3", "--verify-seeds", "2", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    cert = json.loads((out / "summary.json").read_text())["verified_exploitability"]
    assert cert["search_method"] == "converged" and cert["converged"] is True
    assert cert["budget_per_station"] == 600 and cert["search_seeds"] == [2]
    assert cert["search"] == verification_plan(4, grid=3, seeds=2).spec().to_dict()
    assert cert["grid"] == 3 and cert["period_moves"] == 0
    for dev in cert["deviations"].values():
        search = dev["search"]
        assert search["converged"] and search["passes"] >= 4  # a poll per step size at least
        assert search["global_candidates"] >= 1 + 4 + 3  # the current, the floor moves, levels
    assert cert["held_out"] is True and "after the 2 seeds of the gains" in text
    assert "search on seed 2 (held out): bounds, 3 levels" in text
    assert "converged for 2 of 2" in text


@pytest.mark.timeout(300)
def test_train_skips_the_verification_on_a_zero_budget(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--budget", "4", "--workers", "1", "--rounds", "0"]
    assert main([*argv, "--verify-budget", "0", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "final pure prices and revenue" in text
    assert "verifying" not in text and "verified NashConv" not in text
    summary = json.loads((out / "summary.json").read_text())
    unverified = ("verified_exploitability", "collusion_index")
    assert list(summary) == [k for k in SUMMARY_KEYS if k not in unverified]


@pytest.mark.timeout(300)
def test_train_learns_on_fast_payoffs_and_verifies_on_the_scenarios_own(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--budget", "8", "--workers", "1", "--rounds", "0"]
    argv += ["--verify-budget", "3", "--verify-seeds", "2", "--quiet", "--out", str(out)]
    assert main([*argv, "--train-payoffs", "fast"]) == 0
    text = capsys.readouterr().out
    assert "training payoffs: fast (ue_payoff_min_iterations=10" in text
    summary = json.loads((out / "summary.json").read_text())
    tiny = evcs_gym.load_scenario("tiny")
    fast = tiny.with_stop_settings(**FAST_STOP_SETTINGS)
    assert summary["training_payoffs"]["kind"] == "fast"
    assert summary["training_payoffs"]["settings_hash"] == fast.settings_hash
    assert summary["game"]["settings_hash"] == tiny.settings_hash
    # the certificate's rewards are the scenario's payoffs, not the training ones
    cert = summary["verified_exploitability"]
    prices = {a: np.asarray(v) for a, v in cert["prices"].items()}
    game = evcs_gym.EVCSRewardEvaluator(tiny)
    for seed_index, seed in enumerate(cert["seeds"]):
        rewards = game.evaluate(prices, seed=seed).rewards
        for a in prices:
            assert cert["rewards_per_seed"][a][seed_index] == rewards[a]
    # and the search was scored on the training payoffs
    assert cert["search_settings_hash"] == fast.settings_hash
    assert f"scored on the payoffs of settings {fast.settings_hash}" in text


# ------------------------------------------------------------------ --algo: the registry
def test_algo_choices_are_the_registrys_names():
    from evcs_gym.baselines import ALGORITHMS

    (algo,) = (a for a in options(commands()["train"]) if "--algo" in a.option_strings)
    assert list(algo.choices) == list(ALGORITHM_NAMES) == list(ALGORITHMS)
    assert algo.default is None and DEFAULTS["algo"] in ALGORITHMS  # None: the recipe's
    for name, cls in ALGORITHMS.items():
        assert cls.name == name


def test_the_train_commands_defaults_are_the_recipes():
    """``--verify-*`` defaults of the command and of :func:`verification_plan` agree."""
    args = commands()["evcs-gym"].parse_args(["train"])
    assert verify_plan_from_args(args, 4) == verification_plan(4)


# ------------------------------------------------------------------ --recipe: tuned defaults
@pytest.mark.timeout(300)
def test_train_uses_a_recipe_file_and_flags_win_over_it(tmp_path, capsys):
    """A recipe sets the learner, budget, rounds and config fields; it is printed and
    recorded; a flag (``--budget``) and ``--hyperparams`` win over it."""
    recipe = tmp_path / "mine.toml"
    recipe.write_text(
        '[recipe]\ngame = "tiny"\nsettings_hash = "000000000000"\nhow = "by hand"\n'
        '[train]\nalgo = "iddpg"\nbudget = 99\nrounds = 0\n'
        "[iddpg]\nupdates_per_learn = 3\ntau = 0.05\nnoise_std = 0.07\n"
    )
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--recipe", str(recipe), "--budget", "4"]
    argv += ["--hyperparams", "tau=0.2", "--workers", "1", "--verify-budget", "0"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"recipe {recipe} (game tiny, 000000000000): iddpg, budget=99, rounds=0" in text
    assert "; flags override: budget=4, tau=0.2 -- set on settings 000000000000" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "iddpg" and summary["evaluations"] == 4
    assert summary["train_flags"] == {"algo": "iddpg", "budget": 4, "rounds": 0}
    config = summary["learner_config"]
    assert config["updates_per_learn"] == 3 and config["tau"] == 0.2
    assert config["noise_std"] == 0.07 and config["noise_min"] <= 0.07
    assert summary["recipe"]["how"] == "by hand"


def test_train_without_a_recipe_keeps_the_package_defaults():
    from evcs_gym.cli.train import resolve_recipe

    args = commands()["evcs-gym"].parse_args(["train", "--recipe", "none"])
    recipe, fields = resolve_recipe(args, "tiny_market")
    assert recipe is None and fields == {}
    assert (args.algo, args.budget, args.rounds) == ("maddpg", 400, 10)
    args = commands()["evcs-gym"].parse_args(["train"])
    assert resolve_recipe(args, "anaheim")[0] is None  # Anaheim ships none


def test_a_learner_trains_with_the_recipes_budget_for_it():
    """``tiny``'s recipe gives IDDPG a budget of its own (``[train.iddpg]``); the game's
    default learner keeps the game's, and a flag wins over both."""
    from evcs_gym.cli.train import describe_recipe, resolve_recipe

    def resolved(*flags: str) -> tuple[str, int, int]:
        args = commands()["evcs-gym"].parse_args(["train", "--scenario", "tiny", *flags])
        resolve_recipe(args, "tiny")
        return args.algo, args.budget, args.rounds

    assert resolved() == ("maddpg", 600, 0)
    assert resolved("--algo", "iddpg") == ("iddpg", 2400, 0)
    assert resolved("--algo", "iddpg", "--budget", "50") == ("iddpg", 50, 0)
    assert resolved("--algo", "mfddpg") == ("mfddpg", 600, 0)
    recipe = game_recipe("tiny")
    line = describe_recipe(recipe, "iddpg", recipe.settings_hash, {"budget": 2400})
    assert "iddpg, budget=2400, rounds=0" in line and "flags override" not in line
