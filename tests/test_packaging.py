"""Packaging: every subpackage ships in a (non-editable) wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # standard library from Python 3.11

ROOT = Path(__file__).resolve().parents[1]


def test_every_python_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = config["package-dir"]
    found = {"evcs_gym"}
    for init in (ROOT / "evcs_gym").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        found.add(".".join(rel.parts))
    found |= {name for name, folder in mapped.items() if (ROOT / folder / "__init__.py").exists()}
    assert found <= listed, f"not shipped in wheels: {sorted(found - listed)}"
