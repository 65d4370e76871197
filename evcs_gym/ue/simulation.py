"""UXsim glue: one simulation of a fixed route assignment on the C++ engine.

:class:`WorldBuilder` turns a :class:`NetworkData` into UXsim's C++ World (the engine
under ``uxsim.World(cpp=True)``, made without its Python wrapper) with every platoon on
an enforced route, runs it without vehicle logging, and reads
back what the user-equilibrium loop needs as numpy arrays: each link's time-dependent
travel time, each platoon's arrival time, and the cumulative arrivals on the charging
links (the exact number of vehicles that started charging).

Link travel times come from the cumulative arrival/departure curves rather than
UXsim's ``traveltime_actual``: that series only updates when a vehicle leaves, so a
link that jams keeps reporting the last (short) exit time; the FIFO reading of the
curves sees that a vehicle entering behind a stuck queue leaves only after it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import uxsim
from uxsim import uxsim_cpp, uxsim_cpp_wrapper

from evcs_gym.network import LINK_CHARGING, NetworkData

__all__ = ["SimulationOutput", "WorldBuilder"]

# the engine's constructors, which uxsim.World(cpp=True) calls through its wrapper
_create_world = uxsim_cpp_wrapper._create_world
_add_node = uxsim_cpp_wrapper._add_node
_add_link = uxsim_cpp_wrapper._add_link
_add_demand = uxsim_cpp_wrapper._add_demand
# uxsim.World's defaults, passed on as its wrapper does (routes are enforced, so the
# route-choice parameters only have to match, not to mean anything)
_REACTION_TIME = 1.0
_DUO_UPDATE_TIME = 600.0
_DUO_UPDATE_WEIGHT = 0.5
_DUO_NOISE = 0.01
_INSTANTANEOUS_TT_INTERVAL = 5
_STATE_END = 3


@dataclass
class SimulationOutput:
    """What one simulation returns (all numpy, no UXsim objects)."""

    traveltime: np.ndarray
    """(n_links, n_steps) travel time (s) of a vehicle entering link l at step t, from the
    link's cumulative arrival and departure curves (FIFO, at least free-flow time)."""
    arrival_time: np.ndarray
    """(n_platoons,) arrival time in s; NaN for trips not completed by the horizon."""
    charging_cum_arrival: np.ndarray
    """(n_agents, n_steps) cumulative vehicles that entered each charging link."""
    network_entry: np.ndarray
    """(n_platoons,) time (s) each platoon entered its first link, after waiting in its
    origin node's queue; NaN if it never entered. Route costs start from it."""


def link_capacity_out(network: NetworkData) -> np.ndarray:
    """Outflow capacity of every link in veh/s; -1 means the fundamental diagram's.

    With ``charging_chargers`` set, a charging link discharges ``chargers / charging
    time`` vehicles per s at most, the charging time being its free-flow time.

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny", warm_start=False, charging_chargers=30)
        >>> sorted(set(link_capacity_out(nd).round(3).tolist()))
        [-1.0, 0.1]
    """
    links = network.links
    capacity = np.full(len(links), -1.0)
    chargers = network.settings.charging_chargers
    if chargers is not None:
        charging = links.kind == LINK_CHARGING
        capacity[charging] = chargers / links.free_flow_time[charging]
    return capacity


def _fit(values: np.ndarray, n: int) -> np.ndarray:
    """A copy of ``values`` cut or padded (with its last value) to length ``n``."""
    values = np.array(values, dtype=float)
    if len(values) >= n:
        return values[:n]
    pad = values[-1] if len(values) else 0.0
    return np.concatenate([values, np.full(n - len(values), pad)])


class _NodeSum:
    """Sums the rows of a (n_links, n_steps) array per node the links leave (or enter).

    ``np.add.reduceat`` over the links sorted by node: no ``ufunc.at`` (slow) and no
    matrix product (BLAS threads fight the pool's workers for the cores).

    Example:
        >>> _NodeSum(np.array([2, 0, 2]), 3)(np.array([[1.0], [2.0], [4.0]])).ravel().tolist()
        [2.0, 0.0, 5.0]
    """

    def __init__(self, node_of_link: np.ndarray, n_nodes: int) -> None:
        self.order = np.argsort(node_of_link, kind="stable")
        self.nodes, self.first = np.unique(node_of_link[self.order], return_index=True)
        self.n_nodes = n_nodes

    def __call__(self, per_link: np.ndarray) -> np.ndarray:
        out = np.zeros((self.n_nodes, per_link.shape[1]))
        if len(self.order):
            out[self.nodes] = np.add.reduceat(per_link[self.order], self.first, axis=0)
        return out


