"""evcs-gym: electric-vehicle charging-station pricing games on a simulated road network.

The layers, each usable alone::

    load_scenario()            -> NetworkData          (plain data, route sets precomputed)
    EVCSRewardEvaluator        prices + seed -> EvalResult  (UE-DTA on UXsim's C++ engine)
    ParallelEvaluatorPool      the same, on worker processes or Ray actors
    parallel_env() / env()     the one-step game (PettingZoo parallel / AEC)
    gym.make("EVCSPricing-v0") single-agent views (joint pricing, one station's best response)
    evcs_gym.wrappers          HistoryWrapper (repeated game), RescaleActions, vector env
    evcs_gym.baselines         MADDPG / IDDPG / MFDDPG, GameTrainer, exploitability, solver

Example:
    >>> import evcs_gym
    >>> nd = evcs_gym.load_scenario("tiny")
    >>> res = evcs_gym.EVCSRewardEvaluator(nd).evaluate({"A": [1.0] * 4, "B": [1.5] * 4})
    >>> res.rewards["A"] > res.rewards["B"]
    True
"""

from __future__ import annotations

from evcs_gym import _moved
from evcs_gym._version import __version__
from evcs_gym.envs import EVCSPricingEnv, EVCSPricingParallelEnv, env, parallel_env
from evcs_gym.envs.registration import register_envs
from evcs_gym.errors import (
    BatchEvaluationError,
    DependencyNotInstalled,
    EVCSGymError,
    PoolClosedError,
    PriceError,
    ScenarioError,
    WorkerCrashedError,
)
from evcs_gym.network import NetworkData, ScenarioSettings, StationOverride
from evcs_gym.parallel import ParallelEvaluatorPool
from evcs_gym.scenarios import available_scenarios, load_scenario
from evcs_gym.ue import EvalResult, EVCSRewardEvaluator, SeedAverage, uniform_prices

_moved.install()  # the 0.2.0 module paths, deprecated
register_envs()  # gym.make("EVCSPricing-v0") / gym.make("evcs_gym:EVCSPricing-v0")

__all__ = [
    "BatchEvaluationError",
    "DependencyNotInstalled",
    "EVCSGymError",
    "EVCSPricingEnv",
    "EVCSPricingParallelEnv",
    "EVCSRewardEvaluator",
    "EvalResult",
    "NetworkData",
    "ParallelEvaluatorPool",
    "PoolClosedError",
    "PriceError",
    "ScenarioError",
    "ScenarioSettings",
    "SeedAverage",
    "StationOverride",
    "WorkerCrashedError",
    "__version__",
    "available_scenarios",
    "env",
    "load_scenario",
    "parallel_env",
    "uniform_prices",
]
