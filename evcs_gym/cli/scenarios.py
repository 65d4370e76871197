"""``evcs-gym scenarios``: list the bundled scenarios, one name a line."""

from __future__ import annotations

import argparse

from evcs_gym.cli.common import add_command

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``scenarios`` command to ``subparsers`` (it takes no options)."""
    p = add_command(subparsers, "scenarios", "list the bundled scenarios")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print every bundled scenario's name; 0."""
    import evcs_gym

    for name in evcs_gym.available_scenarios():
        print(name)
    return 0
