"""Griffe extension: document every object once, at its home module.

Some modules list in ``__all__`` names they import from a sibling, so that old imports
keep working (``evcs_gym.ue.evaluator`` re-exports ``EvalResult`` from
``evcs_gym.ue.result``). mkdocstrings renders every public member of a module, so such a
name would appear twice in the API reference. This extension drops, from the
``__all__`` griffe read for a plain module (not a package ``__init__``), every name that
is an import from inside ``evcs_gym``: the object stays documented where it is defined.
``mkdocs.yml`` loads it.
"""

from __future__ import annotations

from typing import Any

import griffe

ROOT = "evcs_gym"


class HideReexports(griffe.Extension):
    """Remove in-package re-exports from plain modules' exports."""

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        if mod.is_init_module or not mod.exports:
            return
        kept = []
        for export in mod.exports:
            name = export if isinstance(export, str) else export.name
            member = mod.members.get(name)
            if member is not None and member.is_alias and _inside(member.target_path):
                continue
            kept.append(export)
        mod.exports = kept


def _inside(path: str) -> bool:
    return path == ROOT or path.startswith(ROOT + ".")
