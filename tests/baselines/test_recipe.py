"""The training recipe (evcs_gym.baselines.recipe): settings derived from a budget."""

from __future__ import annotations

import dataclasses

import pytest

from evcs_gym.baselines.recipe import (
    BudgetSettings,
    VerificationPlan,
    budget_settings,
    default_verify_budget,
    learner_config,
    verification_plan,
)
from evcs_gym.baselines.registry import ALGORITHM_NAMES


@pytest.mark.parametrize("budget", [1, 7, 8, 16, 63, 64, 65, 400, 511, 512, 513, 1000, 10**6])
def test_budget_settings_follow_the_commands_formula(budget):
    rows = min(64, max(8, budget // 8))
    assert budget_settings(budget) == BudgetSettings(
        batch_size=rows, learning_starts=rows, random_warmup=min(128, budget // 4)
    )


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@pytest.mark.parametrize("noise", [0.01, 0.03, 0.05, 0.1, 0.3])
@pytest.mark.parametrize("budget", [8, 400, 5000])
def test_learner_config_is_the_one_the_command_always_made(name, noise, budget):
    """The config ``evcs-gym train`` built inline before the recipe was a module."""
    from evcs_gym.baselines import ALGORITHMS

    config_cls = ALGORITHMS[name].config_cls
    before = config_cls(
        seed=5,
        batch_size=min(64, max(8, budget // 8)),
        learning_starts=min(64, max(8, budget // 8)),
        random_warmup=min(128, budget // 4),
        noise_std=noise,
        noise_decay=0.99,
        noise_min=min(config_cls.noise_min, noise),
    )
    config = learner_config(config_cls, budget, seed=5, noise_std=noise, noise_decay=0.99)
    assert type(config) is config_cls and config == before
    assert config.noise_min <= config.noise_std
    # every setting the recipe does not derive is the class's default
    derived = {"seed", "batch_size", "learning_starts", "random_warmup", "noise_std"}
    derived |= {"noise_decay", "noise_min"}
    default = config_cls()
    for field in dataclasses.fields(config_cls):
        if field.name not in derived:
            assert getattr(config, field.name) == getattr(default, field.name), field.name


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_learner_config_takes_the_actor_learning_rate_or_keeps_the_default(name):
    from evcs_gym.baselines import ALGORITHMS

    config_cls = ALGORITHMS[name].config_cls
    assert learner_config(config_cls, 400, actor_lr=1e-4).actor_lr == 1e-4
    slow = learner_config(config_cls, 400, actor_lr=1e-4)
    assert dataclasses.replace(slow, actor_lr=config_cls().actor_lr) == learner_config(
        config_cls, 400
    )


def test_verification_plan_defaults_to_the_converged_search_and_caps_the_search_seeds():
    assert verification_plan(4) == VerificationPlan(budget=None, grid=7, seeds=4, search_seeds=1)
    assert verification_plan(4).spec().method == "converged"
    plan = verification_plan(8, grid=3, seeds=2, search_seeds=5)
    assert plan == VerificationPlan(budget=None, grid=3, seeds=2, search_seeds=2)
    assert plan.enabled and plan.spec().grid == 3
    # a fixed budget reaches every single move by default, as evcs-gym 0.3.0's did
    assert default_verify_budget(4, 7) == 17 and default_verify_budget(8, 7) == 25
    old = verification_plan(8, grid=3, search="budget")
    assert old.budget == 2 + 16 + 3 and old.spec().method == "budget"
    assert verification_plan(9, budget=6).budget == 6
    assert not verification_plan(9, budget=0).enabled


@pytest.mark.parametrize("field", ["seeds", "search_seeds"])
def test_verification_plan_refuses_no_seeds_before_training_starts(field):
    # `evcs-gym train --verify-seeds 0` used to fail only after the whole training run
    with pytest.raises(ValueError, match=f"`{field}` must be >= 1.*got 0"):
        verification_plan(4, **{field: 0})
