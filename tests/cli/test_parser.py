"""The ``evcs-gym`` parser: its version, help, defaults, budgets and ``--set``; the command
modules it is assembled from; and that building it imports neither PyTorch nor the
learners."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

import pytest

import evcs_gym.cli
from evcs_gym.cli import main
from evcs_gym.cli.parser import COMMANDS
from evcs_gym.scenarios.setting_docs import setting_names
from tests.cli.helpers import commands, options


def test_version_prints_the_installed_distributions_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"evcs-gym {version('evcs-gym')}"


@pytest.mark.parametrize("name", list(commands()))
def test_every_option_has_help_and_its_help_shows_the_default(name):
    parser = commands()[name]
    text = " ".join(parser.format_help().split())  # undo the wrapping
    for action in options(parser):
        flag = action.option_strings[-1]
        assert action.help and action.help != argparse.SUPPRESS, f"{name} {flag}: no help"
        assert f"(default: {action.default})" in text, f"{name} {flag}: default not shown"


def test_budget_is_a_total_and_per_station_budgets_say_so():
    parsers = commands()
    for name in ("train", "solve"):
        (budget,) = (a for a in options(parsers[name]) if "--budget" in a.option_strings)
        assert budget.dest == "budget" and "total" in budget.help
    for name in ("exploit", "solve"):
        flags = {f for a in options(parsers[name]) for f in a.option_strings}
        assert "--budget-per-station" in flags


@pytest.mark.parametrize(
    "name", [n for n in commands() if n not in ("evcs-gym", "scenarios", "cache")]
)
def test_set_help_lists_every_setting(name):
    text = " ".join(commands()[name].format_help().split())
    assert "--set KEY=VALUE" in text
    missing = [s for s in setting_names() if s not in text]
    assert not missing


def test_the_commands_are_one_module_each_in_the_order_of_the_help():
    names = [m.__name__.rsplit(".", 1)[1] for m in COMMANDS]
    assert names == list(commands())[1:]
    assert names == [
        "evaluate", "train", "exploit", "solve", "convergence", "scenarios", "settings", "cache",
    ]  # fmt: skip
    for module in COMMANDS:
        assert module.__doc__ and set(module.__all__) >= {"add_parser", "run"}, module
    for name, parser in list(commands().items())[1:]:
        (module,) = (m for m in COMMANDS if m.__name__.endswith("." + name))
        assert parser.get_default("func") is module.run, name


def test_the_package_exports_the_parser_and_the_settings_parser():
    assert set(evcs_gym.cli.__all__) >= {"build_parser", "main", "parse_settings"}
    assert evcs_gym.cli.parse_settings(["a=1", "b=x"]) == {"a": 1, "b": "x"}


def test_building_the_parser_imports_neither_torch_nor_the_learners():
    code = (
        "import sys\n"
        "from evcs_gym.cli import build_parser\n"
        "build_parser().format_help()\n"
        "heavy = [m for m in ('torch', 'evcs_gym.baselines.maddpg', 'evcs_gym.baselines.trainer')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_python_m_evcs_gym_cli_is_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "evcs_gym.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == f"evcs-gym {version('evcs-gym')}"
