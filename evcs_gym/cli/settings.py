"""``evcs-gym settings``: the scenario settings with their values and meanings.

Without ``--scenario`` the values are the built-in defaults; ``--set`` overrides them as
it does for every other command, and ``--json`` prints the values alone.
"""

from __future__ import annotations

import argparse
import json

from evcs_gym.cli.common import add_command, add_settings_argument, parse_settings

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``settings`` command and its options to ``subparsers``."""
    p = add_command(
        subparsers, "settings", "list the scenario settings with their values and meanings"
    )
    p.add_argument(
        "--scenario",
        default=None,
        help="show this scenario's values, bundled name or folder (None: the built-in defaults)",
    )
    p.add_argument("--json", action="store_true", help="print the values as JSON")
    add_settings_argument(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the settings table (or their values as JSON); 0."""
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
