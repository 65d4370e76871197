"""MkDocs hook: lay out the package as Python imports it, for mkdocstrings to read.

setuptools installs ``wrappers/`` and ``baselines/`` as ``evcs_gym.wrappers`` and
``evcs_gym.baselines`` (``package-dir`` in pyproject.toml). mkdocstrings reads sources
without importing them and cannot follow that mapping, so this hook builds
``build/docs-src/evcs_gym/``: links to every entry of ``evcs_gym/`` plus ``wrappers``
and ``baselines`` under their installed names. ``mkdocs.yml`` points mkdocstrings there.

The tree is built when MkDocs imports this hook, while it reads ``mkdocs.yml``: the
python handler keeps only search paths that exist when the mkdocstrings plugin is
configured, before any hook's ``on_config`` (built from ``on_config``, the tree came too
late in a fresh clone, and the first ``mkdocs build`` there failed).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "docs-src"


def build_tree() -> Path:
    """Create ``build/docs-src`` afresh from pyproject.toml's package-dir; return it."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    if TREE.exists():
        shutil.rmtree(TREE)
    top = TREE / "evcs_gym"
    top.mkdir(parents=True)
    for entry in (ROOT / package_dir["evcs_gym"]).iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for name, folder in package_dir.items():
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "evcs_gym":
            (top / parts[1]).symlink_to(ROOT / folder)
    return TREE


build_tree()
