"""The 0.2.0 module paths, kept as deprecated aliases of the modules' new homes.

evcs-gym 0.3.0 groups its modules in folders by role (``network/``, ``ue/``,
``scenarios/``, ``parallel/``, ``studies/``, ``equilibrium/``). Code that imports an old
path, ``from evcs_gym.evaluator import EvalResult`` say, still works: it gets the module
at its new home (the same module object, so classes compare and pickle alike) and a
``DeprecationWarning`` naming the new path.

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     from evcs_gym.evaluator import EVCSRewardEvaluator
    >>> import evcs_gym.ue.evaluator
    >>> EVCSRewardEvaluator is evcs_gym.ue.evaluator.EVCSRewardEvaluator
    True
    >>> MOVED_MODULES["evcs_gym.evaluator"]
    'evcs_gym.ue.evaluator'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import FrameType, ModuleType

__all__ = ["MOVED_MODULES", "install"]

MOVED_MODULES: dict[str, str] = {
    "evcs_gym.settings": "evcs_gym.network.settings",
    "evcs_gym.routes": "evcs_gym.network.routes",
    "evcs_gym.demand": "evcs_gym.network.demand",
    "evcs_gym.evaluator": "evcs_gym.ue.evaluator",
    "evcs_gym.simulation": "evcs_gym.ue.simulation",
    "evcs_gym.costs": "evcs_gym.ue.costs",
    "evcs_gym.switching": "evcs_gym.ue.switching",
    "evcs_gym.stopping": "evcs_gym.ue.stopping",
    "evcs_gym.stationary": "evcs_gym.ue.stationary",
    "evcs_gym.prices": "evcs_gym.ue.prices",
    "evcs_gym.averaging": "evcs_gym.ue.averaging",
    "evcs_gym.scenario": "evcs_gym.scenarios.loader",
    "evcs_gym.cache": "evcs_gym.scenarios.cache",
    "evcs_gym.setting_docs": "evcs_gym.scenarios.setting_docs",
    "evcs_gym.pool": "evcs_gym.parallel.pool",
    "evcs_gym.convergence": "evcs_gym.studies.convergence",
    "evcs_gym.baselines.evaluation": "evcs_gym.equilibrium.evaluation",
    "evcs_gym.baselines.deviation_search": "evcs_gym.equilibrium.deviation_search",
    "evcs_gym.baselines.exploitability": "evcs_gym.equilibrium.exploitability",
    "evcs_gym.baselines.best_response": "evcs_gym.equilibrium.best_response",
    "evcs_gym.baselines.verification": "evcs_gym.equilibrium.verification",
}
"""Old module path -> the module's path since 0.3.0."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED_MODULES` and loads them as the new modules."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"`{spec.name}` moved to `{new}` in evcs-gym 0.3.0; import it from there "
            "(the old path will be removed)",
            DeprecationWarning,
            stacklevel=_importer_stacklevel(),
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new path."""


def _importer_stacklevel() -> int:
    """The stack level of the frame that wrote the import (past importlib's own frames)."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame, level = frame.f_back, level + 1
    return level


def install() -> None:
    """Put the finder on :data:`sys.meta_path` (once; done by ``import evcs_gym``)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
