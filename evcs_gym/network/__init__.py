"""The road network as plain data: settings, links and platoons, route sets, demand.

* :mod:`~evcs_gym.network.settings`: :class:`ScenarioSettings`, every knob of a game;
* :mod:`~evcs_gym.network.data`: :class:`NetworkData`, the picklable scenario every
  evaluation runs on (link table, platoons, route sets, warm start);
* :mod:`~evcs_gym.network.routes`: the k shortest routes per OD pair and class;
* :mod:`~evcs_gym.network.demand`: demand rows split into whole platoons.

Nothing here simulates: the UE that runs on this data lives in :mod:`evcs_gym.ue`.
"""

from __future__ import annotations

from evcs_gym.network.data import LINK_CHARGING, LINK_CONNECTOR, LINK_ROAD, LinkTable, NetworkData
from evcs_gym.network.settings import ScenarioSettings, StationOverride

__all__ = [
    "LINK_CHARGING",
    "LINK_CONNECTOR",
    "LINK_ROAD",
    "LinkTable",
    "NetworkData",
    "ScenarioSettings",
    "StationOverride",
]
