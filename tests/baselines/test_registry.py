"""The learners' registry (evcs_gym.baselines.registry) and the package's lazy names."""

from __future__ import annotations

import importlib

from evcs_gym.baselines.registry import ALGORITHM_NAMES, load_algorithm


def test_the_registry_names_the_classes_of_algorithms():
    from evcs_gym.baselines import ALGORITHMS

    assert list(ALGORITHMS) == list(ALGORITHM_NAMES)
    for name in ALGORITHM_NAMES:
        assert load_algorithm(name) is ALGORITHMS[name] and ALGORITHMS[name].name == name


def test_every_public_name_of_the_baselines_resolves_though_they_import_on_first_use():
    """The choices come from ``evcs_gym.baselines`` without PyTorch because its names are
    imported on first use (``test_building_the_parser_imports_neither_torch_nor_the_learners``);
    each still is its home module's object."""
    import evcs_gym.baselines as baselines

    for name in baselines.__all__:
        value = getattr(baselines, name)
        assert value is not None, name
        assert name in dir(baselines), name
    trainer = importlib.import_module("evcs_gym.baselines.trainer")
    assert baselines.TrainResult is trainer.TrainResult
    assert baselines.ALGORITHMS is baselines.ALGORITHMS  # built once
