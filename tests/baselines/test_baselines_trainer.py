"""GameTrainer through the real vector env (tiny) and on MPE2 (any ParallelEnv)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from evcs_gym.baselines import ALGORITHMS, GameTrainer, MADDPGConfig, SerialVecEnv, TrainerConfig
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
        assert summary["evaluations"] == 24
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
        assert summary["evaluations"] == 60, name
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
