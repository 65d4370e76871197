"""evcs-gym: electric-vehicle charging-station pricing games on a simulated road network.

The layers, each usable alone, and the room (sub-package) that holds each::

    load_scenario()            -> NetworkData          scenarios/, network/
    EVCSRewardEvaluator        prices + seed -> EvalResult  (UE-DTA on UXsim)   ue/
    ParallelEvaluatorPool      the same, on worker processes or Ray actors      parallel/
    parallel_env() / env()     the one-step game (PettingZoo parallel / AEC)    envs/
    gym.make("EVCSPricing-v0") single-agent views (joint pricing, best response) envs/
    evcs_gym.wrappers          HistoryWrapper (repeated game), DiscretePrices, vector env, ...
    evcs_gym.equilibrium       verified exploitability, the reference solver
    evcs_gym.tabular           price grids, payoff tables of the grid game, Calvano's logit market
    evcs_gym.baselines         MADDPG / IDDPG / MFDDPG, GameTrainer, recipes, tabular Q-learning
    evcs_gym.cli               ``evcs-gym <command>``, one module per command

A module imports only from the layers below its own (pyproject's ``[tool.importlinter]``,
checked in CI).

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
