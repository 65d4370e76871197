"""Parallel evaluation: the pool and its backends (local processes, or Ray across machines).

* :mod:`~evcs_gym.parallel.pool`: :class:`ParallelEvaluatorPool`, what users call;
* :mod:`~evcs_gym.parallel.backend`: the contract between the pool and a backend;
* :mod:`~evcs_gym.parallel.process_backend`: worker processes on this machine;
* :mod:`~evcs_gym.parallel.ray_backend`: Ray actors (imported only for ``backend="ray"``).
"""

from __future__ import annotations

from evcs_gym.parallel.pool import ParallelEvaluatorPool, usable_cpu_count

__all__ = ["ParallelEvaluatorPool", "usable_cpu_count"]
