"""Packaging: every subpackage ships in a (non-editable) wheel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from setuptools import find_packages

tomllib = pytest.importorskip("tomllib")  # standard library from Python 3.11

ROOT = Path(__file__).resolve().parents[1]


def test_every_python_package_is_found_by_the_wheel_build():
    """The wheel takes the packages that ``[tool.setuptools.packages.find]`` finds; the
    top-level ``wrappers/`` and ``baselines/`` folders join the package through the links
    ``evcs_gym/wrappers`` and ``evcs_gym/baselines``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = set(find_packages(str(ROOT), **config["packages"]["find"]))
    found = {
        ".".join(Path(folder).relative_to(ROOT).parts)
        for folder, _, files in os.walk(ROOT / "evcs_gym", followlinks=True)
        if "__init__.py" in files
    }
    assert {"evcs_gym.wrappers", "evcs_gym.baselines", "evcs_gym.ue"} <= found
    assert found <= shipped, f"not shipped in wheels: {sorted(found - shipped)}"


@pytest.mark.parametrize("room", ["wrappers", "baselines"])
def test_top_level_rooms_are_linked_into_the_package(room):
    link = ROOT / "evcs_gym" / room
    assert link.is_symlink() and link.resolve() == (ROOT / room).resolve()


def test_the_training_recipes_are_package_data():
    """``evcs_gym/baselines/recipes/*.toml`` ship in wheels (``game_recipe`` reads them)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = config["package-data"]["evcs_gym"]
    recipes = sorted((ROOT / "evcs_gym" / "baselines" / "recipes").glob("*.toml"))
    assert recipes
    for path in recipes:
        relative = path.relative_to(ROOT / "evcs_gym")
        assert any(relative.match(g) for g in globs), f"{relative} matches none of {globs}"
