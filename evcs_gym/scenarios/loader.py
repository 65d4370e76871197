"""Scenario loading: a folder of CSV/JSON files -> validated :class:`NetworkData`.

A scenario folder ``<name>/`` holds ``<name>_nodes.csv`` (``name,x,y``),
``<name>_links.csv`` (``name,start,end,length,u,kappa,merge_priority``),
``<name>_demand.csv`` (``orig,dest,start_t,end_t,q``) and ``<name>_settings.json``.
A game on another scenario's network holds only its settings file, whose top-level
``"network_from"`` names the sibling folder that holds the three CSV files (the
``siouxfalls_market`` game reads ``siouxfalls/``). Bundled scenarios are found by name
(:func:`available_scenarios`); any other folder of that layout loads by path. Invalid
input raises :class:`~evcs_gym.errors.ScenarioError` naming the file, the row or key and
the value.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from evcs_gym.errors import ScenarioError
from evcs_gym.network import LINK_CHARGING, LINK_CONNECTOR, LINK_ROAD, LinkTable, NetworkData
from evcs_gym.network import demand as demand_mod
from evcs_gym.network import routes as routes_mod
from evcs_gym.network.settings import MAX_LINK_CELLS, ScenarioSettings, link_cells
from evcs_gym.scenarios import cache as cache_mod
from evcs_gym.utils import to_jsonable

__all__ = ["available_scenarios", "load_scenario", "scenario_folder"]

CONNECTOR_LENGTH = 100.0
"""Length (m) of the virtual connector from a destination to its charging-trip sink."""
CONNECTOR_SPEED = 20.0
"""Speed (m/s) on connectors: 5 s, the same for every charging route of an OD pair."""
CONNECTOR_LANES = 2
MAX_PLATOONS = 2_000_000
"""Largest demand a scenario may hold, in platoons (Anaheim has about 10,500)."""

_NODE_COLUMNS = ("name", "x", "y")
_LINK_COLUMNS = ("name", "start", "end", "length", "u", "kappa", "merge_priority")
_DEMAND_COLUMNS = ("orig", "dest", "start_t", "end_t", "q")


_PREPARATION_ROOMS = ("network", "ue", "scenarios")
"""The package's folders whose code a preparation runs (hashed into its cache key)."""


def _scenario_root() -> Path:
    return Path(str(resources.files("evcs_gym.scenarios")))


def available_scenarios() -> list[str]:
    """Names of the bundled scenarios.

    Example:
        >>> "siouxfalls" in available_scenarios()
        True
    """
    root = _scenario_root()
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}_settings.json").is_file())


def scenario_folder(name_or_folder: str | Path) -> Path:
    """Resolve a bundled scenario name or a folder path to the scenario folder."""
    candidate = Path(name_or_folder)
    if candidate.is_dir():
        return candidate.resolve()
    bundled = _scenario_root() / str(name_or_folder)
    if bundled.is_dir():
        return bundled
    raise ScenarioError(
        f"scenario {str(name_or_folder)!r} is neither a bundled scenario "
        f"{available_scenarios()} nor an existing folder"
    )


