"""Root pytest configuration: skip collecting modules whose optional library is missing.

``--doctest-modules`` imports every module under the test paths. A module that exists to
wrap an optional library (Ray; VMAS and BenchMARL in ``benchmarks/marl``) fails at import
when that library is absent; in an environment without it (e.g. ``nox -s oldest``) the
module is left out of collection rather than reported as an error. Tests that need the
library skip themselves with ``pytest.importorskip``.
"""

from __future__ import annotations

import importlib.util

OPTIONAL_MODULES = {
    "evcs_gym/parallel/ray_backend.py": "ray",
    "benchmarks/marl/vmas_env.py": "vmas",
    "benchmarks/marl/runners/benchmarl_runner.py": "benchmarl",
}

collect_ignore = [
    path for path, lib in OPTIONAL_MODULES.items() if importlib.util.find_spec(lib) is None
]
