"""Route sets: the k shortest routes by free-flow time per OD pair and class.

Non-charging routes are the k shortest simple paths on the road graph. Charging routes
are the k shortest simple paths on a two-layer graph — the road network once before
charging (layer 0) and once after (layer 1), joined only by the stations' charging
links — so every charging route passes exactly one charging link, and each of its two
halves is a simple path. networkx's ``shortest_simple_paths`` (Yen's algorithm) does
the search.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

import networkx as nx
import numpy as np

__all__ = ["RouteSet", "charging_routes", "road_graph", "road_routes"]

# A route as link indices
RouteSet = list[list[int]]


def road_graph(
    n_nodes: int, start: np.ndarray, end: np.ndarray, time: np.ndarray, road: np.ndarray
) -> tuple[nx.DiGraph, dict[tuple[int, int], int]]:
    """Road graph weighted by free-flow time, and the link index of each node pair.

    When several road links join the same node pair, the fastest one is kept
    (lowest index on ties).
    """
    best: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(road):
        key = (int(start[i]), int(end[i]))
        if key[0] == key[1]:
            continue
        if key not in best or time[i] < time[best[key]]:
            best[key] = int(i)
    g = nx.DiGraph()
    g.add_nodes_from(range(n_nodes))
    for (u, v), i in best.items():
        g.add_edge(u, v, weight=float(time[i]))
    return g, best


def road_routes(g: nx.DiGraph, pair_link: dict, orig: int, dest: int, k: int) -> RouteSet:
    """Up to ``k`` shortest simple road routes from ``orig`` to ``dest`` as link lists."""
    try:
        paths = list(islice(nx.shortest_simple_paths(g, orig, dest, weight="weight"), k))
    except nx.NetworkXNoPath:
        return []
    return [[pair_link[(u, v)] for u, v in zip(p[:-1], p[1:])] for p in paths]


def two_layer_graph(
    g: nx.DiGraph, station_node: Iterable[int], station_link: Iterable[int], charge_time
) -> nx.DiGraph:
    """Layer 0 (not yet charged) + layer 1 (charged), joined by the charging links."""
    h = nx.DiGraph()
    for u, v, data in g.edges(data=True):
        h.add_edge((u, 0), (v, 0), weight=data["weight"])
        h.add_edge((u, 1), (v, 1), weight=data["weight"])
    for node, link, t in zip(station_node, station_link, charge_time):
        h.add_edge((int(node), 0), (int(node), 1), weight=float(t), link=int(link))
    return h


def charging_routes(h: nx.DiGraph, pair_link: dict, orig: int, dest: int, k: int) -> RouteSet:
    """Up to ``k`` shortest routes ``orig -> station -> dest`` with exactly one charge."""
    source, target = (orig, 0), (dest, 1)
    if source not in h or target not in h:
        return []
    try:
        paths = list(islice(nx.shortest_simple_paths(h, source, target, weight="weight"), k))
    except nx.NetworkXNoPath:
        return []
    routes = []
    for p in paths:
        links = []
        for (u, lu), (v, lv) in zip(p[:-1], p[1:]):
            links.append(h.edges[(u, lu), (v, lv)]["link"] if lu != lv else pair_link[(u, v)])
        routes.append(links)
    return routes
