"""evcs-gym: electric-vehicle charging-station pricing games on a simulated road network.

The layers, each usable alone::

    load_scenario()            -> NetworkData          (plain data, route sets precomputed)
    EVCSRewardEvaluator        prices + seed -> EvalResult  (UE-DTA on UXsim's C++ engine)

Example:
    >>> import evcs_gym
    >>> nd = evcs_gym.load_scenario("tiny")
    >>> res = evcs_gym.EVCSRewardEvaluator(nd).evaluate({"A": [1.0] * 4, "B": [1.5] * 4})
    >>> res.rewards["A"] > res.rewards["B"]
    True
"""

from __future__ import annotations

from evcs_gym.errors import (
    DependencyNotInstalled,
    EVCSGymError,
    PoolClosedError,
    PriceError,
    ScenarioError,
    WorkerCrashedError,
)
from evcs_gym.evaluator import EvalResult, EVCSRewardEvaluator
from evcs_gym.network import NetworkData
from evcs_gym.prices import uniform_prices
from evcs_gym.scenario import available_scenarios, load_scenario
from evcs_gym.settings import ScenarioSettings, StationOverride

__version__ = "0.1.0"

__all__ = [
    "DependencyNotInstalled",
    "EVCSGymError",
    "EVCSRewardEvaluator",
    "EvalResult",
    "NetworkData",
    "PoolClosedError",
    "PriceError",
    "ScenarioError",
    "ScenarioSettings",
    "StationOverride",
    "WorkerCrashedError",
    "__version__",
    "available_scenarios",
    "load_scenario",
    "uniform_prices",
]
