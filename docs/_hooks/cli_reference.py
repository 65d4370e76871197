"""MkDocs hook: the command-line reference, generated from ``evcs_gym.cli.build_parser()``.

A page containing the line ``<!-- cli-reference -->`` gets, in its place, one section per
command with that command's ``--help`` output, so the reference cannot drift from the
parser.
"""

from __future__ import annotations

import argparse

MARKER = "<!-- cli-reference -->"


def _help_text(parser: argparse.ArgumentParser) -> str:
    # a fixed width, so that the page does not depend on the terminal of whoever builds it
    parser.formatter_class = _fixed_width(parser.formatter_class)
    return parser.format_help().rstrip()


def _fixed_width(cls: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    class Fixed(cls):  # type: ignore[misc, valid-type]
        def __init__(self, prog: str, **kwargs) -> None:
            kwargs["width"] = 74
            super().__init__(prog, **kwargs)

    return Fixed


def cli_reference() -> str:
    """Markdown: the top-level help, then one section per command."""
    from evcs_gym.cli import build_parser

    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["## evcs-gym", "", "```text", _help_text(parser), "```", ""]
    for name, command in sub.choices.items():
        parts += [f"## evcs-gym {name}", "", "```text", _help_text(command), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
