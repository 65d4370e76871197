"""Every public name of 0.2.0 still imports, and its module paths are deprecated aliases.

The package was reorganised into rooms by role in 0.3.0 (``evcs_gym._moved``); users'
code written against 0.2.0 must keep working.
"""

from __future__ import annotations

import importlib
import pickle
import sys
import warnings

import pytest

import evcs_gym
from evcs_gym._moved import MOVED_MODULES

PUBLIC_0_2_0 = {
    "evcs_gym": [
        "BatchEvaluationError", "DependencyNotInstalled", "EVCSGymError", "EVCSPricingEnv",
        "EVCSPricingParallelEnv", "EVCSRewardEvaluator", "EvalResult", "NetworkData",
        "ParallelEvaluatorPool", "PoolClosedError", "PriceError", "ScenarioError",
        "ScenarioSettings", "SeedAverage", "StationOverride", "WorkerCrashedError",
        "__version__", "available_scenarios", "env", "load_scenario", "parallel_env",
        "uniform_prices",
    ],
    "evcs_gym.wrappers": [
        "EVCSVectorEnv", "HistoryCore", "HistoryWrapper", "NumericInfo", "RescaleActions",
        "SingleAgentView", "make_vector_env",
    ],
    "evcs_gym.baselines": [
        "ALGORITHMS", "Actor", "Algorithm", "Batch", "Critic", "CriticFn", "GameHistory",
        "GameTrainer", "GaussianNoise", "IDDPG", "IDDPGConfig", "MADDPG", "MADDPGConfig",
        "MFDDPG", "MFDDPGConfig", "NashConvChecker", "NashConvResult", "ReplayBuffer",
        "SerialVecEnv", "TrainerConfig", "mlp", "polyak_update", "torch_seeded",
    ],
    "evcs_gym.envs": [
        "ENV_ID", "EVCSPricingEnv", "EVCSPricingParallelEnv", "EvaluatorLike", "PendingStep",
        "env", "parallel_env", "raw_env", "register_envs",
    ],
}  # fmt: skip
MOVED_FROM_BASELINES = [
    "BestResponseDynamics", "ExploitabilityResult", "SolverResult", "add_verification_arguments",
    "exploitability", "format_prices", "verify_from_args", "verify_prices",
]  # fmt: skip


@pytest.mark.parametrize(
    "module, name", [(m, n) for m, names in PUBLIC_0_2_0.items() for n in names]
)
def test_public_names_of_0_2_0_import_without_warning(module, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(importlib.import_module(module), name) is not None


@pytest.mark.parametrize("name", MOVED_FROM_BASELINES)
def test_equilibrium_names_from_baselines_warn_and_are_the_new_objects(name):
    baselines = importlib.import_module("evcs_gym.baselines")
    with pytest.warns(DeprecationWarning, match=f"evcs_gym.equilibrium.{name}"):
        old = getattr(baselines, name)
    assert old is getattr(importlib.import_module("evcs_gym.equilibrium"), name)


def test_an_unknown_baselines_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        importlib.import_module("evcs_gym.baselines").no_such_name  # noqa: B018


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_old_module_paths_warn_and_give_the_moved_module(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported before: import it anew
    with pytest.warns(DeprecationWarning, match=f"`{old}` moved to `{new}`"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_a_result_pickled_under_an_old_class_path_loads():
    """Pickles written by 0.2.0 name ``evcs_gym.evaluator.EvalResult`` (same length as
    ``evcs_gym.ue.result``, so the bytes can be swapped in place)."""
    nd = evcs_gym.load_scenario("tiny")
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(evcs_gym.uniform_prices(nd.agent_names, 4, 1))
    data = pickle.dumps(res).replace(b"evcs_gym.ue.result", b"evcs_gym.evaluator")
    assert b"evcs_gym.evaluator" in data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # shown once, by the import above
        assert pickle.loads(data) == res
