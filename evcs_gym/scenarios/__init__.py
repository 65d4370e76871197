"""The bundled scenarios and their loader: a folder of CSV/JSON files -> NetworkData.

The data folders (``tiny/``, ``siouxfalls/``, ``berlin_friedrichshain/``, ``anaheim/``,
with ``SOURCE.md`` and ``LICENSES.md``) sit beside the code that reads them:

* :mod:`~evcs_gym.scenarios.loader`: :func:`load_scenario`, validation and preparation
  (route sets, warm start);
* :mod:`~evcs_gym.scenarios.cache`: the on-disk cache of preparations;
* :mod:`~evcs_gym.scenarios.setting_docs`: every setting with its value and meaning
  (``evcs-gym settings``);
* :mod:`~evcs_gym.scenarios.references`: a game's Nash and collusive reference profiles.
"""

from __future__ import annotations

from evcs_gym.scenarios.cache import PreparationCache, default_cache
from evcs_gym.scenarios.loader import available_scenarios, load_scenario, scenario_folder
from evcs_gym.scenarios.references import References, load_references
from evcs_gym.scenarios.setting_docs import scenario_settings, setting_docs, settings_table

__all__ = [
    "PreparationCache",
    "References",
    "available_scenarios",
    "default_cache",
    "load_references",
    "load_scenario",
    "scenario_folder",
    "scenario_settings",
    "setting_docs",
    "settings_table",
]
