"""The tuned recipes shipped per game (``evcs_gym/baselines/recipes/*.toml``): each is set
on the game as bundled today, and names only real learners, flags and config fields."""

from __future__ import annotations

import pytest

import evcs_gym
from evcs_gym.baselines.game_recipes import (
    LEARNER_TRAIN_KEYS,
    TRAIN_KEYS,
    game_recipe,
    load_recipe,
    recipe_names,
)
from evcs_gym.baselines.recipe import learner_config
from evcs_gym.baselines.registry import ALGORITHM_NAMES, load_algorithm
from evcs_gym.scenarios.setting_docs import scenario_settings


def test_the_tiny_sioux_falls_and_market_games_ship_a_recipe():
    assert {"tiny", "siouxfalls", "tiny_market", "siouxfalls_market"} <= set(recipe_names())


def test_a_settings_files_digest_is_the_loaded_games_settings_hash():
    assert scenario_settings("tiny").digest == evcs_gym.load_scenario("tiny").settings_hash


@pytest.mark.parametrize("game", recipe_names())
def test_a_shipped_recipe_is_set_on_the_game_as_bundled(game):
    recipe = game_recipe(game)
    assert recipe is not None and recipe.game == game and recipe.source == f"{game}.toml"
    # the settings file's digest is the loaded scenario's settings_hash (checked on tiny
    # above), without loading Sioux Falls' network (12 s of the default run)
    assert recipe.settings_hash == scenario_settings(game).digest
    assert len(recipe.how) > 40  # says how it was set
    assert set(recipe.train) <= set(TRAIN_KEYS) and recipe.train["algo"] in ALGORITHM_NAMES
    assert set(recipe.train_by_learner) <= set(ALGORITHM_NAMES)
    assert all(set(t) <= set(LEARNER_TRAIN_KEYS) for t in recipe.train_by_learner.values())
    for name, fields in recipe.learners.items():
        cls = load_algorithm(name).config_cls
        config = learner_config(cls, recipe.train_for(name).get("budget", 400), overrides=fields)
        assert all(getattr(config, k) == v for k, v in fields.items())


def test_a_recipe_file_with_an_unknown_table_or_key_is_refused(tmp_path):
    path = tmp_path / "bad.toml"
    head = '[recipe]\ngame = "g"\nsettings_hash = "h"\nhow = "x"\n'
    path.write_text(head + "[ppo]\nlr = 1\n")
    with pytest.raises(ValueError, match=r"unknown tables \['ppo'\]"):
        load_recipe(path)
    path.write_text(head + "[train]\nepochs = 3\n")
    with pytest.raises(ValueError, match=r"unknown \[train\] keys \['epochs'\]"):
        load_recipe(path)
    path.write_text(head + "[train.iddpg]\nalgo = 'maddpg'\n")  # a learner's own: budget, rounds
    with pytest.raises(ValueError, match=r"unknown \[train\] keys \['iddpg.algo'\]"):
        load_recipe(path)
    path.write_text(head + "[train.ppo]\nbudget = 3\n")
    with pytest.raises(ValueError, match=r"unknown \[train\] keys \['ppo'\]"):
        load_recipe(path)
    path.write_text(head + '[train]\nalgo = "dqn"\n')
    with pytest.raises(ValueError, match="algo='dqn'"):
        load_recipe(path)
    path.write_text('[recipe]\ngame = "g"\n')
    with pytest.raises(ValueError, match=r"lacks \['settings_hash', 'how'\]"):
        load_recipe(path)


def test_a_learner_field_the_config_lacks_is_named():
    cls = load_algorithm("maddpg").config_cls
    with pytest.raises(ValueError, match=r"no field\(s\) \['updates'\]"):
        learner_config(cls, 100, overrides={"updates": 3})


def test_a_learner_can_have_train_flags_of_its_own(tmp_path):
    """``[train.<learner>]`` sets budget or rounds for that learner alone, over ``[train]``."""
    path = tmp_path / "mine.toml"
    path.write_text(
        '[recipe]\ngame = "g"\nsettings_hash = "h"\nhow = "x"\n'
        '[train]\nalgo = "maddpg"\nbudget = 600\nrounds = 0\n[train.iddpg]\nbudget = 2400\n'
    )
    recipe = load_recipe(path)
    assert recipe.train == {"algo": "maddpg", "budget": 600, "rounds": 0}
    assert recipe.train_for("iddpg") == {"algo": "maddpg", "budget": 2400, "rounds": 0}
    assert recipe.train_for("mfddpg") == recipe.train
    assert "iddpg, budget=2400, rounds=0" in recipe.describe("iddpg")
