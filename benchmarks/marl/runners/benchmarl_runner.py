"""BenchMARL MADDPG / IDDPG / MASAC / MAPPO through BenchMARL's own ``Experiment``.

* EVCS tasks run ``examples/benchmarl_pricing.py`` (``EVCSTask``; its settings and the
  reasons for them are in that example's docstring), with ``--parallel`` on the road
  networks.
* VMAS ``navigation`` is BenchMARL's own ``VmasTask.NAVIGATION``.
* MPE2 ``simple_spread``: BenchMARL's ``PettingZooTask.SIMPLE_SPREAD`` builds TorchRL's
  ``PettingZooEnv``, which in torchrl 0.11 imports ``pettingzoo.mpe`` (moved out of
  PettingZoo into the ``mpe2`` package), so :class:`MPE2Class` is that task with the env
  built from ``mpe2`` through TorchRL's ``PettingZooWrapper``; everything else is
  BenchMARL's ``PettingZooClass``.

On the non-EVCS tasks the experiment keeps BenchMARL's defaults (its yaml files) except:
the frame budget; batches shrunk only where the budget is smaller than 8 default batches
(:func:`experiment_config`); BenchMARL's own evaluation and loggers off (every library is
scored by :func:`marl.evaluation.evaluate_returns`); CPU.
"""

from __future__ import annotations

import importlib
import tempfile
from typing import Any

import numpy as np
from benchmarl.environments.pettingzoo.common import PettingZooClass
from torchrl.envs import PettingZooWrapper

from marl.evaluation import evaluate_returns
from marl.runners.common import Trained, load_example, run_example, spread_over_cores
from marl.tasks import Task, make_env

DEFAULT_BATCH = 6000
"""BenchMARL's frames per collection, off- and on-policy (``conf/experiment/base``)."""


def run_evcs(algorithm: str, task: Task, seed: int, budget: int, smoke: bool) -> Trained:
    # BenchMARL steps a SerialEnv on one core otherwise (--parallel: the same evaluations)
    extra = ["--parallel"] if spread_over_cores(task, smoke) else []
    return run_example(
        "benchmarl_pricing", algorithm, task, seed, budget, smoke, task.rounds, extra
    )


class MPE2Class(PettingZooClass):
    """BenchMARL's PettingZoo MPE task with the env from ``mpe2`` (see the module docstring)."""

    def get_env_fun(self, num_envs, continuous_actions, seed, device):
        config = dict(self.config)
        module = importlib.import_module(f"mpe2.{config.pop('task')}")
        return lambda: PettingZooWrapper(
            module.parallel_env(continuous_actions=continuous_actions, **config),
            categorical_actions=True,
            device=device,
            seed=seed,
            return_state=self.has_state(),
        )


def mpe2_task(task: Task) -> MPE2Class:
    """BenchMARL's ``simple_spread`` task (same config keys) with its env from ``mpe2``."""
    config = {"task": "simple_spread_v3", "local_ratio": 0.5, **task.config}
    return MPE2Class(name="SIMPLE_SPREAD", config=config)


def experiment_config(budget: int) -> Any:
    """BenchMARL's experiment defaults with the frame budget (see the module docstring)."""
    from benchmarl.experiment import ExperimentConfig

    cfg = ExperimentConfig.get_from_yaml()
    cfg.sampling_device = cfg.train_device = cfg.buffer_device = "cpu"
    cfg.max_n_frames = budget
    cfg.max_n_iters = None
    # at least 8 collections in the run: shrink batch and updates together below that
    scale = min(1.0, budget / (8 * DEFAULT_BATCH))
    if scale < 1.0:
        frames = max(20, int(DEFAULT_BATCH * scale))
        cfg.off_policy_collected_frames_per_batch = frames
        cfg.off_policy_n_optimizer_steps = max(1, int(cfg.off_policy_n_optimizer_steps * scale))
        cfg.off_policy_n_envs_per_worker = min(cfg.off_policy_n_envs_per_worker, frames // 2)
        cfg.off_policy_train_batch_size = min(cfg.off_policy_train_batch_size, frames)
        cfg.on_policy_collected_frames_per_batch = frames
        cfg.on_policy_n_envs_per_worker = min(cfg.on_policy_n_envs_per_worker, frames // 2)
        cfg.on_policy_minibatch_size = min(cfg.on_policy_minibatch_size, frames)
    cfg.evaluation = False
    cfg.render = False
    cfg.loggers = []
    cfg.create_json = False
    cfg.checkpoint_interval = 0
    cfg.checkpoint_at_end = False
    return cfg


def run_episodic(algorithm: str, task: Task, seed: int, budget: int) -> Trained:
    import torch
    from benchmarl.environments import VmasTask
    from benchmarl.experiment import Experiment
    from benchmarl.models.mlp import MlpConfig
    from tensordict import TensorDict
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    example = load_example("benchmarl_pricing")  # its table of algorithm configs
    torch.set_num_threads(1)
    if task.env == "vmas":
        bench_task = VmasTask[task.name.upper()].get_task(
            {**task.config, "max_steps": task.max_steps}
        )
    else:
        bench_task = mpe2_task(task)
    cfg = experiment_config(budget)
    with tempfile.TemporaryDirectory() as folder:
        cfg.save_folder = folder
        experiment = Experiment(
            task=bench_task,
            algorithm_config=example.ALGORITHMS[algorithm].get_from_yaml(),
            model_config=MlpConfig.get_from_yaml(),
            critic_model_config=None,
            seed=seed,
            config=cfg,
        )
        experiment.run()
    policy, groups = experiment.policy, experiment.group_map

    def act(obs):
        td = TensorDict(
            {
                g: TensorDict(
                    {"observation": torch.as_tensor(np.stack([obs[a] for a in agents]))},
                    batch_size=[len(agents)],
                )
                for g, agents in groups.items()
            },
            batch_size=[],
        )
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            out = policy(td)
        return {
            a: out[g, "action"][i].numpy()
            for g, agents in groups.items()
            for i, a in enumerate(agents)
        }

    returns = evaluate_returns(lambda: make_env(task), act)
    return Trained(
        env_steps=int(experiment.total_frames),
        score={"return": returns},
        settings={
            "frames_per_batch": cfg.off_policy_collected_frames_per_batch
            if algorithm != "mappo"
            else cfg.on_policy_collected_frames_per_batch,
            "n_optimizer_steps": cfg.off_policy_n_optimizer_steps,
            "iterations": experiment.n_iters_performed,
        },
    )
