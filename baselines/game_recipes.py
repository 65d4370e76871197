"""Tuned training recipes per game, shipped as data: what ``evcs-gym train`` uses by default.

Like RL Baselines3 Zoo's hyperparameter files, every bundled game that has been tuned
has a TOML file in ``evcs_gym/baselines/recipes/``, named after the game, that a user
can read and copy. It has three kinds of table:

* ``[recipe]`` -- about the recipe: the ``game`` and the ``settings_hash`` it was set on,
  and ``how``, a sentence on how it was set (the study, its seeds and budget);
* ``[train]`` -- defaults of ``evcs-gym train``'s own flags: ``algo``, ``budget``,
  ``rounds``; a subtable per learner (``[train.iddpg]``) sets ``budget`` or ``rounds``
  for that learner only (one that needs a longer run than the game's default learner);
* one table per learner (``[maddpg]``, ``[iddpg]``, ``[mfddpg]``) -- fields of its config
  (:class:`~evcs_gym.baselines.MADDPGConfig`) set over the budget-derived ones of
  :func:`~evcs_gym.baselines.recipe.learner_config`.

``evcs-gym train --scenario X`` reads ``X``'s recipe (:func:`game_recipe`); a flag given
on the command line wins over it, and ``--hyperparams KEY=VALUE`` over both. ``--recipe
none`` trains with the package's defaults, ``--recipe path.toml`` with a file of one's
own. Importing this module does not import PyTorch.

Example:
    >>> recipe = game_recipe("tiny_market")
    >>> recipe.game, recipe.train["algo"]
    ('tiny_market', 'maddpg')
    >>> recipe.learners["maddpg"]["updates_per_learn"]
    32
    >>> tiny = game_recipe("tiny")  # IDDPG needs a longer run there
    >>> tiny.train_for("iddpg")["budget"], tiny.train_for("maddpg")["budget"]
    (2400, 600)
    >>> game_recipe("no_such_game") is None
    True
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from evcs_gym.baselines.registry import ALGORITHM_NAMES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "LEARNER_TRAIN_KEYS",
    "TRAIN_KEYS",
    "GameRecipe",
    "game_recipe",
    "load_recipe",
    "recipe_names",
]

TRAIN_KEYS = ("algo", "budget", "rounds")
"""The ``evcs-gym train`` flags a recipe's ``[train]`` table may set."""
LEARNER_TRAIN_KEYS = ("budget", "rounds")
"""The flags a learner's ``[train.<learner>]`` subtable may set."""


@dataclass(frozen=True)
class GameRecipe:
    """One game's training recipe (a file of ``evcs_gym/baselines/recipes/``)."""

    game: str
    """The game it was set on (a bundled scenario's name)."""
    settings_hash: str
    """That game's settings hash when the recipe was set."""
    how: str
    """How it was set: the study, its seeds and its budget."""
    source: str
    """Where it was read from (the file's name for a shipped recipe, else its path)."""
    train: Mapping[str, Any] = field(default_factory=dict)
    """Defaults of ``evcs-gym train``'s flags (:data:`TRAIN_KEYS`)."""
    train_by_learner: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per learner name, the flags set for it alone (:data:`LEARNER_TRAIN_KEYS`)."""
    learners: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per learner name, fields of its config."""

    def learner(self, name: str) -> dict[str, Any]:
        """The config fields the recipe sets for learner ``name`` (none: an empty dict)."""
        return dict(self.learners.get(name, {}))

    def train_for(self, algo: str) -> dict[str, Any]:
        """The ``evcs-gym train`` flags the recipe sets when training ``algo``: ``[train]``
        with ``[train.<algo>]`` over it."""
        return {**self.train, **self.train_by_learner.get(algo, {})}

    def describe(self, algo: str) -> str:
        """One line: the recipe's source and what it sets for ``algo``."""
        train = {k: v for k, v in self.train_for(algo).items() if k != "algo"}
        sets = {**train, **self.learner(algo)}
        text = ", ".join(f"{k}={v}" for k, v in sets.items()) or "nothing"
        return f"recipe {self.source} (game {self.game}, {self.settings_hash}): {algo}, {text}"


def _parse(raw: Mapping[str, Any], source: str) -> GameRecipe:
    meta = raw.get("recipe", {})
    missing = [k for k in ("game", "settings_hash", "how") if k not in meta]
    unknown = sorted(set(raw) - {"recipe", "train", *ALGORITHM_NAMES})
    train, by_learner = _split_train(raw.get("train", {}))
    train_unknown = sorted(set(train) - set(TRAIN_KEYS))
    train_unknown += [
        f"{a}.{k}" for a, t in by_learner.items() for k in sorted(set(t) - set(LEARNER_TRAIN_KEYS))
    ]
    if missing or unknown or train_unknown:
        raise ValueError(
            f"recipe {source}: [recipe] lacks {missing}, unknown tables {unknown}, unknown "
            f"[train] keys {train_unknown} (tables: recipe, train, {', '.join(ALGORITHM_NAMES)};"
            f" [train] keys: {', '.join(TRAIN_KEYS)}; [train.<learner>] keys:"
            f" {', '.join(LEARNER_TRAIN_KEYS)})"
        )
    algo = train.get("algo")
    if algo is not None and algo not in ALGORITHM_NAMES:
        raise ValueError(f"recipe {source}: [train] algo={algo!r} is not one of {ALGORITHM_NAMES}")
    return GameRecipe(
        game=str(meta["game"]),
        settings_hash=str(meta["settings_hash"]),
        how=str(meta["how"]).strip(),
        source=source,
        train=train,
        train_by_learner=by_learner,
        learners={a: dict(raw[a]) for a in ALGORITHM_NAMES if a in raw},
    )


def _split_train(table: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``[train]``'s own keys, and its per-learner subtables (a learner's name, a table)."""
    by_learner = {a: dict(table[a]) for a in ALGORITHM_NAMES if isinstance(table.get(a), dict)}
    return {k: v for k, v in table.items() if k not in by_learner}, by_learner


def load_recipe(path: str | Path) -> GameRecipe:
    """Read a recipe file (TOML, the layout of the shipped ones).

    Raises:
        ValueError: it has an unknown table or ``[train]`` key, or lacks a ``[recipe]`` key.
    """
    with open(path, "rb") as f:
        return _parse(tomllib.load(f), str(path))


def recipe_names() -> list[str]:
    """The games that ship a recipe, sorted."""
    folder = resources.files("evcs_gym.baselines").joinpath("recipes")
    names = (p.name for p in folder.iterdir())
    return sorted(n.removesuffix(".toml") for n in names if n.endswith(".toml"))


def game_recipe(game: str) -> GameRecipe | None:
    """The shipped recipe of the game called ``game``, or None if it has none."""
    if game not in recipe_names():
        return None
    path = resources.files("evcs_gym.baselines").joinpath("recipes").joinpath(f"{game}.toml")
    return _parse(tomllib.loads(path.read_text()), f"{game}.toml")