# --------------------------------------------------------------------------- cache
_CACHE: OrderedDict[tuple, NetworkData] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def load_scenario(
    name_or_folder: str | Path = "siouxfalls",
    *,
    warm_start: bool = True,
    cache: bool = True,
    **overrides: Any,
) -> NetworkData:
    """Load a scenario by bundled name or folder path.

    Args:
        name_or_folder: ``"siouxfalls"``, ``"berlin_friedrichshain"``, ``"anaheim"``,
            ``"tiny"``, or the path of a folder in the scenario layout.
        warm_start: compute once, now, the user equilibrium at the uniform reference
            price ``settings.warm_start_price`` and start every evaluation from it
            (fewer UE iterations per evaluation). ``False``: start from free-flow
            cheapest routes.
        cache: read the prepared route sets and warm start from the on-disk cache
            (:mod:`evcs_gym.scenarios.cache`), computing and storing them on a miss. ``False``:
            compute them, and neither read nor write the cache. Either way the result
            is the same, bit for bit.
        **overrides: settings to replace, by their settings-file key
            (e.g. ``demand_multiplier=0.5``); unknown keys raise ``ScenarioError``.

    The files are read and validated at every load; what costs time (route sets, and
    the warm start: 93 s of Anaheim's first load) is cached on disk, keyed by the files'
    content, the effective settings, the package and UXsim. Within a process, the same
    folder (unchanged on disk) with the same arguments returns the same immutable
    object.

    Example:
        >>> nd = load_scenario("tiny")
        >>> nd.n_agents, nd.n_periods
        (2, 4)
    """
    folder = scenario_folder(name_or_folder)
    files = _scenario_files(folder)
    for path in files.values():
        if not path.is_file():
            raise ScenarioError(f"scenario {folder.name!r}: missing file {path}")
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files.values())
    key = (stamp, warm_start, cache, json.dumps(to_jsonable(overrides), sort_keys=True))
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    nd = _load_uncached(folder, files, warm_start, overrides, cache)
    with _CACHE_LOCK:
        _CACHE[key] = nd
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return nd


NETWORK_FROM = "network_from"
"""Settings-file key naming the sibling scenario folder whose network files a game reads."""


def _scenario_files(folder: Path) -> dict[str, Path]:
    """The four files of a scenario folder: its settings, and the network's three CSVs
    (its own, or those of the folder that its settings' ``network_from`` names; a game
    that names one still reads its own ``<name>_demand.csv`` if it ships one)."""
    settings = folder / f"{folder.name}_settings.json"
    if not settings.is_file():
        raise ScenarioError(f"scenario {folder.name!r}: missing file {settings}")
    network = folder
    source = _raw_settings(settings).get(NETWORK_FROM)
    if source is not None:
        if not isinstance(source, str) or not (folder.parent / source).is_dir():
            raise ScenarioError(
                f"{settings.name}: `{NETWORK_FROM}` must name a sibling scenario folder, "
                f"got {source!r}"
            )
        network = folder.parent / source
    kinds = ("nodes.csv", "links.csv", "demand.csv")
    files = {kind: network / f"{network.name}_{kind}" for kind in kinds}
    own_demand = folder / f"{folder.name}_demand.csv"
    if own_demand.is_file():
        files["demand.csv"] = own_demand
    files["settings"] = settings
    return files


