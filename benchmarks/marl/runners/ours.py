"""evcs-gym's MADDPG / IDDPG / MFDDPG, trained by :class:`~evcs_gym.baselines.GameTrainer`.

EVCS tasks run ``evcs-gym train`` (the CLI's settings and the game's recipe, its
verification and run folder); the other tasks train through
:class:`~evcs_gym.baselines.SerialVecEnv` with the settings of :data:`EPISODIC`, which
differ from the stage-game defaults only where an episodic task needs it (discounting,
a larger replay warm-up and batch, constant exploration).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from marl.evaluation import evaluate_returns
from marl.runners.common import Trained, evcs_score, verify_argv, verify_options
from marl.tasks import Task, make_env

NUM_ENVS = 4
"""Env copies stepped per iteration on the episodic tasks (one learning step each)."""

EPISODIC: dict[str, Any] = {
    "gamma": 0.95,
    "batch_size": 256,
    "learning_starts": 1000,
    "noise_std": 0.1,
    "noise_decay": 1.0,
    "noise_min": 0.1,
    "updates_per_learn": 1,
    "random_warmup": 0,  # measured before the stage-game default of 128 rows existed
}
"""Config overrides on the episodic (non-EVCS) tasks; everything else is the default."""


def run_evcs(algorithm: str, task: Task, seed: int, budget: int, smoke: bool) -> Trained:
    from evcs_gym.cli import main as cli

    verify = verify_options(task.config["scenario"], smoke)
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "train",
            "--scenario", task.config["scenario"],
            "--algo", algorithm,
            "--budget", str(budget),
            "--rounds", str(task.rounds or 0),
            "--seed", str(seed),
            *verify_argv(verify),
            "--workers", "2",
            "--out", out,
            "--quiet",
        ]  # fmt: skip
        if cli(argv) != 0:
            raise RuntimeError(f"evcs-gym {' '.join(argv)} failed")
        summary = json.loads((Path(out) / "summary.json").read_text())
    return Trained(
        env_steps=summary["evaluations"],
        score=evcs_score(summary["verified_exploitability"], task.config["scenario"]),
        settings={
            "command": "evcs-gym " + " ".join(argv[:-3]),
            "recipe": (summary.get("recipe") or {}).get("source"),  # the game's, or None
            "learner_config": summary.get("learner_config"),
        },
    )


def run_episodic(algorithm: str, task: Task, seed: int, budget: int) -> Trained:
    from evcs_gym.baselines import ALGORITHMS, GameTrainer, SerialVecEnv, TrainerConfig
    from evcs_gym.baselines.recipe import make_learner

    venv = SerialVecEnv([lambda: make_env(task)] * NUM_ENVS)
    try:
        cls = ALGORITHMS[algorithm]
        config = cls.config_cls(seed=seed, **EPISODIC)
        algo = make_learner(cls, venv, config)
        trainer = GameTrainer(
            venv,
            algo,
            # no mid-run checkpoints: the critic NashConv is for stage games
            TrainerConfig(budget=budget, check_every=10**9, seed=seed, progress=False),
        )
        result = trainer.train()
    finally:
        venv.close()

    def act(obs):
        batch = {a: np.asarray(o, dtype=np.float32)[None] for a, o in obs.items()}
        return {a: v[0] for a, v in algo.get_pure_actions(batch).items()}

    returns = evaluate_returns(lambda: make_env(task), act)
    return Trained(
        env_steps=result.evaluations,
        score={"return": returns},
        settings={"num_envs": NUM_ENVS, **EPISODIC},
    )
