"""Route sets: the k shortest routes by free-flow time per OD pair and class.

Non-charging routes are the k shortest simple (loopless) road paths, found with Yen's
algorithm as implemented in SciPy (``scipy.sparse.csgraph.yen``, compiled).

Charging routes are the k shortest simple paths on the two-layer graph — the road
network once before charging (layer 0) and once after (layer 1), joined only by the
stations' charging links — so each passes exactly one charging link and each of its
halves is a simple road path. Every such path is ``(o -> s) + charge(s) + (s -> d)`` for
some station ``s``, and the k shortest of them are among the combinations of the k
shortest halves; so they are found by running Yen on the road graph for the halves
(shared by every OD pair with the same origin or destination) and keeping the k
cheapest combinations. Ties are broken by station order, then by half-path rank: the
result is deterministic.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import yen

__all__ = ["RouteFinder"]


_Paths = tuple[tuple[int, ...], ...]
_Halves = tuple[_Paths, _Paths, int]
"""A station's routes to it, from it, and its charging link."""


class RouteFinder:
    """k-shortest route search on one road network.

    Args:
        n_nodes: road nodes (indices ``0 .. n_nodes-1``).
        start, end, time: link arrays (time = free-flow travel time, s).
        road: mask of links that belong to the road graph.
        k: routes per OD pair and class.

    When several road links join the same node pair, the fastest is used (lowest index
    on ties).

    Example:
        >>> import numpy as np
        >>> f = RouteFinder(3, np.array([0, 1, 0]), np.array([1, 2, 2]),
        ...                 np.array([1.0, 1.0, 5.0]), np.ones(3, bool), k=2)
        >>> f.road_routes(0, 2)
        [[0, 1], [2]]
    """

    def __init__(
        self,
        n_nodes: int,
        start: np.ndarray,
        end: np.ndarray,
        time: np.ndarray,
        road: np.ndarray,
        k: int,
    ) -> None:
        self.k = int(k)
        best: dict[tuple[int, int], int] = {}
        for i in np.flatnonzero(road):
            key = (int(start[i]), int(end[i]))
            if key[0] == key[1]:
                continue
            if key not in best or time[i] < time[best[key]]:
                best[key] = int(i)
        self.pair_link = best
        self.time = np.asarray(time, dtype=float)
        rows = np.array([u for u, _ in best], dtype=np.int64)
        cols = np.array([v for _, v in best], dtype=np.int64)
        weights = np.array([self.time[i] for i in best.values()], dtype=float)
        self.graph = csr_matrix((weights, (rows, cols)), shape=(n_nodes, n_nodes))
        self._paths = lru_cache(maxsize=None)(self._paths_uncached)

    def _paths_uncached(self, orig: int, dest: int) -> tuple[_Paths, tuple[float, ...]]:
        """k shortest simple paths as link-index tuples, and their costs."""
        if orig == dest:
            return ((),), (0.0,)
        dist, pred = yen(self.graph, orig, dest, self.k, return_predecessors=True)
        paths, costs = [], []
        for row, d in zip(pred, dist):
            if not np.isfinite(d):
                continue
            nodes = [dest]
            while nodes[-1] != orig:
                nodes.append(int(row[nodes[-1]]))
            nodes.reverse()
            paths.append(tuple(self.pair_link[(u, v)] for u, v in zip(nodes[:-1], nodes[1:])))
            costs.append(float(d))
        return tuple(paths), tuple(costs)

    def road_routes(self, orig: int, dest: int) -> list[list[int]]:
        """Up to k shortest simple road routes ``orig -> dest`` (link indices)."""
        if orig == dest:
            return []
        return [list(p) for p in self._paths(orig, dest)[0]]

    def charging_routes(
        self, orig: int, dest: int, stations: list[tuple[int, int]]
    ) -> list[list[int]]:
        """Up to k shortest routes ``orig -> station -> dest`` with exactly one charge.

        Args:
            stations: ``(node, charging link)`` of every station, in agent order.
        """
        cand_cost, cand_key = [], []
        halves: list[_Halves | None] = []
        for s_idx, (node, link) in enumerate(stations):
            first, c1 = self._paths(orig, node)
            second, c2 = self._paths(node, dest)
            if not first or not second:
                halves.append(None)
                continue
            halves.append((first, second, link))
            total = np.add.outer(np.asarray(c1), np.asarray(c2)) + self.time[link]
            i, j = np.indices(total.shape)
            cand_cost.append(total.ravel())
            cand_key.append(np.stack([np.full(total.size, s_idx), i.ravel(), j.ravel()], 1))
        if not cand_cost:
            return []
        cost = np.concatenate(cand_cost)
        key = np.concatenate(cand_key)
        order = np.lexsort((key[:, 2], key[:, 1], key[:, 0], np.round(cost, 9)))[: self.k]
        routes = []
        for s_idx, i, j in key[order]:
            half = halves[s_idx]
            assert half is not None  # only stations with both halves have candidates
            first, second, link = half
            routes.append([*first[i], link, *second[j]])
        return routes
