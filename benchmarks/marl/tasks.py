"""The tasks of the MARL benchmark grid and how to build each as a PettingZoo ``ParallelEnv``.

Every task is a cooperative or general-sum multi-agent game with continuous (Box) actions:

* the pricing game on ``tiny`` and ``siouxfalls``, one-step (the stateless stage game) and
  repeated (10 rounds through :class:`~evcs_gym.wrappers.HistoryWrapper`); a step is one
  simulator evaluation, scored by the verified NashConv of the learned pure prices;
* MPE2 ``simple_spread_v3`` (3 agents, 25 steps, continuous actions), the classic MADDPG
  task;
* VMAS ``navigation`` (3 agents, 100 steps) with BenchMARL's task settings.

Budgets count environment steps of one env copy (a vectorised step of ``n`` copies is
``n`` steps), the same for every algorithm on a task.

Example:
    >>> from marl.tasks import TASKS, make_env
    >>> TASKS["simple_spread"].budget
    30000
    >>> env = make_env("simple_spread")
    >>> sorted(env.possible_agents)
    ['agent_0', 'agent_1', 'agent_2']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TASKS", "Task", "make_env", "resolve_tasks"]


@dataclass(frozen=True)
class Task:
    """One environment of the grid."""

    name: str
    """Name in the grid and in marl-eval's ``task_name``."""
    env: str
    """marl-eval's ``environment_name``: ``"evcs"``, ``"mpe2"`` or ``"vmas"``."""
    budget: int
    """Training budget in env steps (one copy's step; for EVCS, one evaluation)."""
    smoke_budget: int
    """The CI-sized budget."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """EVCS: ``scenario`` and ``rounds`` (None: one-step game); others: env kwargs."""
    max_steps: int = 1
    """Steps of one episode."""

    @property
    def is_evcs(self) -> bool:
        return self.env == "evcs"

    @property
    def is_market(self) -> bool:
        """A pricing game that ships Nash and collusive references (its cells report Δ)."""
        if not self.is_evcs:
            return False
        from evcs_gym.scenarios import scenario_folder

        folder = scenario_folder(self.config["scenario"])
        return (folder / f"{folder.name}_references.json").is_file()

    @property
    def rounds(self) -> int | None:
        return self.config.get("rounds") if self.is_evcs else None

    @property
    def unit(self) -> str:
        return "evaluations" if self.is_evcs else "env steps"


# BenchMARL's conf/task/vmas/navigation.yaml, so that its VmasTask and our adapter agree
VMAS_NAVIGATION = {
    "n_agents": 3,
    "collisions": True,
    "agents_with_same_goal": 1,
    "split_goals": False,
    "observe_all_goals": False,
    "shared_rew": False,
    "lidar_range": 0.35,
    "agent_radius": 0.1,
}

TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("tiny", "evcs", 600, 24, {"scenario": "tiny", "rounds": None}),
        Task("tiny_repeated", "evcs", 600, 24, {"scenario": "tiny", "rounds": 10}, 10),
        Task("siouxfalls", "evcs", 200, 8, {"scenario": "siouxfalls", "rounds": None}),
        Task(
            "siouxfalls_repeated",
            "evcs",
            200,
            8,
            {"scenario": "siouxfalls", "rounds": 10},
            10,
        ),
        Task("tiny_market", "evcs", 600, 24, {"scenario": "tiny_market", "rounds": None}),
        Task(
            "siouxfalls_market", "evcs", 200, 8, {"scenario": "siouxfalls_market", "rounds": None}
        ),
        Task("simple_spread", "mpe2", 30_000, 400, {"N": 3, "max_cycles": 25}, 25),
        Task("navigation", "vmas", 30_000, 400, dict(VMAS_NAVIGATION), 100),
    )
}
"""The grid's tasks by name."""


def resolve_tasks(names: list[str] | None) -> list[Task]:
    """``names`` (default: all) as :class:`Task` objects; unknown names raise ValueError."""
    if not names:
        return list(TASKS.values())
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known: {sorted(TASKS)}")
    return [TASKS[n] for n in names]


def make_env(task: Task | str, **overrides: Any) -> Any:
    """A fresh PettingZoo ``ParallelEnv`` of ``task`` (continuous actions).

    EVCS tasks accept :func:`evcs_gym.parallel_env` keyword ``overrides`` (e.g.
    ``eval_seed``); the others their env constructor's.
    """
    task = TASKS[task] if isinstance(task, str) else task
    if task.is_evcs:
        import evcs_gym
        from evcs_gym.wrappers import HistoryWrapper

        env = evcs_gym.parallel_env(scenario=task.config["scenario"], **overrides)
        return env if task.rounds is None else HistoryWrapper(env, task.rounds)
    if task.env == "mpe2":
        from mpe2 import simple_spread_v3

        return simple_spread_v3.parallel_env(
            continuous_actions=True, **{**task.config, **overrides}
        )
    if task.env == "vmas":
        from marl.vmas_env import VmasParallelEnv

        return VmasParallelEnv(
            task.name, **{"max_steps": task.max_steps, **task.config, **overrides}
        )
    raise ValueError(f"task {task.name!r} has an unknown environment {task.env!r}")
