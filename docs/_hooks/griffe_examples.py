"""Griffe extension: show the package's doctests as code.

The docstrings head their doctests ``Example:``, or give them bare, under the summary.
Griffe's Google parser knows only ``Examples:`` as an examples section: it renders
``Example:`` as a note and bare ``>>>`` lines as Markdown text. This extension renames
``Example:`` to ``Examples:`` and fences bare doctest blocks as ``pycon`` code when an
object loads. ``mkdocs.yml`` loads it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
# a doctest at the docstring's own indentation (not inside a section), to the next blank line
_BARE_DOCTEST = re.compile(r"^>>> .*(?:\n(?!\s*\n).+)*", re.MULTILINE)


def show_doctests(text: str) -> str:
    """``text`` with ``Example:`` headings renamed and bare doctests fenced.

    >>> show_doctests("Summary.\\n\\n>>> 1 + 1\\n2")
    'Summary.\\n\\n```pycon\\n>>> 1 + 1\\n2\\n```'
    """
    text = _EXAMPLE.sub(r"\1Examples:", text)
    return _BARE_DOCTEST.sub(lambda m: f"```pycon\n{m.group(0)}\n```", text)


class ExampleSections(griffe.Extension):
    """Apply :func:`show_doctests` to every object's docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = show_doctests(obj.docstring.value)