def _raw_settings(path: Path) -> dict[str, Any]:
    """A settings file's JSON object, ``network_from`` included."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ScenarioError(f"{path.name}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path.name}: invalid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path.name}: top level must be an object, got {type(raw).__name__}")
    return raw


def settings_file_mapping(path: Path) -> dict[str, Any]:
    """A settings file's setting keys and values: its JSON object without
    ``network_from``, which names files rather than a setting."""
    raw = _raw_settings(path)
    raw.pop(NETWORK_FROM, None)
    return raw


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in columns if c not in header]
        if missing:
            raise ScenarioError(f"{path.name}: missing column(s) {missing}; header is {header}")
        rows = []
        for row in reader:
            rows.append({k.strip(): (v or "").strip() for k, v in row.items() if k is not None})
        return rows


def _number(path: Path, row_no: int, row: dict[str, str], column: str) -> float:
    raw = row.get(column, "")
    try:
        value = float(raw)
    except ValueError:
        raise ScenarioError(
            f"{path.name} row {row_no}: column `{column}` is not a number: {raw!r}"
        ) from None
    if not math.isfinite(value):
        raise ScenarioError(f"{path.name} row {row_no}: column `{column}` is not finite: {raw!r}")
    return value


def _load_settings(path: Path, overrides: dict[str, Any]) -> ScenarioSettings:
    raw = settings_file_mapping(path)
    ScenarioSettings.from_mapping(raw, source=path.name)  # file alone must be valid
    merged = {**raw, **overrides}
    return ScenarioSettings.from_mapping(merged, source=f"{path.name} (+ overrides)")


@dataclasses.dataclass
class _Inputs:
    """A scenario folder read and validated: what the preparation steps start from."""

    settings: ScenarioSettings
    node_names: list[str]
    node_xy: list[tuple[float, float]]
    node_index: dict[str, int]
    link_rows: list[tuple[str, int, int, dict[str, float]]]
    demand: np.ndarray
    """(n_rows, 5): orig, dest, start_t, end_t, q × ``demand_multiplier``; rows with q > 0."""
    agents: tuple[str, ...]
    files: dict[str, Path]


def _read_nodes(path: Path) -> tuple[list[str], list[tuple[float, float]], dict[str, int]]:
    node_names: list[str] = []
    node_xy: list[tuple[float, float]] = []
    node_index: dict[str, int] = {}
    for i, row in enumerate(_read_csv(path, _NODE_COLUMNS), start=2):
        name = row["name"]
        if not name:
            raise ScenarioError(f"{path.name} row {i}: empty node name")
        if name in node_index:
            raise ScenarioError(f"{path.name} row {i}: duplicate node name {name!r}")
        node_index[name] = len(node_names)
        node_names.append(name)
        node_xy.append((_number(path, i, row, "x"), _number(path, i, row, "y")))
    if not node_names:
        raise ScenarioError(f"{path.name}: no nodes")
    return node_names, node_xy, node_index


def _read_links(
    path: Path, node_index: dict[str, int], deltan: float
) -> list[tuple[str, int, int, dict]]:
    link_rows = []
    seen: set[str] = set()
    for i, row in enumerate(_read_csv(path, _LINK_COLUMNS), start=2):
        name = row["name"]
        if not name:
            raise ScenarioError(f"{path.name} row {i}: empty link name")
        if name in seen:
            raise ScenarioError(f"{path.name} row {i}: duplicate link name {name!r}")
        seen.add(name)
        for col in ("start", "end"):
            if row[col] not in node_index:
                raise ScenarioError(
                    f"{path.name} row {i}: link {name!r} column `{col}` names unknown node "
                    f"{row[col]!r}"
                )
        values = {c: _number(path, i, row, c) for c in ("length", "u", "kappa", "merge_priority")}
        for col in ("length", "u", "kappa"):
            if values[col] <= 0:
                raise ScenarioError(
                    f"{path.name} row {i}: link {name!r} column `{col}` must be positive, "
                    f"got {values[col]}"
                )
        cells = link_cells(values["length"], values["u"], deltan)
        if cells > MAX_LINK_CELLS:
            raise ScenarioError(
                f"{path.name} row {i}: link {name!r} is {cells:.3g} simulation cells long "
                f"(length / (u × `deltan`)), more than {MAX_LINK_CELLS:,}; check `length` "
                "and `u`"
            )
        link_rows.append((name, node_index[row["start"]], node_index[row["end"]], values))
    if not link_rows:
        raise ScenarioError(f"{path.name}: no links")
    return link_rows


def _read_demand(path: Path, node_index: dict[str, int], settings: ScenarioSettings) -> np.ndarray:
    multiplier, horizon = settings.demand_multiplier, settings.simulation_time
    demand_rows = []
    for i, row in enumerate(_read_csv(path, _DEMAND_COLUMNS), start=2):
        for col in ("orig", "dest"):
            if row[col] not in node_index:
                raise ScenarioError(
                    f"{path.name} row {i}: column `{col}` names unknown node {row[col]!r}"
                )
        start_t, end_t, q = (_number(path, i, row, c) for c in ("start_t", "end_t", "q"))
        if q < 0:
            raise ScenarioError(f"{path.name} row {i}: negative demand q={q}")
        if not 0 <= start_t < end_t:
            raise ScenarioError(
                f"{path.name} row {i}: need 0 <= start_t < end_t, got {start_t}, {end_t}"
            )
        if end_t > horizon:
            raise ScenarioError(
                f"{path.name} row {i}: end_t={end_t} is after the simulation ends "
                f"(`simulation_time` {horizon} s)"
            )
        if row["orig"] == row["dest"] and q > 0:
            raise ScenarioError(f"{path.name} row {i}: orig equals dest {row['orig']!r}")
        if q > 0:
            orig, dest = node_index[row["orig"]], node_index[row["dest"]]
            demand_rows.append((orig, dest, start_t, end_t, q * multiplier))
    return np.array(demand_rows, dtype=float).reshape(-1, 5)


def _read_inputs(files: dict[str, Path], overrides: dict[str, Any]) -> _Inputs:
    """Read and validate the four files (settings, nodes, links, demand)."""
    settings = _load_settings(files["settings"], overrides)
    node_names, node_xy, node_index = _read_nodes(files["nodes.csv"])
    link_rows = _read_links(files["links.csv"], node_index, settings.deltan)
    agents = tuple(settings.charging_nodes)
    for agent in agents:
        if agent not in node_index:
            raise ScenarioError(
                f"{files['settings'].name}: `charging_nodes` names {agent!r}, which is not a "
                f"node of {files['nodes.csv'].name}"
            )
    demand = _read_demand(files["demand.csv"], node_index, settings)
    return _Inputs(settings, node_names, node_xy, node_index, link_rows, demand, agents, files)


@dataclasses.dataclass
class _Network:
    """The simulated network: road links plus one charging link per station and one
    connector per charging destination."""

    links: LinkTable
    node_names: list[str]
    """Road nodes, then the virtual sinks of charging trips."""
    node_xy: list[tuple[float, float]]
    station_link: list[int]
    connector_of: dict[int, int]
    """Charging destination (road node index) -> its connector link."""


def _build_network(inp: _Inputs) -> _Network:
    files = inp.files
    settings, node_names = inp.settings, inp.node_names
    link_names = {row[0] for row in inp.link_rows}
    charging_dests = (
        sorted({int(d) for d in inp.demand[:, 1]}) if settings.charging_car_rate else []
    )
    all_names = list(node_names)
    node_xy = list(inp.node_xy)
    sink_of: dict[int, int] = {}
    for d in charging_dests:
        sink = f"sink_{node_names[d]}"
        if sink in inp.node_index:
            raise ScenarioError(f"{files['nodes.csv'].name}: node name {sink!r} is reserved")
        sink_of[d] = len(all_names)
        all_names.append(sink)
        node_xy.append(node_xy[d])
    columns: dict[str, list] = {
        c: []
        for c in ("names", "start", "end", "length", "speed", "kappa", "prio", "lanes", "kind")
    }
    columns["station"] = []

    def add(
        name: str,
        start: int,
        end: int,
        length: float,
        speed: float,
        kappa: float,
        prio: float,
        lanes: int,
        kind: int,
        station: int,
    ) -> None:
        for column, value in zip(
            columns.values(), (name, start, end, length, speed, kappa, prio, lanes, kind, station)
        ):
            column.append(value)

    for name, s, e, v in inp.link_rows:
        add(name, s, e, v["length"], v["u"], v["kappa"], v["merge_priority"], 1, LINK_ROAD, -1)
    station_link = []
    for a, agent in enumerate(inp.agents):
        name = f"charging_{agent}"
        if name in link_names:
            raise ScenarioError(f"{files['links.csv'].name}: link name {name!r} is reserved")
        ov = settings.station_overrides.get(agent)
        length = (ov and ov.length) or settings.charging_link_length
        speed = (ov and ov.free_flow_speed) or settings.charging_link_free_flow_speed
        lanes = (ov and ov.number_of_lanes) or 1
        station_link.append(len(columns["names"]))
        node = inp.node_index[agent]
        add(name, node, node, length, speed, 0.2, 1.0, lanes, LINK_CHARGING, a)
    connector_of: dict[int, int] = {}
    for d, sink_node in sink_of.items():
        name = f"connector_{node_names[d]}"
        if name in link_names:
            raise ScenarioError(f"{files['links.csv'].name}: link name {name!r} is reserved")
        connector_of[d] = len(columns["names"])
        add(name, d, sink_node, CONNECTOR_LENGTH, CONNECTOR_SPEED, 0.2, 1.0, CONNECTOR_LANES,
            LINK_CONNECTOR, -1)  # fmt: skip
    links = LinkTable(
        names=tuple(columns["names"]),
        start=np.array(columns["start"], dtype=np.int64),
        end=np.array(columns["end"], dtype=np.int64),
        length=np.array(columns["length"], dtype=float),
        free_flow_speed=np.array(columns["speed"], dtype=float),
        jam_density=np.array(columns["kappa"], dtype=float),
        merge_priority=np.array(columns["prio"], dtype=float),
        number_of_lanes=np.array(columns["lanes"], dtype=np.int64),
        kind=np.array(columns["kind"], dtype=np.int64),
        station=np.array(columns["station"], dtype=np.int64),
    )
    return _Network(links, all_names, node_xy, station_link, connector_of)


def _build_platoons(inp: _Inputs) -> tuple[np.ndarray, dict[str, float]]:
    """Platoons of ``deltan`` vehicles, as (n, 5) rows: departure, orig, dest, charging,
    demand row; sorted by departure, then row, charging first. Also the demanded vehicle
    counts (not rounded)."""
    settings, demand = inp.settings, inp.demand
    amounts = demand[:, 4] * (demand[:, 3] - demand[:, 2])
    platoons_demanded = float(amounts.sum()) / settings.deltan
    if not platoons_demanded <= MAX_PLATOONS:
        raise ScenarioError(
            f"{inp.files['demand.csv'].name}: the demand (q × duration × `demand_multiplier` "
            f"{settings.demand_multiplier}) adds up to {platoons_demanded:.3g} platoons of "
            f"{settings.deltan} vehicles, more than the {MAX_PLATOONS:,} this package "
            "simulates; check the `q` column and `demand_multiplier`"
        )
    charging_amounts = amounts * settings.charging_car_rate
    other_amounts = amounts - charging_amounts
    platoons = []
    for is_charging, class_amounts in ((1, charging_amounts), (0, other_amounts)):
        counts = demand_mod.apportion(class_amounts, settings.deltan)
        for r in np.flatnonzero(counts):
            o, d, t0, t1, _ = demand[r]
            for t in demand_mod.platoon_departures(t0, t1, int(counts[r]), float(settings.deltan)):
                platoons.append((t, int(o), int(d), is_charging, int(r)))
    platoons.sort(key=lambda p: (p[0], p[4], -p[3]))
    demanded = {
        "charging": float(charging_amounts.sum()),
        "non_charging": float(other_amounts.sum()),
    }
    return np.array(platoons, dtype=float).reshape(-1, 5), demanded


def _build_route_sets(inp: _Inputs, net: _Network, platoons: np.ndarray) -> dict[str, np.ndarray]:
    """The route set of every (orig, dest, class) group (up to ``routes_per_od`` k
    shortest paths at free flow; charging routes pass one station) and each platoon's
    group: the arrays :class:`NetworkData` keeps, named as its fields.

    With an outside option (``charging_outside_cost``), a charging group's set holds its
    k charging routes and then the k shortest road routes of its trip, each ending on the
    connector to the trip's sink (they pass no station: the outside option); the sets are
    then 2k wide."""
    settings, links = inp.settings, net.links
    ff = links.free_flow_time
    k = settings.routes_per_od
    outside = settings.charging_outside_cost is not None
    finder = routes_mod.RouteFinder(
        len(inp.node_names), links.start, links.end, ff, links.kind == LINK_ROAD, k
    )
    stations = [(inp.node_index[a], net.station_link[i]) for i, a in enumerate(inp.agents)]
    group_of: dict[tuple[int, int, int], int] = {}
    group_routes: list[list[int]] = []
    route_link_lists: list[list[int]] = []
    demanded_pairs: OrderedDict[tuple[int, int], int] = OrderedDict()
    for r, (o, d, *_rest) in enumerate(inp.demand):
        demanded_pairs.setdefault((int(o), int(d)), r)
    classes = [0, 1] if settings.charging_car_rate > 0 else [0]
    if settings.charging_car_rate >= 1:
        classes = [1]
    for (o, d), r in demanded_pairs.items():
        for c in classes:
            if c:
                found = finder.charging_routes(o, d, stations)
                found = [rt + [net.connector_of[d]] for rt in found]
                if outside and found:
                    found += [rt + [net.connector_of[d]] for rt in finder.road_routes(o, d)]
            else:
                found = finder.road_routes(o, d)
            if not found:
                kind_txt = "charging route (via a station)" if c else "route"
                raise ScenarioError(
                    f"{inp.files['demand.csv'].name} row {r + 2}: no {kind_txt} from "
                    f"{inp.node_names[o]!r} to {inp.node_names[d]!r}"
                )
            group_of[(o, d, c)] = len(group_routes)
            ids = []
            for rt in found:
                ids.append(len(route_link_lists))
                route_link_lists.append(rt)
            group_routes.append(ids)

    width = 2 * k if outside else k
    group_arr = np.full((len(group_routes), width), -1, dtype=np.int64)
    for g, ids in enumerate(group_routes):
        group_arr[g, : len(ids)] = ids
    lengths = np.array([len(rt) for rt in route_link_lists], dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.array([i for rt in route_link_lists for i in rt], dtype=np.int32)
    route_ff = np.add.reduceat(ff[flat], offsets[:-1]) if len(flat) else np.zeros(0)
    charge_link = np.full(len(lengths), -1, dtype=np.int64)
    charge_pos = np.full(len(lengths), -1, dtype=np.int64)
    for rid, rt in enumerate(route_link_lists):
        for pos, li in enumerate(rt):
            if links.kind[li] == LINK_CHARGING:
                charge_link[rid], charge_pos[rid] = li, pos
                break
    veh_group = np.array(
        [group_of[(int(o), int(d), int(c))] for _, o, d, c, _ in platoons], dtype=np.int64
    )
    return {
        "veh_group": veh_group,
        "group_routes": group_arr,
        "route_offsets": offsets,
        "route_links": flat,
        "route_free_flow_time": route_ff,
        "route_charging_link": charge_link,
        "route_charge_position": charge_pos,
    }


def _assemble(
    folder: Path,
    inp: _Inputs,
    net: _Network,
    platoons: np.ndarray,
    demanded: dict[str, float],
    routes: dict[str, np.ndarray],
    timings: dict,
) -> NetworkData:
    """The :class:`NetworkData` of the read parts and the route sets, starting from
    free-flow routes (each platoon on the first route of its set)."""
    veh_group = routes["veh_group"]
    initial = (
        routes["group_routes"][veh_group, 0] if len(veh_group) else np.zeros(0, dtype=np.int64)
    )
    return NetworkData(
        name=folder.name,
        settings=inp.settings,
        node_names=tuple(net.node_names),
        node_xy=np.array(net.node_xy, dtype=float),
        node_is_virtual=np.arange(len(net.node_names)) >= len(inp.node_names),
        links=net.links,
        agent_names=inp.agents,
        station_node=np.array([inp.node_index[a] for a in inp.agents], dtype=np.int64),
        station_link=np.array(net.station_link, dtype=np.int64),
        demand_rows=inp.demand,
        demanded_vehicles=demanded,
        veh_orig=platoons[:, 1].astype(np.int64),
        veh_dest=platoons[:, 2].astype(np.int64),
        veh_departure=platoons[:, 0].copy(),
        veh_charging=platoons[:, 3].astype(bool),
        initial_route_choice=initial,
        warm_start_info={"kind": "free_flow"},
        source=str(folder),
        timings=timings,
        **routes,
    )


_WARM_START_ARRAYS = ("initial_route_choice", "reference_traveltime", "reference_network_entry")


def _prepare(
    folder: Path,
    inp: _Inputs,
    net: _Network,
    platoons: np.ndarray,
    demanded: dict[str, float],
    warm_start: bool,
) -> NetworkData:
    """Route sets and, if asked, the warm start: the costly, cacheable part."""
    t0 = time.perf_counter()
    routes = _build_route_sets(inp, net, platoons)
    timings = {"routes": time.perf_counter() - t0}
    nd = _assemble(folder, inp, net, platoons, demanded, routes, timings)
    if warm_start and nd.n_platoons:
        from evcs_gym.ue.evaluator import compute_warm_start

        nd = compute_warm_start(nd)
    return nd


def _prepared_arrays(nd: NetworkData) -> dict[str, np.ndarray]:
    """What the cache stores of a prepared scenario: the route-set arrays, the warm
    start's arrays and its info (as JSON)."""
    arrays = {name: getattr(nd, name) for name in _ROUTE_ARRAYS}
    for name in _WARM_START_ARRAYS:
        value = getattr(nd, name)
        if value is not None:
            arrays[name] = value
    arrays["warm_start_info"] = np.array(json.dumps(to_jsonable(nd.warm_start_info)))
    arrays["timings"] = np.array(json.dumps(nd.timings))
    return arrays


