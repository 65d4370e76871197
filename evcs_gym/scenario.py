"""Scenario loading: a folder of CSV/JSON files -> validated :class:`NetworkData`.

A scenario folder ``<name>/`` holds ``<name>_nodes.csv`` (``name,x,y``),
``<name>_links.csv`` (``name,start,end,length,u,kappa,merge_priority``),
``<name>_demand.csv`` (``orig,dest,start_t,end_t,q``) and ``<name>_settings.json``.
Bundled scenarios are found by name (:func:`available_scenarios`); any other folder of
that layout loads by path. Invalid input raises :class:`~evcs_gym.errors.ScenarioError`
naming the file, the row or key and the value.
"""

from __future__ import annotations

import csv
import json
import math
import threading
import time
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from evcs_gym import demand as demand_mod
from evcs_gym import routes as routes_mod
from evcs_gym.errors import ScenarioError
from evcs_gym.network import LINK_CHARGING, LINK_CONNECTOR, LINK_ROAD, LinkTable, NetworkData
from evcs_gym.settings import ScenarioSettings
from evcs_gym.utils import to_jsonable

__all__ = ["available_scenarios", "load_scenario", "scenario_folder"]

CONNECTOR_LENGTH = 100.0
"""Length (m) of the virtual connector from a destination to its charging-trip sink."""
CONNECTOR_SPEED = 20.0
"""Speed (m/s) on connectors: 5 s, the same for every charging route of an OD pair."""
CONNECTOR_LANES = 2

_NODE_COLUMNS = ("name", "x", "y")
_LINK_COLUMNS = ("name", "start", "end", "length", "u", "kappa", "merge_priority")
_DEMAND_COLUMNS = ("orig", "dest", "start_t", "end_t", "q")


def _scenario_root() -> Path:
    return Path(str(resources.files("evcs_gym") / "scenarios"))


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
    name_or_folder: str | Path = "siouxfalls", *, warm_start: bool = True, **overrides: Any
) -> NetworkData:
    """Load a scenario by bundled name or folder path.

    Args:
        name_or_folder: ``"siouxfalls"``, ``"berlin_friedrichshain"``, ``"anaheim"``,
            ``"tiny"``, or the path of a folder in the scenario layout.
        warm_start: compute once, now, the user equilibrium at the uniform reference
            price ``settings.warm_start_price`` and start every evaluation from it
            (fewer UE iterations per evaluation). ``False``: start from free-flow
            cheapest routes.
        **overrides: settings to replace, by their settings-file key
            (e.g. ``demand_multiplier=0.5``); unknown keys raise ``ScenarioError``.

    Loading is cached per process: the same folder (unchanged on disk) with the same
    arguments returns the same immutable object.

    Example:
        >>> nd = load_scenario("tiny")
        >>> nd.n_agents, nd.n_periods
        (2, 4)
    """
    folder = scenario_folder(name_or_folder)
    name = folder.name
    files = {kind: folder / f"{name}_{kind}" for kind in ("nodes.csv", "links.csv", "demand.csv")}
    files["settings"] = folder / f"{name}_settings.json"
    for path in files.values():
        if not path.is_file():
            raise ScenarioError(f"scenario {name!r}: missing file {path}")
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files.values())
    key = (stamp, warm_start, json.dumps(to_jsonable(overrides), sort_keys=True))
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    nd = _load_uncached(folder, files, warm_start, overrides)
    with _CACHE_LOCK:
        _CACHE[key] = nd
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return nd


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
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path.name}: invalid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path.name}: top level must be an object, got {type(raw).__name__}")
    ScenarioSettings.from_mapping(raw, source=path.name)  # file alone must be valid
    merged = {**raw, **overrides}
    return ScenarioSettings.from_mapping(merged, source=f"{path.name} (+ overrides)")


