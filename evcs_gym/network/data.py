"""NetworkData: the plain, picklable description of a scenario that evaluations run on.

Everything an evaluation needs lives here as numpy arrays and tuples — no UXsim
objects — so a NetworkData pickles cheaply to worker processes. It is built once by
:func:`evcs_gym.load_scenario` (route sets and the warm-start assignment included).

Links are indexed in one table, in the order they are added to the UXsim World:
road links first, then one charging self-loop per station, then virtual connector
links. Virtual nodes and links (``is_virtual``) model the trip end of charging
vehicles: they finish at a per-destination sink node behind a short connector, so a
charging route that passes its destination before the station is not cut short
(UXsim ends a trip the moment a vehicle reaches its destination node).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from evcs_gym.errors import ScenarioError
from evcs_gym.network.settings import STOP_SETTINGS, ScenarioSettings, convert_setting
from evcs_gym.utils import FieldwiseEquality

__all__ = ["LINK_CHARGING", "LINK_CONNECTOR", "LINK_ROAD", "LinkTable", "NetworkData"]

LINK_ROAD = 0
LINK_CHARGING = 1
LINK_CONNECTOR = 2


@dataclass(frozen=True, eq=False)
class LinkTable(FieldwiseEquality):
    """All links (road, charging, connector) as parallel arrays, in UXsim-id order."""

    names: tuple[str, ...]
    start: np.ndarray
    """Start node index (int64)."""
    end: np.ndarray
    """End node index (int64)."""
    length: np.ndarray
    """Length in m."""
    free_flow_speed: np.ndarray
    """Free-flow speed in m/s."""
    jam_density: np.ndarray
    """Jam density in veh/m (per lane)."""
    merge_priority: np.ndarray
    number_of_lanes: np.ndarray
    kind: np.ndarray
    """``LINK_ROAD``, ``LINK_CHARGING`` or ``LINK_CONNECTOR``."""
    station: np.ndarray
    """Agent index of a charging link, -1 for every other link."""

    def __len__(self) -> int:
        return len(self.names)

    @property
    def free_flow_time(self) -> np.ndarray:
        """Free-flow travel time of each link in s."""
        return self.length / self.free_flow_speed

    @property
    def is_virtual(self) -> np.ndarray:
        """True for modelling links that are not part of the road network (connectors)."""
        return self.kind == LINK_CONNECTOR


@dataclass(frozen=True, eq=False)
class NetworkData(FieldwiseEquality):
    """A loaded scenario: network, platoons, route sets and settings.

    Attributes are read-only; build instances with :func:`evcs_gym.load_scenario`.

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny")
        >>> nd.agent_names
        ('A', 'B')
        >>> nd.n_periods, nd.price_bounds["A"]
        (4, (0.5, 2.0))
    """

    name: str
    settings: ScenarioSettings
    node_names: tuple[str, ...]
    node_xy: np.ndarray
    """(n_nodes_total, 2) coordinates, for drawing."""
    node_is_virtual: np.ndarray
    links: LinkTable
    agent_names: tuple[str, ...]
    station_node: np.ndarray
    """Node index of each agent's station."""
    station_link: np.ndarray
    """Link index of each agent's charging link."""

    # demand rows as read (before discretisation); demanded vehicles per class
    demand_rows: np.ndarray
    """(n_rows, 5) float: orig index, dest index, start_t, end_t, q (multiplier applied)."""
    demanded_vehicles: dict[str, float]
    """{"charging": x, "non_charging": y}: demanded vehicle counts (not rounded)."""

    # platoons
    veh_orig: np.ndarray
    veh_dest: np.ndarray
    """Road destination node of each platoon (the sink is added for charging ones)."""
    veh_departure: np.ndarray
    veh_charging: np.ndarray
    veh_group: np.ndarray
    """Route-set group of each platoon: one group per (orig, dest, class)."""

    # route sets
    group_routes: np.ndarray
    """(n_groups, k) route ids of each group, padded with -1, sorted by free-flow time
    (with an outside option, ``charging_outside_cost``: (n_groups, 2k), a charging group's
    charging routes first, then its outside routes, each part so sorted)."""
    route_offsets: np.ndarray
    """CSR offsets into ``route_links`` (n_routes + 1)."""
    route_links: np.ndarray
    """Concatenated link indices of all routes (int32)."""
    route_free_flow_time: np.ndarray
    route_charging_link: np.ndarray
    """Charging link index of each route, -1 for non-charging routes."""
    route_charge_position: np.ndarray
    """Position of the charging link within the route, -1 for non-charging routes."""

    initial_route_choice: np.ndarray
    """Route id of each platoon at the start of every evaluation (the warm start)."""
    warm_start_info: dict
    """How ``initial_route_choice`` was computed (price, iterations, gap) or free-flow."""

    source: str = ""
    reference_traveltime: np.ndarray | None = None
    """(n_links, n_steps) link travel times (s) of the start's simulation — the reference
    equilibrium's when warm-started, ``None`` for a free-flow start (free-flow link
    times are used). The price-aware start costs routes at new prices on them."""
    reference_network_entry: np.ndarray | None = None
    """(n_platoons,) first-link entry times (s) in that simulation (``None``: departures)."""
    timings: dict = dataclasses.field(default_factory=dict, compare=False)
    """Wall-clock seconds spent at load time (``routes``, ``warm_start``), not compared.
    Loaded from the on-disk cache: ``cache_read`` (seconds to read the entry) and
    ``computed`` (the timings of the load that computed it)."""

    # ------------------------------------------------------------------ properties
    @property
    def route_seconds(self) -> float:
        """Seconds spent computing the route sets (by the load that computed them, when
        this one read them from the cache)."""
        timings = self.timings.get("computed", self.timings)
        return float(timings.get("routes", 0.0))

    @property
    def from_cache(self) -> bool:
        """Whether the route sets and warm start were read from the on-disk cache."""
        return "cache_read" in self.timings

    @property
    def free_flow_route_choice(self) -> np.ndarray:
        """Route id of each platoon on the first (free-flow shortest) route of its set: the
        start of a scenario loaded with ``warm_start=False``.

        Example:
            >>> import evcs_gym
            >>> nd = evcs_gym.load_scenario("tiny", warm_start=False)
            >>> bool((nd.free_flow_route_choice == nd.initial_route_choice).all())
            True
        """
        return self.group_routes[self.veh_group, 0]

    def with_stop_settings(self, **changes: Any) -> NetworkData:
        """This scenario with other stop settings (:data:`~evcs_gym.network.settings.STOP_SETTINGS`:
        the cap and the stationary stop), sharing its route sets and warm start.

        Every evaluation runs the same UE loop as before and only stops elsewhere, so
        nothing is prepared again. The settings hash changes: it names another payoff.
        ``evcs-gym train --train-payoffs fast`` trains on
        ``with_stop_settings(**FAST_STOP_SETTINGS)`` and measures the verified gains on
        the scenario itself.

        Raises:
            ScenarioError: a key that is not a stop setting (settings that steer the
                switching or the preparation need :func:`evcs_gym.load_scenario`), or a
                value out of range; the message names it.

        Example:
            >>> import evcs_gym
            >>> from evcs_gym.network.settings import FAST_STOP_SETTINGS
            >>> nd = evcs_gym.load_scenario("tiny")
            >>> fast = nd.with_stop_settings(**FAST_STOP_SETTINGS)
            >>> fast.settings.ue_payoff_min_iterations, fast.settings_hash != nd.settings_hash
            (10, True)
            >>> fast.initial_route_choice is nd.initial_route_choice
            True
        """
        source = f"{self.name}: with_stop_settings"
        other = sorted(set(changes) - set(STOP_SETTINGS))
        if other:
            raise ScenarioError(
                f"{source}: {other} are not stop settings (those are {list(STOP_SETTINGS)}); "
                "settings that steer the switching or the preparation need load_scenario"
            )
        values = {k: convert_setting(k, v, source) for k, v in changes.items()}
        settings = dataclasses.replace(self.settings, **values)
        settings.validate(source)
        return dataclasses.replace(self, settings=settings)

    @property
    def settings_hash(self) -> str:
        """Short hash of the effective settings (:attr:`ScenarioSettings.digest
        <evcs_gym.network.settings.ScenarioSettings.digest>`): which game a result was
        measured on."""
        return self.settings.digest

    @property
    def n_agents(self) -> int:
        return len(self.agent_names)

    @property
    def n_periods(self) -> int:
        return self.settings.charging_periods

    @property
    def price_bounds(self) -> dict[str, tuple[float, float]]:
        """Agent name -> (price_min, price_max) in currency per kWh."""
        return {a: self.settings.charging_nodes[a] for a in self.agent_names}

    @property
    def n_nodes(self) -> int:
        """Number of road-network nodes (virtual sink nodes excluded)."""
        return int((~self.node_is_virtual).sum())

    @property
    def n_links(self) -> int:
        """Road links plus charging links (virtual connectors excluded)."""
        return int((~self.links.is_virtual).sum())

    @property
    def n_platoons(self) -> int:
        return len(self.veh_departure)

    @property
    def n_routes(self) -> int:
        return len(self.route_free_flow_time)

    def route(self, route_id: int) -> list[str]:
        """Link names of one route.

        Example:
            >>> import evcs_gym
            >>> nd = evcs_gym.load_scenario("tiny")
            >>> nd.route(int(nd.group_routes[0, 0]))[:1]
            ['1-2']
        """
        lo, hi = self.route_offsets[route_id], self.route_offsets[route_id + 1]
        return [self.links.names[i] for i in self.route_links[lo:hi]]

    def simulated_vehicles(self) -> dict[str, int]:
        """Simulated vehicle counts per class (platoons × deltan)."""
        n = self.settings.deltan
        charging = int(self.veh_charging.sum())
        return {"charging": charging * n, "non_charging": (self.n_platoons - charging) * n}

    def summary(self) -> str:
        """One line describing the scenario and the game: the package version and
        :attr:`settings_hash` (every benchmark and command prints it, so that a result
        names the game it was measured on)."""
        from evcs_gym._version import __version__

        veh = self.simulated_vehicles()
        return (
            f"{self.name}: {self.n_nodes} nodes, {self.n_links} links "
            f"({self.n_agents} charging), {self.n_agents} stations, {self.n_periods} periods, "
            f"{veh['charging']} charging + {veh['non_charging']} other vehicles, "
            f"{self.n_routes} routes; evcs-gym {__version__}, settings {self.settings_hash}"
        )