class WorldBuilder:
    """Builds and runs UXsim worlds for one scenario.

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny", warm_start=False)
        >>> out = WorldBuilder(nd).run(nd.initial_route_choice, seed=0)
        >>> out.traveltime.shape[0] == len(nd.links)
        True
    """

    def __init__(self, network: NetworkData, *, vehicle_logging: bool = False) -> None:
        self.network = network
        self.vehicle_logging = vehicle_logging
        s = network.settings
        self.deltan = int(s.deltan)
        self.delta_t = float(s.deltan)  # reaction time 1 s
        self.tmax = float(s.simulation_time)
        self.n_steps = int(self.tmax / self.delta_t)
        links = network.links
        sink_of = {
            int(links.start[i]): network.node_names[int(links.end[i])]
            for i in np.flatnonzero(links.is_virtual)
        }
        names = network.node_names
        self._node_args = [
            (name, float(x), float(y), [0], 0.0, -1.0, -1)
            for name, (x, y) in zip(names, network.node_xy.tolist())
        ]
        lk = network.links
        self._capacity_out = capacity_out = link_capacity_out(network)
        self._link_args = [
            (
                name,
                names[lk.start[i]],
                names[lk.end[i]],
                float(lk.free_flow_speed[i]),
                float(lk.jam_density[i]) * int(lk.number_of_lanes[i]),  # kappa, as the wrapper
                float(lk.length[i]),
                int(lk.number_of_lanes[i]),
                float(lk.merge_priority[i]),
                float(capacity_out[i]),  # -1: from the fundamental diagram
                -1.0,  # capacity_in
                [0],  # signal group
            )
            for i, name in enumerate(lk.names)
        ]
        delta_t_route = max(1, int(_DUO_UPDATE_TIME / self.delta_t))
        self._instantaneous_tt_interval = min(_INSTANTANEOUS_TT_INTERVAL, delta_t_route)
        self._veh_args = [
            (
                names[o],
                sink_of[d] if c else names[d],
                float(t),
                float(t) + self.delta_t,
            )
            for o, d, c, t in zip(
                network.veh_orig.tolist(),
                network.veh_dest.tolist(),
                network.veh_charging.tolist(),
                network.veh_departure.tolist(),
            )
        ]
        self._flow = self.deltan / self.delta_t
        # origin queues: UXsim holds departed vehicles in a FIFO queue at their origin
        # node (by departure step, then vehicle index) until their first link takes them
        node_index = {n: i for i, n in enumerate(names)}
        self._trip_end_node = np.array([node_index[a[1]] for a in self._veh_args], dtype=np.int64)
        order = np.lexsort((np.arange(network.n_platoons), network.veh_departure, network.veh_orig))
        self._origin_order = order
        self._origin_of_ordered = network.veh_orig[order]
        self._n_nodes = len(names)
        lengths = np.diff(network.route_offsets)
        self._route_len = lengths
        self._free_flow_time = network.links.free_flow_time
        self._links_from = _NodeSum(network.links.start, self._n_nodes)
        self._links_into = _NodeSum(network.links.end, self._n_nodes)
        self.exec_seconds = 0.0
        """Cumulative seconds spent inside the engine's main loop (for benchmarks)."""

    def route_csr(self, route_choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat CSR (link ids, offsets) of the routes chosen by every platoon."""
        nd = self.network
        lengths = self._route_len[route_choice]
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = nd.route_offsets[route_choice]
        idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return np.ascontiguousarray(nd.route_links[idx], dtype=np.int32), offsets

    def build(self, route_choice: np.ndarray, seed: int) -> uxsim_cpp.World:
        """A finalized C++ World with every platoon on its route, ready to run.

        Made with the engine's own constructors, with exactly the parameters
        ``uxsim.World(cpp=True, ...)`` would pass (checked bit for bit in the tests), but
        without the Python wrapper: its node and link objects cost ~3 ms per World on
        Sioux Falls and sit in reference cycles that only a full garbage collection frees.
        """
        nd = self.network
        cw = _create_world(
            nd.name,
            self.tmax,
            float(self.deltan),
            _REACTION_TIME,
            _DUO_UPDATE_TIME,
            _DUO_UPDATE_WEIGHT,
            _DUO_NOISE,
            0,  # print_mode
            int(seed),
            self.vehicle_logging,
            False,  # hard_deterministic_mode
            route_choice_update_gradual=False,
            no_cyclic_routing=False,
        )
        cw.instantaneous_TT_timestep_interval = self._instantaneous_tt_interval
        for node in self._node_args:
            _add_node(cw, *node)
        for link in self._link_args:
            _add_link(cw, *link)
        self._add_platoons(cw, route_choice)
        return cw

    def build_wrapped(self, route_choice: np.ndarray, seed: int) -> uxsim_cpp_wrapper.CppWorld:
        """The same World made through UXsim's Python wrapper, ``uxsim.World(cpp=True)``.

        What a user of UXsim would write: ``bench_evaluator``'s raw simulation times it,
        and the tests check that :meth:`build` simulates bit for bit like it.

        Example:
            >>> import evcs_gym
            >>> nd = evcs_gym.load_scenario("tiny", warm_start=False)
            >>> W = WorldBuilder(nd).build_wrapped(nd.initial_route_choice, seed=0)
            >>> W.exec_simulation()
            1
        """
        nd = self.network
        W = uxsim.World(
            cpp=True,
            name=nd.name,
            deltan=self.deltan,
            tmax=self.tmax,
            random_seed=int(seed),
            print_mode=0,
            save_mode=0,
            show_mode=0,
            show_progress=0,
            vehicle_logging_timestep_interval=1 if self.vehicle_logging else -1,
            hard_deterministic_mode=False,
        )
        for name, (x, y) in zip(nd.node_names, nd.node_xy.tolist()):
            W.addNode(name, x, y)
        lk, capacity_out = nd.links, self._capacity_out
        for i, name in enumerate(lk.names):
            W.addLink(
                name,
                nd.node_names[lk.start[i]],
                nd.node_names[lk.end[i]],
                length=float(lk.length[i]),
                free_flow_speed=float(lk.free_flow_speed[i]),
                jam_density_per_lane=float(lk.jam_density[i]),
                number_of_lanes=int(lk.number_of_lanes[i]),
                merge_priority=float(lk.merge_priority[i]),
                capacity_out=None if capacity_out[i] < 0 else float(capacity_out[i]),
            )
        self._add_platoons(W._cpp_world, route_choice)
        return W

    def _add_platoons(self, cw: uxsim_cpp.World, route_choice: np.ndarray) -> None:
        """Add every platoon on its route to a World that has its network, and finalize."""
        flow = self._flow
        for orig, dest, t0, t1 in self._veh_args:
            _add_demand(cw, orig, dest, t0, t1, flow, [])
        if cw.vehicle_count != self.network.n_platoons:  # pragma: no cover - engine invariant
            raise RuntimeError(
                f"UXsim created {cw.vehicle_count} platoons, expected {self.network.n_platoons}"
            )
        link_ids, offsets = self.route_csr(route_choice)
        cw.batch_enforce_routes_csr(link_ids, offsets)
        cw.set_t_max(self.tmax)
        cw.show_progress = 0
        cw.initialize_adj_matrix()

    def run(self, route_choice: np.ndarray, seed: int) -> SimulationOutput:
        """Build, simulate and read back one assignment."""
        cw = self.build(route_choice, seed)
        t0 = time.perf_counter()
        cw.main_loop(-1.0, self.n_steps * self.delta_t)
        self.exec_seconds += time.perf_counter() - t0
        return self.read(cw)

    def charging_entries(self, cw: uxsim_cpp.World) -> np.ndarray:
        """(n_platoons, n_agents) number of times each platoon entered each charging link.

        Needs ``vehicle_logging=True``; a diagnostic for tests and analysis.
        """
        if not self.vehicle_logging:
            raise ValueError("charging_entries needs WorldBuilder(..., vehicle_logging=True)")
        log = cw.build_enter_log_data()
        link_ids = np.asarray(log["link_id"])
        vehicles = np.asarray(log["vehicle_index"])
        nd = self.network
        station_of_link = nd.links.station
        counts = np.zeros((nd.n_platoons, nd.n_agents), dtype=np.int64)
        hit = station_of_link[link_ids] >= 0
        np.add.at(counts, (vehicles[hit], station_of_link[link_ids[hit]]), 1)
        return counts

    def read(self, cw: uxsim_cpp.World) -> SimulationOutput:
        """Read the arrays the UE loop needs from a simulated World."""
        n = self.n_steps
        cpp_links = cw.LINKS
        cum_arrival = np.stack([_fit(link.get_cum_arrival_np(), n) for link in cpp_links])
        cum_departure = np.stack([_fit(link.get_cum_departure_np(), n) for link in cpp_links])
        tt = self._fifo_traveltime(cum_arrival, cum_departure)
        vehicles = cw.VEHICLES  # builds a list of proxies: read it once
        arrival = np.array([v.arrival_time for v in vehicles], dtype=float)
        states = np.array([v.state for v in vehicles], dtype=np.int64)
        done = (states == _STATE_END) & (arrival >= 0)
        arrival[~done] = np.nan
        cum = cum_arrival[self.network.station_link]
        entry = self._network_entry(cum_arrival, cum_departure, arrival)
        return SimulationOutput(
            traveltime=tt, arrival_time=arrival, charging_cum_arrival=cum, network_entry=entry
        )

    def _fifo_traveltime(self, cum_arrival: np.ndarray, cum_departure: np.ndarray) -> np.ndarray:
        """(n_links, n_steps) travel time of a vehicle entering each link at each step.

        FIFO: a vehicle entering at step t leaves after the arr[t]-th vehicle has left,
        and no sooner than at free-flow speed; never-left -> exits at the horizon.

        Example:
            >>> import evcs_gym
            >>> b = WorldBuilder(evcs_gym.load_scenario("tiny", warm_start=False))
            >>> arr = np.zeros((len(b.network.links), b.n_steps))
            >>> tt = b._fifo_traveltime(arr, arr)  # an empty network runs at free flow
            >>> bool(np.array_equal(tt[:, 0], b.network.links.free_flow_time))
            True
        """
        # one searchsorted per link: faster than one over the links' shifted curves
        exit_step = np.stack(
            [np.searchsorted(d, a, side="left") for a, d in zip(cum_arrival, cum_departure)]
        )
        steps = np.arange(cum_arrival.shape[1])
        return np.maximum((exit_step - steps) * self.delta_t, self._free_flow_time[:, None])

    def _network_entry(
        self, cum_arrival: np.ndarray, cum_departure: np.ndarray, arrival: np.ndarray
    ) -> np.ndarray:
        """Each platoon's first-link entry time, from the origin queues' flow balance.

        At every node the vehicles released from its origin queue by step t are
        ``Σ out-links' arrivals − Σ in-links' departures + trips ended there``; the queue
        is FIFO, so the k-th platoon of a node (by departure, then index) entered when that
        count first reached ``(k + 1) · deltan``. Exact up to the step (checked against
        UXsim's vehicle log in the tests); without it a trip's cost would start at its
        departure and mistime the charging period by the queueing at the origin (on
        Sioux Falls 85 s on average for charging trips, up to 375 s).
        """
        nd = self.network
        n = self.n_steps
        # counts of whole vehicles: these sums are exact in any order (bit-identical to
        # the ufunc.at accumulation they replace)
        released = self._links_from(cum_arrival) - self._links_into(cum_departure)
        done = ~np.isnan(arrival)
        end_step = np.minimum(np.ceil(arrival[done] / self.delta_t).astype(np.int64), n)
        ended = np.bincount(
            self._trip_end_node[done] * (n + 1) + end_step, minlength=self._n_nodes * (n + 1)
        ).reshape(self._n_nodes, n + 1) * float(self.deltan)
        released += np.cumsum(ended, axis=1)[:, :n]
        released = np.maximum.accumulate(released, axis=1)
        entry = np.full(nd.n_platoons, np.nan)
        origin = self._origin_of_ordered
        starts = np.searchsorted(origin, np.arange(self._n_nodes + 1))
        for o in np.flatnonzero(np.diff(starts)):
            members = self._origin_order[starts[o] : starts[o + 1]]
            need = (np.arange(len(members)) + 1) * self.deltan - 0.5
            step = np.searchsorted(released[o], need, side="left")
            t = step * self.delta_t
            t[step >= n] = np.nan
            entry[members] = t
        return entry
