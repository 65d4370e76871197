"""The ``evcs-gym`` argument parser, assembled from one module per command.

:data:`COMMANDS` lists the command modules in the order ``evcs-gym --help`` shows them;
each adds its subparser (``add_parser``) and runs it (``run(args) -> int``, the exit
code). :func:`main` parses the arguments and runs the command they name.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType

from evcs_gym.cli import (
    cache,
    convergence,
    evaluate,
    exploit,
    scenarios,
    settings,
    solve,
    train,
)
from evcs_gym.cli.common import HelpFormatter, package_version

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: tuple[ModuleType, ...] = (
    evaluate,
    train,
    exploit,
    solve,
    convergence,
    scenarios,
    settings,
    cache,
)
"""The command modules, in the order of ``evcs-gym --help``."""


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
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``evcs-gym`` on ``argv`` (None: the process's arguments); the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