_ROUTE_ARRAYS = (
    "veh_group",
    "group_routes",
    "route_offsets",
    "route_links",
    "route_free_flow_time",
    "route_charging_link",
    "route_charge_position",
)


def _from_prepared(
    folder: Path,
    inp: _Inputs,
    net: _Network,
    platoons: np.ndarray,
    demanded: dict[str, float],
    arrays: dict[str, np.ndarray],
    read_s: float,
) -> NetworkData:
    """The :class:`NetworkData` of the read parts and a cache entry's arrays."""
    routes = {name: arrays[name] for name in _ROUTE_ARRAYS}
    timings = {"cache_read": read_s, "computed": json.loads(str(arrays["timings"]))}
    nd = _assemble(folder, inp, net, platoons, demanded, routes, timings)
    # Any: NetworkData fields by name, which the type checker cannot match to `**`
    warm: dict[str, Any] = {name: arrays[name] for name in _WARM_START_ARRAYS if name in arrays}
    info = json.loads(str(arrays["warm_start_info"]))
    return dataclasses.replace(nd, **warm, warm_start_info=info)


@functools.cache
def _code_fingerprint() -> str:
    """SHA-256 of the modules a preparation runs (the package's top level, ``network/``,
    ``ue/`` and ``scenarios/``): a cache entry is only read by the code that wrote it,
    even between releases (an editable install under development)."""
    root = Path(__file__).resolve().parents[1]
    paths = [
        *root.glob("*.py"),
        *(p for room in _PREPARATION_ROOMS for p in root.glob(f"{room}/*.py")),
    ]
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def preparation_key(files: dict[str, Path], settings: ScenarioSettings, warm_start: bool) -> str:
    """The cache key of a scenario's preparation: a SHA-256 of its four files' bytes, the
    effective settings, ``warm_start``, the package (version and code) and UXsim's
    version, and the cache's entry format."""
    from importlib.metadata import version

    from evcs_gym._version import __version__

    h = hashlib.sha256()
    for kind in sorted(files):
        h.update(kind.encode())
        h.update(files[kind].read_bytes())
    stamp = {
        "settings": settings.digest,
        "warm_start": bool(warm_start),
        "evcs_gym": __version__,
        "code": _code_fingerprint(),
        "uxsim": version("uxsim"),
        "format": cache_mod.FORMAT,
    }
    h.update(json.dumps(stamp, sort_keys=True).encode())
    return h.hexdigest()


def _load_uncached(
    folder: Path,
    files: dict[str, Path],
    warm_start: bool,
    overrides: dict[str, Any],
    cache: bool,
) -> NetworkData:
    inp = _read_inputs(files, overrides)
    net = _build_network(inp)
    platoons, demanded = _build_platoons(inp)
    if not cache:
        return _prepare(folder, inp, net, platoons, demanded, warm_start)
    t0 = time.perf_counter()
    key = preparation_key(files, inp.settings, warm_start)
    key_seconds = time.perf_counter() - t0
    store = cache_mod.default_cache()
    computed: list[NetworkData] = []

    def compute() -> dict[str, np.ndarray]:
        computed.append(_prepare(folder, inp, net, platoons, demanded, warm_start))
        return _prepared_arrays(computed[0])

    arrays = store.get_or_compute(key, compute, label=f"{folder} warm_start={warm_start}")
    if computed:  # this load computed the entry: what caching it cost
        nd = computed[0]
        nd.timings.update(cache_key=key_seconds, cache_write=store.last_write_seconds)
        return nd
    return _from_prepared(folder, inp, net, platoons, demanded, arrays, time.perf_counter() - t0)
