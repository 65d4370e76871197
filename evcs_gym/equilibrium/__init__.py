"""The game's equilibrium tools: verified exploitability and the reference solver.

Everything here works on price profiles through an evaluator (:class:`BatchEvaluator`
over an :class:`~evcs_gym.EVCSRewardEvaluator` or a pool), never through a learner:

* :mod:`~evcs_gym.equilibrium.evaluation`: batched, seed-averaged evaluation of profiles;
* :mod:`~evcs_gym.equilibrium.deviation_search`: one station's best unilateral deviation;
* :mod:`~evcs_gym.equilibrium.exploitability`: NashConv of a profile, verified in the
  simulator (``evcs-gym exploit``);
* :mod:`~evcs_gym.equilibrium.best_response`: best-response dynamics, the reference
  equilibrium solver (``evcs-gym solve``);
* :mod:`~evcs_gym.equilibrium.certificate_descent`: a solver that minimises the
  certificate itself, where best responses wander (``evcs-gym solve --method descent``);
* :mod:`~evcs_gym.equilibrium.verification`: the verification report a training run
  ends with;
* :mod:`~evcs_gym.equilibrium.collusion`: the collusion index Δ of a profile between the
  game's Nash and collusive references.
"""

from __future__ import annotations

from evcs_gym.equilibrium.best_response import BestResponseDynamics, SolverResult
from evcs_gym.equilibrium.certificate_descent import CertificateDescent
from evcs_gym.equilibrium.collusion import CollusionIndex, collusion_index
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import (
    ExploitabilityResult,
    StationDeviation,
    best_response,
    exploitability,
)
from evcs_gym.equilibrium.verification import (
    add_verification_arguments,
    format_prices,
    verify_from_args,
    verify_prices,
)

__all__ = [
    "BatchEvaluator",
    "BestResponseDynamics",
    "CertificateDescent",
    "CollusionIndex",
    "ExploitabilityResult",
    "SolverResult",
    "StationDeviation",
    "add_verification_arguments",
    "best_response",
    "collusion_index",
    "exploitability",
    "format_prices",
    "verify_from_args",
    "verify_prices",
]
