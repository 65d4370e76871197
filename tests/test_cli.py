"""The ``evcs-gym`` command line on tiny: evaluate, train, solve, exploit, scenarios,
settings; its help, version and flags."""

from __future__ import annotations

import argparse
import json
from importlib.metadata import version

import numpy as np
import pytest

import evcs_gym
from evcs_gym import cli
from evcs_gym.cli import build_parser, main
from evcs_gym.network.settings import FAST_STOP_SETTINGS
from evcs_gym.scenarios.setting_docs import setting_names


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"evcs-gym": parser, **sub.choices}


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options a user types, without ``--help`` and ``--version``."""
    skip = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    return [a for a in parser._actions if a.option_strings and not isinstance(a, skip)]


def test_version_prints_the_installed_distributions_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"evcs-gym {version('evcs-gym')}"


@pytest.mark.parametrize("name", list(_commands()))
def test_every_option_has_help_and_its_help_shows_the_default(name):
    parser = _commands()[name]
    text = " ".join(parser.format_help().split())  # undo the wrapping
    for action in _options(parser):
        flag = action.option_strings[-1]
        assert action.help and action.help != argparse.SUPPRESS, f"{name} {flag}: no help"
        assert f"(default: {action.default})" in text, f"{name} {flag}: default not shown"


def test_budget_is_a_total_and_per_station_budgets_say_so():
    commands = _commands()
    for name in ("train", "solve"):
        (budget,) = (a for a in _options(commands[name]) if "--budget" in a.option_strings)
        assert budget.dest == "budget" and "total" in budget.help
    for name in ("exploit", "solve"):
        flags = {f for a in _options(commands[name]) for f in a.option_strings}
        assert "--budget-per-station" in flags


def test_exploits_old_budget_flag_still_works_with_a_warning(capsys):
    args = build_parser().parse_args(["exploit", "--budget", "5"])
    assert cli._exploit_budget(args) == 5
    assert "deprecated" in capsys.readouterr().err
    args = build_parser().parse_args(["exploit", "--budget-per-station", "6"])
    assert cli._exploit_budget(args) == 6
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "name", [n for n in _commands() if n not in ("evcs-gym", "scenarios", "cache")]
)
def test_set_help_lists_every_setting(name):
    text = " ".join(_commands()[name].format_help().split())
    assert "--set KEY=VALUE" in text
    missing = [s for s in setting_names() if s not in text]
    assert not missing


def test_settings_lists_a_scenarios_values_with_their_meanings(capsys):
    assert main(["settings", "--scenario", "tiny", "--set", "deltan=1"]) == 0
    text = capsys.readouterr().out
    assert "deltan = 1\n    UXsim platoon size" in text
    assert main(["settings", "--json"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert list(values) == setting_names() and values["network_name"] == "unnamed"
    with pytest.raises(SystemExit, match="bogus"):
        main(["settings", "--set", "bogus=1"])


def test_scenarios_lists_the_bundled_ones(capsys):
    assert main(["scenarios"]) == 0
    names = capsys.readouterr().out.split()
    assert {"siouxfalls", "tiny", "berlin_friedrichshain", "anaheim"} <= set(names)


def test_evaluate_prints_json_with_rewards(capsys):
    assert main(["evaluate", "--scenario", "tiny", "--price", "1.0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "tiny"
    assert set(out["rewards"]) == {"A", "B"}
    assert out["converged"] is True


def test_set_overrides_a_setting_of_the_evaluated_scenario(capsys):
    args = ["evaluate", "--scenario", "tiny", "--price", "1.0", "--json"]
    assert main([*args, "--set", "ue_max_iterations=2", "--set", "ue_payoff_precision=0.05"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ue_iterations"] <= 2 and out["ue_stats"]["stop_reason"] != "converged"


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("ue_payoff_precision=-1", "ue_payoff_precision"),
        ("bogus=1", "bogus"),
        ("noequals", "KEY=VALUE"),
    ],
)
def test_set_rejects_a_bad_setting_by_name(pair, message):
    with pytest.raises(SystemExit, match=message):
        main(["evaluate", "--scenario", "tiny", "--set", pair])


def test_evaluate_rejects_prices_outside_the_bounds(capsys):
    assert main(["evaluate", "--scenario", "tiny", "--price", "5.0"]) == 2
    err = capsys.readouterr().err
    assert "invalid prices" in err and "5.0" in err


def test_evaluate_names_an_unreadable_prices_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(SystemExit, match="cannot read --prices"):
        main(["evaluate", "--scenario", "tiny", "--prices", str(missing)])


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


@pytest.mark.timeout(300)
def test_train_verifies_every_period_at_each_bound_and_the_levels_by_default(tmp_path, capsys):
    """Without ``--verify-budget`` the verification's search reaches, for every station,
    each period alone at each bound and the uniform levels, on the mean of two seeds."""
    out = tmp_path / "run"
    argv = ["train", "--scenario", "tiny", "--budget", "8", "--workers", "1", "--rounds", "0"]
    argv += ["--verify-grid", "3", "--verify-seeds", "2", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    cert = json.loads((out / "summary.json").read_text())["verified_exploitability"]
    assert cert["budget_per_station"] == 2 + 2 * 4 + 3 and cert["search_seeds"] == [0, 1]
    assert cert["grid"] == 3 and cert["period_moves"] == 0
    for dev in cert["deviations"].values():
        search = dev["search"]
        assert search["grid"] == 3  # every uniform level
        # every period at each bound, but for the moves that are the current prices
        assert search["period_moves"] >= 4
    assert "search on the mean of seeds [0, 1]" in text


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


@pytest.mark.timeout(300)
def test_solve_then_exploit_its_answer(tmp_path, capsys):
    answer = tmp_path / "solver.json"
    argv = ["solve", "--scenario", "tiny", "--rounds", "2", "--budget-per-station", "6"]
    argv += ["--target", "0"]  # both rounds, even when the first finds no gain
    assert main([*argv, "--out", str(answer)]) == 0
    assert "best-response dynamics: 2 rounds" in capsys.readouterr().out
    solved = json.loads(answer.read_text())
    assert set(solved["prices"]) == {"A", "B"} and solved["rounds"] == 2
    # exploit reads the solver's file (its "prices" entry) and prints JSON
    argv = ["exploit", "--scenario", "tiny", "--prices", str(answer), "--budget-per-station", "4"]
    assert main(argv) == 0
    assert "NashConv" in capsys.readouterr().out


@pytest.mark.timeout(300)
def test_exploit_can_score_its_search_on_fast_payoffs(capsys):
    argv = ["exploit", "--scenario", "tiny", "--price", "2.0", "--budget-per-station", "4"]
    assert main([*argv, "--seeds", "2", "--search-payoffs", "fast", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    tiny = evcs_gym.load_scenario("tiny")
    assert (
        out["search_settings_hash"] == tiny.with_stop_settings(**FAST_STOP_SETTINGS).settings_hash
    )
    assert out["game"]["settings_hash"] == tiny.settings_hash
    game = evcs_gym.EVCSRewardEvaluator(tiny)
    prices = {a: np.asarray(v) for a, v in out["prices"].items()}
    assert out["rewards_per_seed"]["A"][1] == game.evaluate(prices, seed=1).rewards["A"]


@pytest.mark.timeout(300)
def test_solve_starts_from_a_price_file(tmp_path, capsys):
    start = tmp_path / "start.json"
    start.write_text(json.dumps({"A": [0.5] * 4, "B": [1.75] * 4}))
    answer = tmp_path / "solver.json"
    argv = ["solve", "--scenario", "tiny", "--rounds", "1", "--budget-per-station", "4"]
    assert main([*argv, "--start", str(start), "--out", str(answer)]) == 0
    first = json.loads(answer.read_text())["history"][0]["prices"]
    assert first == {"A": [0.5] * 4, "B": [1.75] * 4}  # round 1 certifies the start
    start.write_text("[0.5, 1.75]")
    with pytest.raises(SystemExit, match=r"--start .*start\.json.* must hold"):
        main([*argv, "--start", str(start)])
