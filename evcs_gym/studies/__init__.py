"""Studies of the payoff itself: does an evaluation's answer depend on how the UE ran?

* :mod:`~evcs_gym.studies.convergence`: revenues under the default UE against a free-flow
  start and a doubled cap, at several seeds (``evcs-gym convergence``).
"""

from __future__ import annotations

from evcs_gym.studies.convergence import ConvergenceStudy, convergence_study, study_profiles

__all__ = ["ConvergenceStudy", "convergence_study", "study_profiles"]
