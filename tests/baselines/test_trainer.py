"""GameTrainer through the real vector env (tiny) and on MPE2 (any ParallelEnv), and the
:class:`TrainResult` its ``train()`` returns."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import typing

import numpy as np
import pytest
import torch

from evcs_gym.baselines import (
    ALGORITHMS,
    GameTrainer,
    MADDPGConfig,
    SerialVecEnv,
    TrainerConfig,
    TrainResult,
)
from evcs_gym.equilibrium import exploitability


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["maddpg", "mfddpg"])
def test_trainer_runs_on_tiny_through_the_vector_env_and_writes_outputs(name, tmp_path):
    from evcs_gym.wrappers import make_vector_env

    with make_vector_env(2, scenario="tiny", rounds=5, n_workers=2) as venv:
        obs_spaces = {a: venv.observation_space(a) for a in venv.possible_agents}
        act_spaces = {a: venv.action_space(a) for a in venv.possible_agents}
        algo = ALGORITHMS[name](
            obs_spaces, act_spaces, MADDPGConfig(seed=1, batch_size=8, learning_starts=8)
        )

        def verifier(prices):
            return exploitability(venv.pool, prices, seed=0, budget=3, grid=2).to_dict()

        trainer = GameTrainer(
            venv,
            algo,
            TrainerConfig(budget=24, check_every=4, progress=False),
            verifier=verifier,
        )
        summary = trainer.train()
        assert isinstance(summary, TrainResult)
        assert summary.evaluations == 24
        final = trainer.evaluate_pure(1)
        cert = trainer.verify(final.last_pure_actions)
        assert cert["relative_nash_conv"] >= 0
        paths = trainer.save_outputs(tmp_path, summary)
    for f in [
        "evaluations.csv",
        "checkpoints.csv",
        "summary.json",
        "weights.pt",
        "prices.png",
        "revenues.png",
        "nashconv.png",
        "ue_iterations.png",
    ]:
        assert (tmp_path / f).stat().st_size > 0, f
    rows = (tmp_path / "evaluations.csv").read_text().splitlines()
    # one row per evaluation x station x period (24 training + 2 evaluation rollouts)
    assert len(rows) == 1 + (24 + 2) * 2 * 4
    data = json.loads(paths["summary"].read_text())
    assert data["seed"] == 0 and "versions" in data
    # summary.json is the result's dict, then the files written
    assert data == {**json.loads(json.dumps(summary.to_dict())), "files": data["files"]}
    assert data["algorithm"] == name and data["evaluations"] == 24
    assert data["config"] == dataclasses.asdict(trainer.config)
    assert set(data["final_pure_prices"]) == set(trainer.agents)
    kinds = {r.kind for r in trainer.history.evaluations}
    assert kinds == {"train", "eval"}


@pytest.mark.timeout(300)
def test_trainer_and_algorithms_work_on_an_mpe2_env():
    from mpe2 import simple_spread_v3

    def make():
        return simple_spread_v3.parallel_env(N=2, max_cycles=10, continuous_actions=True)

    venv = SerialVecEnv([make, make])
    for name, cls in ALGORITHMS.items():
        algo = cls.from_env(make(), MADDPGConfig(seed=0, batch_size=16, learning_starts=16))
        trainer = GameTrainer(venv, algo, TrainerConfig(budget=60, check_every=5, progress=False))
        summary = trainer.train()
        assert summary.evaluations == 60, name
        assert len(trainer.history.checkpoints) >= 5
        assert np.isfinite(trainer.history.checkpoints[-1].critic_nash_conv)
    venv.close()


def test_trainer_rejects_bad_config():
    from mpe2 import simple_spread_v3

    make = lambda: simple_spread_v3.parallel_env(N=2, max_cycles=5, continuous_actions=True)  # noqa: E731
    venv = SerialVecEnv([make])
    algo = ALGORITHMS["iddpg"].from_env(make())
    with pytest.raises(ValueError, match="`budget` must be >= 1, got 0"):
        GameTrainer(venv, algo, TrainerConfig(budget=0))


def _mpe2_trainer(budget: int, **config) -> GameTrainer:
    from mpe2 import simple_spread_v3

    make = lambda: simple_spread_v3.parallel_env(N=2, max_cycles=5, continuous_actions=True)  # noqa: E731
    venv = SerialVecEnv([make, make])
    algo = ALGORITHMS["maddpg"].from_env(make(), MADDPGConfig(batch_size=8, learning_starts=8))
    return GameTrainer(venv, algo, TrainerConfig(budget=budget, progress=False, **config))


def test_train_returns_a_frozen_train_result_whose_dict_is_the_summary():
    trainer = _mpe2_trainer(16, check_every=2, seed=3)
    result = trainer.train()
    trainer.env.close()
    assert isinstance(result, TrainResult) and dataclasses.is_dataclass(result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.evaluations = 0  # type: ignore[misc]
    assert result.algorithm == "maddpg" and result.seed == 3
    assert (result.evaluations, result.iterations) == (16, 8)
    assert result.config == trainer.config and result.config is not trainer.config
    assert result.train_seconds > 0 and result.versions["evcs_gym"]
    assert set(result.final_pure_prices) == set(trainer.agents)
    assert all(isinstance(v, list) for v in result.final_pure_prices.values())
    assert result.critic_nash_conv == trainer.history.checkpoints[-1].critic_nash_conv
    # the keys, values and order of the dict train() returned before 0.3.0
    out = result.to_dict()
    assert list(out) == [
        "algorithm", "config", "seed", "evaluations", "iterations", "converged",
        "noise_resets", "train_seconds", "versions", "final_pure_prices", "critic_nash_conv",
    ]  # fmt: skip
    assert out == dataclasses.asdict(result)
    assert out["config"] == dataclasses.asdict(trainer.config)
    json.dumps(out)  # JSON-ready


def test_a_run_without_a_checkpoint_has_no_final_prices_in_its_summary(tmp_path):
    trainer = _mpe2_trainer(1)  # below one iteration of two copies: nothing is trained
    result = trainer.train()
    trainer.env.close()
    assert result.evaluations == 0 and result.final_pure_prices is None
    assert result.critic_nash_conv is None
    assert "final_pure_prices" not in result.to_dict()
    assert "critic_nash_conv" not in result.to_dict()
    assert dataclasses.asdict(result)["final_pure_prices"] is None


def test_every_train_result_field_is_typed_and_documented():
    hints = typing.get_type_hints(TrainResult)
    fields = [f.name for f in dataclasses.fields(TrainResult)]
    assert fields and set(fields) <= set(hints)
    body = ast.parse(inspect.getsource(TrainResult)).body[0].body
    documented = {
        node.target.id
        for node, after in zip(body, body[1:])
        if isinstance(node, ast.AnnAssign)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }
    assert documented == set(fields)
