"""The dynamic user equilibrium: prices + seed -> rewards, flows, UE statistics.

* :mod:`~evcs_gym.ue.evaluator`: :class:`EVCSRewardEvaluator`, the UE loop;
* :mod:`~evcs_gym.ue.result`: what it returns, :class:`EvalResult` with its typed
  :class:`UEStats`;
* :mod:`~evcs_gym.ue.simulation`: one UXsim (C++ engine) simulation of a route assignment;
* :mod:`~evcs_gym.ue.costs`: route costs of every platoon from the simulated travel times;
* :mod:`~evcs_gym.ue.switching`: which platoons move to a cheaper route each iteration;
* :mod:`~evcs_gym.ue.stopping`: when the loop stops, and the payoff it answers;
* :mod:`~evcs_gym.ue.stationary`: the stationary mean of a loop's trace and its SE;
* :mod:`~evcs_gym.ue.prices`: price mappings checked into an array;
* :mod:`~evcs_gym.ue.averaging`: one profile at several seeds, with standard errors.
"""

from __future__ import annotations

from evcs_gym.ue.averaging import SeedAverage, standard_error
from evcs_gym.ue.evaluator import EVCSRewardEvaluator, GapStats, UETrace
from evcs_gym.ue.prices import price_matrix, uniform_prices
from evcs_gym.ue.result import EvalResult, GapSummary, UEStats

__all__ = [
    "EVCSRewardEvaluator",
    "EvalResult",
    "GapStats",
    "GapSummary",
    "SeedAverage",
    "UEStats",
    "UETrace",
    "price_matrix",
    "standard_error",
    "uniform_prices",
]
