"""A training run's settings derived from its budget: the recipe of ``evcs-gym train``.

``evcs-gym train --budget N`` gives the learners settings scaled to ``N`` and ends with a
verification whose size follows from the action's shape. Both are here, as plain
functions of plain numbers, so that a script trains and verifies exactly as the command
does:

* :func:`budget_settings` -- the replay settings a budget of ``N`` evaluations affords
  (:class:`BudgetSettings`): a minibatch and a learning start of ``N / 8`` within
  [8, 64] rows, and a random warm-up of ``N / 4`` up to 128 rows, so that the first
  critics see the whole action box;
* :func:`learner_config` -- a learner's config with those settings, the exploration noise
  asked for and an exploration floor never above its start;
* :func:`verification_plan` -- the final check of the learned pure actions
  (:class:`VerificationPlan`): by default the converged deviation search
  (:mod:`evcs_gym.equilibrium.search_spec`), each candidate scored on the mean of at most
  ``seeds`` seeds; with a fixed-budget search, :func:`default_verify_budget` candidates
  per agent unless told otherwise.

Nothing here is specific to EV charging or needs a scenario: in the pricing game an
action is a station's prices, one per period, so ``action_dim`` is the scenario's
``n_periods`` (4 on ``tiny``, 8 on Sioux Falls); the verification itself is the caller's
(the CLI runs :func:`evcs_gym.equilibrium.exploitability.exploitability` with these
numbers). Importing this module does not import PyTorch.

Example:
    >>> from evcs_gym.baselines.recipe import budget_settings, verification_plan
    >>> budget_settings(400)
    BudgetSettings(batch_size=50, learning_starts=50, random_warmup=100)
    >>> budget_settings(16)
    BudgetSettings(batch_size=8, learning_starts=8, random_warmup=4)
    >>> plan = verification_plan(action_dim=4, seeds=4, search_seeds=2)
    >>> plan.search, plan.budget, plan.search_seeds
    ('converged', None, 2)
    >>> verification_plan(action_dim=4, search="budget").budget
    17
    >>> plan.enabled, verification_plan(action_dim=4, budget=0).enabled
    (True, False)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from evcs_gym.baselines.maddpg import MADDPG, MADDPGConfig
    from evcs_gym.equilibrium.search_spec import SearchSpec

__all__ = [
    "BudgetSettings",
    "VerificationPlan",
    "budget_settings",
    "default_verify_budget",
    "learner_config",
    "make_learner",
    "verification_plan",
]

ConfigT = TypeVar("ConfigT", bound="MADDPGConfig")


@dataclass(frozen=True)
class BudgetSettings:
    """The replay settings of a learner, scaled to a training budget."""

    batch_size: int
    """Minibatch rows of one gradient update: ``budget // 8`` within [8, 64]."""
    learning_starts: int
    """Rows stored before the first update: ``budget // 8`` within [8, 64]."""
    random_warmup: int
    """Rows whose actions are uniform in the action box, so the first critics see every
    action: ``budget // 4``, at most 128."""