def _load_uncached(
    folder: Path, files: dict[str, Path], warm_start: bool, overrides: dict[str, Any]
) -> NetworkData:
    settings = _load_settings(files["settings"], overrides)
    delta_t = float(settings.deltan)  # reaction time 1 s: one simulation step = deltan s

    # ------------------------------------------------------------------ nodes
    path = files["nodes.csv"]
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

    # ------------------------------------------------------------------ links
    path = files["links.csv"]
    link_rows = []
    link_names: set[str] = set()
    for i, row in enumerate(_read_csv(path, _LINK_COLUMNS), start=2):
        name = row["name"]
        if name in link_names:
            raise ScenarioError(f"{path.name} row {i}: duplicate link name {name!r}")
        link_names.add(name)
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
        link_rows.append((name, node_index[row["start"]], node_index[row["end"]], values))

    # ------------------------------------------------------------------ stations
    agents = tuple(settings.charging_nodes)
    for agent in agents:
        if agent not in node_index:
            raise ScenarioError(
                f"{files['settings'].name}: `charging_nodes` names {agent!r}, which is not a "
                f"node of {files['nodes.csv'].name}"
            )

    # ------------------------------------------------------------------ demand
    path = files["demand.csv"]
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
        if row["orig"] == row["dest"] and q > 0:
            raise ScenarioError(f"{path.name} row {i}: orig equals dest {row['orig']!r}")
        if q > 0:
            demand_rows.append(
                (
                    node_index[row["orig"]],
                    node_index[row["dest"]],
                    start_t,
                    end_t,
                    q * settings.demand_multiplier,
                )
            )
    demand_arr = np.array(demand_rows, dtype=float).reshape(-1, 5)

    # ------------------------------------------------------------------ link table
    n_road_nodes = len(node_names)
    charging_dests = (
        sorted({int(d) for d in demand_arr[:, 1]}) if settings.charging_car_rate else []
    )
    all_names = list(node_names)
    sink_of: dict[int, int] = {}
    for d in charging_dests:
        sink = f"sink_{node_names[d]}"
        if sink in node_index:
            raise ScenarioError(f"{files['nodes.csv'].name}: node name {sink!r} is reserved")
        sink_of[d] = len(all_names)
        all_names.append(sink)
        node_xy.append(node_xy[d])
    names, start, end, length, speed, kappa, prio, lanes, kind, station = ([] for _ in range(10))

    def add(nm, s, e, ln, u, k, p, nl, kd, st):
        for lst, v in zip(
            (names, start, end, length, speed, kappa, prio, lanes, kind, station),
            (nm, s, e, ln, u, k, p, nl, kd, st),
        ):
            lst.append(v)

    for name, s, e, v in link_rows:
        add(name, s, e, v["length"], v["u"], v["kappa"], v["merge_priority"], 1, LINK_ROAD, -1)
    station_link = []
    for a, agent in enumerate(agents):
        nm = f"charging_{agent}"
        if nm in link_names:
            raise ScenarioError(f"{files['links.csv'].name}: link name {nm!r} is reserved")
        ov = settings.station_overrides.get(agent)
        ln = (ov and ov.length) or settings.charging_link_length
        u = (ov and ov.free_flow_speed) or settings.charging_link_free_flow_speed
        nl = (ov and ov.number_of_lanes) or 1
        station_link.append(len(names))
        node = node_index[agent]
        add(nm, node, node, ln, u, 0.2, 1.0, nl, LINK_CHARGING, a)
    connector_of: dict[int, int] = {}
    for d, sink in sink_of.items():
        nm = f"connector_{node_names[d]}"
        connector_of[d] = len(names)
        if nm in link_names:
            raise ScenarioError(f"{files['links.csv'].name}: link name {nm!r} is reserved")
        add(
            nm,
            d,
            sink,
            CONNECTOR_LENGTH,
            CONNECTOR_SPEED,
            0.2,
            1.0,
            CONNECTOR_LANES,
            LINK_CONNECTOR,
            -1,
        )
    links = LinkTable(
        names=tuple(names),
        start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64),
        length=np.array(length, dtype=float),
        free_flow_speed=np.array(speed, dtype=float),
        jam_density=np.array(kappa, dtype=float),
        merge_priority=np.array(prio, dtype=float),
        number_of_lanes=np.array(lanes, dtype=np.int64),
        kind=np.array(kind, dtype=np.int64),
        station=np.array(station, dtype=np.int64),
    )

    # ------------------------------------------------------------------ platoons
    amounts = demand_arr[:, 4] * (demand_arr[:, 3] - demand_arr[:, 2])
    charging_amounts = amounts * settings.charging_car_rate
    other_amounts = amounts - charging_amounts
    platoons = []  # (departure, orig, dest, charging, row)
    for is_charging, class_amounts in ((1, charging_amounts), (0, other_amounts)):
        counts = demand_mod.apportion(class_amounts, settings.deltan)
        for r in np.flatnonzero(counts):
            o, d, t0, t1, _ = demand_arr[r]
            for t in demand_mod.platoon_departures(t0, t1, int(counts[r]), delta_t):
                platoons.append((t, int(o), int(d), is_charging, int(r)))
    platoons.sort(key=lambda p: (p[0], p[4], -p[3]))
    veh = np.array(platoons, dtype=float).reshape(-1, 5)

    # ------------------------------------------------------------------ route sets
    t_routes = time.perf_counter()
    ff = links.free_flow_time
    finder = routes_mod.RouteFinder(
        n_road_nodes, links.start, links.end, ff, links.kind == LINK_ROAD, settings.routes_per_od
    )
    stations = [(node_index[a], station_link[i]) for i, a in enumerate(agents)]
    k = settings.routes_per_od
    group_of: dict[tuple[int, int, int], int] = {}
    group_routes: list[list[int]] = []
    route_link_lists: list[list[int]] = []
    demanded_pairs = OrderedDict()
    for r, (o, d, *_rest) in enumerate(demand_arr):
        demanded_pairs.setdefault((int(o), int(d)), r)
    classes = [0, 1] if settings.charging_car_rate > 0 else [0]
    if settings.charging_car_rate >= 1:
        classes = [1]
    for (o, d), r in demanded_pairs.items():
        for c in classes:
            if c:
                found = finder.charging_routes(o, d, stations)
                found = [rt + [connector_of[d]] for rt in found]
            else:
                found = finder.road_routes(o, d)
            if not found:
                kind_txt = "charging route (via a station)" if c else "route"
                raise ScenarioError(
                    f"{files['demand.csv'].name} row {r + 2}: no {kind_txt} from "
                    f"{node_names[o]!r} to {node_names[d]!r}"
                )
            group_of[(o, d, c)] = len(group_routes)
            ids = []
            for rt in found:
                ids.append(len(route_link_lists))
                route_link_lists.append(rt)
            group_routes.append(ids)
    route_seconds = time.perf_counter() - t_routes

    group_arr = np.full((len(group_routes), k), -1, dtype=np.int64)
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

    veh_orig = veh[:, 1].astype(np.int64)
    veh_dest = veh[:, 2].astype(np.int64)
    veh_charging = veh[:, 3].astype(bool)
    veh_group = np.array(
        [group_of[(o, d, int(c))] for o, d, c in zip(veh_orig, veh_dest, veh_charging)],
        dtype=np.int64,
    )
    initial = group_arr[veh_group, 0] if len(veh_group) else np.zeros(0, dtype=np.int64)

    nd = NetworkData(
        name=folder.name,
        settings=settings,
        node_names=tuple(all_names),
        node_xy=np.array(node_xy, dtype=float),
        node_is_virtual=np.arange(len(all_names)) >= n_road_nodes,
        links=links,
        agent_names=agents,
        station_node=np.array([node_index[a] for a in agents], dtype=np.int64),
        station_link=np.array(station_link, dtype=np.int64),
        demand_rows=demand_arr,
        demanded_vehicles={
            "charging": float(charging_amounts.sum()),
            "non_charging": float(other_amounts.sum()),
        },
        veh_orig=veh_orig,
        veh_dest=veh_dest,
        veh_departure=veh[:, 0].copy(),
        veh_charging=veh_charging,
        veh_group=veh_group,
        group_routes=group_arr,
        route_offsets=offsets,
        route_links=flat,
        route_free_flow_time=route_ff,
        route_charging_link=charge_link,
        route_charge_position=charge_pos,
        initial_route_choice=initial,
        warm_start_info={"kind": "free_flow"},
        source=str(folder),
        timings={"routes": route_seconds},
    )
    if warm_start and nd.n_platoons:
        from evcs_gym.evaluator import compute_warm_start

        nd = compute_warm_start(nd)
    return nd
