"""Route sets (evcs_gym.network.routes) checked for structure and against networkx's Yen."""

from __future__ import annotations

from itertools import islice

import networkx as nx
import numpy as np
import pytest

from evcs_gym.network import LINK_CHARGING, LINK_CONNECTOR


def _routes(nd):
    for g in range(len(nd.group_routes)):
        for r in nd.group_routes[g]:
            if r >= 0:
                yield g, int(r)


def _links(nd, r):
    return nd.route_links[nd.route_offsets[r] : nd.route_offsets[r + 1]]


@pytest.mark.parametrize("name", ["tiny", "siouxfalls"])
def test_route_sets_are_connected_simple_and_sorted(name, request):
    nd = request.getfixturevalue(name)
    lk = nd.links
    for g in range(len(nd.group_routes)):
        ids = [int(r) for r in nd.group_routes[g] if r >= 0]
        assert ids, f"group {g} has no route"
        ff = nd.route_free_flow_time[ids]
        assert (np.diff(ff) >= -1e-9).all(), "not sorted by free-flow time"
    for _g, r in _routes(nd):
        links = _links(nd, r)
        # connected
        assert (lk.end[links[:-1]] == lk.start[links[1:]]).all()
        kinds = lk.kind[links]
        n_charging = int((kinds == LINK_CHARGING).sum())
        charging_route = nd.route_charging_link[r] >= 0
        if charging_route:
            assert n_charging == 1
            assert kinds[-1] == LINK_CONNECTOR  # ends at the destination's sink
            pos = int(np.flatnonzero(kinds == LINK_CHARGING)[0])
            halves = (links[:pos], links[pos + 1 : -1])
        else:
            assert n_charging == 0 and (kinds == LINK_CONNECTOR).sum() == 0
            halves = (links,)
        # each half is a simple path: no node visited twice
        for half in halves:
            if len(half):
                nodes = [lk.start[half[0]], *lk.end[half]]
                assert len(nodes) == len(set(nodes)), nd.route(r)


def test_route_sets_match_networkx_yen_on_the_two_layer_graph(tiny):
    nd = tiny
    lk = nd.links
    ff = lk.free_flow_time
    g = nx.DiGraph()
    for i in np.flatnonzero(lk.kind == 0):
        for layer in (0, 1):
            g.add_edge((lk.start[i], layer), (lk.end[i], layer), weight=ff[i])
    for a, link in enumerate(nd.station_link):
        g.add_edge((nd.station_node[a], 0), (nd.station_node[a], 1), weight=ff[link])
    k = nd.settings.routes_per_od
    seen = set()
    for v in range(nd.n_platoons):
        grp = nd.veh_group[v]
        if grp in seen:
            continue
        seen.add(grp)
        o, d, charging = nd.veh_orig[v], nd.veh_dest[v], nd.veh_charging[v]
        target = (d, 1) if charging else (d, 0)
        expected = [
            nx.path_weight(g, p, "weight")
            for p in islice(nx.shortest_simple_paths(g, (o, 0), target, weight="weight"), k)
        ]
        ids = [int(r) for r in nd.group_routes[grp] if r >= 0]
        got = nd.route_free_flow_time[ids] - (ff[_links(nd, ids[0])[-1]] if charging else 0)
        assert np.allclose(sorted(got), expected), (o, d, charging)


def test_trips_from_and_to_station_nodes_have_charging_routes(tiny):
    nd = tiny
    names = nd.node_names
    for v in np.flatnonzero(nd.veh_charging):
        o, d = names[nd.veh_orig[v]], names[nd.veh_dest[v]]
        if o == "A" or d == "B":
            routes = [nd.route(int(r)) for r in nd.group_routes[nd.veh_group[v]] if r >= 0]
            assert any(f"charging_{o}" in r for r in routes) or any(
                f"charging_{d}" in r for r in routes
            )