def budget_settings(budget: int) -> BudgetSettings:
    """The replay settings for a run of ``budget`` evaluations.

    Args:
        budget: the run's total evaluations (env steps × copies).

    Returns:
        The minibatch, learning start and random warm-up (:class:`BudgetSettings`).

    Example:
        >>> budget_settings(1000)
        BudgetSettings(batch_size=64, learning_starts=64, random_warmup=128)
    """
    rows = min(64, max(8, budget // 8))
    return BudgetSettings(
        batch_size=rows,
        learning_starts=rows,
        random_warmup=min(128, budget // 4),
    )


def learner_config(
    config_cls: type[ConfigT],
    budget: int,
    *,
    seed: int | None = 0,
    noise_std: float = 0.1,
    noise_decay: float = 0.999,
    actor_lr: float | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ConfigT:
    """A learner's config for a run of ``budget`` evaluations, as ``evcs-gym train`` makes it.

    The replay settings are :func:`budget_settings`; the exploration starts at
    ``noise_std`` and decays by ``noise_decay`` per learning step down to the class's
    default floor, or to ``noise_std`` if that is lower (the floor never above the
    start). Every other setting is the class's default.

    Args:
        config_cls: the learner's config class, e.g. ``ALGORITHMS[name].config_cls``
            (:class:`~evcs_gym.baselines.MADDPGConfig` or a subclass).
        budget: the run's total evaluations.
        seed: the learner's seed.
        noise_std: initial exploration std, as a share of each action dimension's range.
        noise_decay: multiplicative decay of the exploration std per learning step.
        actor_lr: the actors' learning rate (None: the class's default).
        overrides: any other fields of ``config_cls`` to set, last (``evcs-gym train
            --hyperparams``); a ``noise_std`` there moves the floor with it, as the
            argument does.

    Returns:
        An instance of ``config_cls``.

    Raises:
        ValueError: if ``overrides`` names a field ``config_cls`` does not have.

    Example:
        >>> from evcs_gym.baselines import IDDPGConfig
        >>> cfg = learner_config(IDDPGConfig, 400, seed=3, noise_std=0.03)
        >>> cfg.batch_size, cfg.random_warmup, cfg.noise_std, cfg.noise_min, cfg.seed
        (50, 100, 0.03, 0.03, 3)
        >>> learner_config(IDDPGConfig, 400, overrides={"updates_per_learn": 8}).updates_per_learn
        8
    """
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(overrides or {}) - fields)
    if unknown:
        raise ValueError(
            f"overrides={dict(overrides or {})!r}: {config_cls.__name__} has no field(s) "
            f"{unknown}; its fields: {sorted(fields)}"
        )
    replay = budget_settings(budget)
    config = config_cls(
        seed=seed,
        batch_size=replay.batch_size,
        learning_starts=replay.learning_starts,
        random_warmup=replay.random_warmup,  # the first critics see every price
        noise_std=noise_std,
        noise_decay=noise_decay,
        noise_min=min(config_cls.noise_min, noise_std),  # the floor never above the start
    )
    if actor_lr is not None:
        config = dataclasses.replace(config, actor_lr=actor_lr)
    if overrides:
        overrides = dict(overrides)
        if "noise_std" in overrides and "noise_min" not in overrides:
            overrides["noise_min"] = min(config_cls.noise_min, overrides["noise_std"])
        config = dataclasses.replace(config, **overrides)
    return config


LearnerT = TypeVar("LearnerT", bound="MADDPG")


def make_learner(algo_cls: type[LearnerT], env: Any, config: Any) -> LearnerT:
    """A learner of class ``algo_cls`` for every agent of ``env``, with ``config``.

    Args:
        algo_cls: e.g. ``ALGORITHMS["maddpg"]``.
        env: what the learner trains on: a PettingZoo ``ParallelEnv`` or a vector env
            (anything with ``possible_agents``, ``observation_space(agent)`` and
            ``action_space(agent)``).
        config: an instance of ``algo_cls.config_cls`` (:func:`learner_config`).

    Example:
        >>> import evcs_gym
        >>> from evcs_gym.baselines import ALGORITHMS
        >>> cls = ALGORITHMS["iddpg"]
        >>> algo = make_learner(cls, evcs_gym.parallel_env(scenario="tiny"), cls.config_cls())
        >>> algo.agents
        ['A', 'B']
    """
    agents = list(env.possible_agents)
    return algo_cls(
        {a: env.observation_space(a) for a in agents},
        {a: env.action_space(a) for a in agents},
        config,
        agents=agents,
    )


def default_verify_budget(action_dim: int, grid: int) -> int:
    """Candidates per agent that reach every move the verification tries first.

    The current action, each action dimension alone at each bound, ``grid`` uniform
    levels and the combined best single moves: ``2 + 2 × action_dim + grid``.

    Args:
        action_dim: the length of an agent's action (the pricing game: its periods).
        grid: the uniform levels the verification tries.

    Example:
        >>> default_verify_budget(4, 7), default_verify_budget(8, 7)
        (17, 25)
    """
    return 2 + 2 * action_dim + grid


@dataclass(frozen=True)
class VerificationPlan:
    """The size of the final verification of a training run's pure actions."""

    budget: int | None
    """Candidates tried per agent at most: the converged search's cap or the fixed
    budget (0: no verification; None: the converged search's default cap)."""
    grid: int
    """Uniform levels the search tries."""
    seeds: int
    """Seeds each agent's best deviation is re-evaluated on (the gains' standard errors)."""
    search_seeds: int
    """Seeds each candidate of the search is scored on (their mean), at most :attr:`seeds`."""
    search: str = "converged"
    """The search's preset name (:data:`evcs_gym.equilibrium.search_spec.SEARCHES`)."""
    resolution: float | None = None
    """The converged search's last step as a share of the range (None: its default)."""
    held_out: bool = True
    """Whether the search scores on seeds after :attr:`seeds` (every gain out of sample)."""

    @property
    def enabled(self) -> bool:
        """Whether there is a verification to run (``budget`` is not 0)."""
        return self.budget != 0

    def spec(self) -> SearchSpec:
        """The search as a :class:`~evcs_gym.equilibrium.search_spec.SearchSpec`."""
        from evcs_gym.equilibrium.search_spec import resolve_search

        return resolve_search(
            self.search, budget=self.budget, grid=self.grid, resolution=self.resolution
        )


def verification_plan(
    action_dim: int,
    *,
    budget: int | None = None,
    grid: int | None = None,
    seeds: int = 4,
    search_seeds: int = 1,
    search: str = "converged",
    resolution: float | None = None,
    held_out: bool = True,
) -> VerificationPlan:
    """The final verification of ``evcs-gym train`` (its ``--verify-*`` options).

    Args:
        action_dim: the length of an agent's action (the pricing game: its periods).
        budget: candidates per agent at most (0: skip the verification; None: the
            converged search's cap, or :func:`default_verify_budget` for a fixed budget).
        grid: uniform levels the search tries (None: 7).
        seeds: seeds the gains are re-evaluated on.
        search_seeds: seeds each candidate is scored on, capped at ``seeds``.
        search: the search's preset name (default ``"converged"``).
        resolution: the converged search's last step as a share of the range.
        held_out: search on seeds after ``seeds`` (default), not on the first of them.

    Returns:
        The :class:`VerificationPlan`.

    Raises:
        ValueError: ``seeds`` or ``search_seeds`` below 1 (``budget=0`` skips the
            verification instead), raised before any training.

    Example:
        >>> plan = verification_plan(8, search_seeds=8, search="budget")
        >>> plan.budget, plan.search_seeds
        (25, 4)
    """
    for name, value in (("seeds", seeds), ("search_seeds", search_seeds)):
        if value < 1:
            raise ValueError(
                f"`{name}` must be >= 1 (budget=0 skips the verification), got {value!r}"
            )
    grid = 7 if grid is None else grid
    if budget is None and search == "budget":
        budget = default_verify_budget(action_dim, grid)
    return VerificationPlan(
        budget=budget,
        grid=grid,
        seeds=seeds,
        search_seeds=min(search_seeds, seeds),
        search=search,
        resolution=resolution,
        held_out=held_out,
    )
