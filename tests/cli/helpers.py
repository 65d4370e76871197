"""What the CLI tests share: the parser's commands and the options a user types."""

from __future__ import annotations

import argparse

from evcs_gym.cli import build_parser

__all__ = ["commands", "options"]


def commands() -> dict[str, argparse.ArgumentParser]:
    """``"evcs-gym"`` -> the top-level parser, then every command's subparser by name."""
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"evcs-gym": parser, **sub.choices}


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options a user types, without ``--help`` and ``--version``."""
    skip = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    return [a for a in parser._actions if a.option_strings and not isinstance(a, skip)]
