"""Vectorised route costs: every platoon × every route of its set, from link travel times.

For each (platoon, route) pair the trip is walked link by link, from the time the
platoon left its origin queue, through the time-dependent travel-time table of the last
simulation (numpy, all pairs at once):
the arrival time gives the time cost, the entry time of the charging link gives the
pricing period and so the charging cost. With heterogeneous drivers
(``station_taste_scale`` > 0) a charging route also costs the platoon's fixed taste for
its station (:func:`station_tastes`). With an outside option
(``charging_outside_cost``), a charging platoon's routes that pass no station cost
their travel time plus that fixed cost (and the platoon's taste for the outside option).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import qmc

from evcs_gym.network import NetworkData

__all__ = ["PairCosts", "RouteCoster", "relative_gap", "station_tastes"]

_TASTE_DOMAIN = 0x54415354  # "TAST": the taste stream, apart from every other use of a seed


def station_tastes(network: NetworkData) -> np.ndarray:
    """Each platoon's fixed taste for each station, (n_platoons, n_agents), in currency.

    Gumbel draws of scale ``settings.station_taste_scale`` from
    ``settings.station_taste_seed``, shifted so that each platoon's smallest taste is 0
    (differences, which alone drive choices, are logistic: identical platoons split
    between two equally dear stations like a logit model of that scale; with
    ``station_taste_logit`` the draws are negated, so shares among any number of
    alternatives follow the multinomial logit; with ``station_taste_quasi_random`` they
    are quasi-random, a scrambled Halton sequence through the Gumbel quantiles). Zero for
    non-charging platoons and when the scale is 0. A function of the scenario alone.
    With an outside option (``charging_outside_cost``) one more column, the last, holds
    the taste for it: (n_platoons, n_agents + 1).

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny", warm_start=False, station_taste_scale=2.0)
        >>> taste = station_tastes(nd)
        >>> taste.shape == (nd.n_platoons, nd.n_agents), bool(taste.min(axis=1).max() == 0)
        (True, True)
        >>> bool((taste[~nd.veh_charging] == 0).all())
        True
    """
    s = network.settings
    alternatives = network.n_agents + (s.charging_outside_cost is not None)
    shape = (network.n_platoons, alternatives)
    if s.station_taste_scale == 0:
        return np.zeros(shape)
    seed = np.random.SeedSequence([_TASTE_DOMAIN, s.station_taste_seed])
    if s.station_taste_quasi_random:
        taste = np.zeros(shape)
        halton = qmc.Halton(d=alternatives, scramble=True, seed=np.random.default_rng(seed))
        u = halton.random(int(network.veh_charging.sum()))  # in (0, 1): scrambled
        taste[network.veh_charging] = -s.station_taste_scale * np.log(-np.log(u))  # Gumbel
    else:
        taste = np.random.default_rng(seed).gumbel(0.0, s.station_taste_scale, size=shape)
    if s.station_taste_logit:  # cost minus a Gumbel draw: the multinomial logit
        np.negative(taste, out=taste)
    taste -= taste.min(axis=1, keepdims=True)
    taste[~network.veh_charging] = 0.0
    return taste


@dataclass
class PairCosts:
    """Costs of all (platoon, route) pairs, shaped (n_platoons, k); +inf where no route."""

    cost: np.ndarray
    travel_time: np.ndarray
    charge_entry: np.ndarray
    """Estimated entry time into the charging link (NaN for non-charging routes)."""
    price_cost: np.ndarray


class RouteCoster:
    """Precomputes the (platoon, route) pair tables of one scenario."""

    def __init__(self, network: NetworkData) -> None:
        nd = network
        s = nd.settings
        self.network = nd
        self.delta_t = float(s.deltan)
        self.n_steps = int(s.simulation_time / self.delta_t)
        self.time_value = s.time_value_coefficient
        self.energy = s.charging_demand_per_vehicle
        self.period_length = s.period_length
        self.n_periods = s.charging_periods
        routes = nd.group_routes[nd.veh_group]  # (V, k)
        self.shape = routes.shape
        valid = routes >= 0
        self.pair_veh, self.pair_slot = np.nonzero(valid)
        self.pair_route = routes[valid]
        self.routes = routes
        lengths = np.diff(nd.route_offsets)
        lmax = int(lengths.max()) if len(lengths) else 0
        mat = np.full((nd.n_routes, lmax), -1, dtype=np.int64)
        col = np.arange(lmax)
        mask = col[None, :] < lengths[:, None]
        mat[mask] = nd.route_links
        # pairs sorted by route length (longest first): column j of the walk then only
        # touches a prefix of the pairs, without masks
        pair_len = lengths[self.pair_route]
        order = np.argsort(-pair_len, kind="stable")
        self.pair_veh = self.pair_veh[order]
        self.pair_slot = self.pair_slot[order]
        self.pair_route = self.pair_route[order]
        self.pair_links = np.ascontiguousarray(mat[self.pair_route].T)  # (lmax, n_pairs)
        # row offsets into the flattened (n_links, n_steps) travel-time table
        self._pair_link_rows = self.pair_links * self.n_steps
        self._flat_pair = np.ravel_multi_index((self.pair_veh, self.pair_slot), self.shape)
        self._active = [int((pair_len[order] > j).sum()) for j in range(lmax)]
        self.pair_charge_pos = nd.route_charge_position[self.pair_route]
        self._at_charge = [np.flatnonzero(self.pair_charge_pos == j) for j in range(lmax)]
        charge_link = nd.route_charging_link[self.pair_route]
        self.pair_station = np.where(charge_link >= 0, nd.links.station[charge_link], -1)
        self.pair_departure = nd.veh_departure[self.pair_veh]
        self.outside_cost = s.charging_outside_cost
        # a charging platoon on a route through no station: the outside option
        self.pair_outside = (self.pair_station < 0) & nd.veh_charging[self.pair_veh]
        self.pair_taste = None
        if s.station_taste_scale > 0:
            column = np.where(self.pair_outside, nd.n_agents, np.maximum(self.pair_station, 0))
            taste = station_tastes(nd)[self.pair_veh, column]
            self.pair_taste = np.where((self.pair_station >= 0) | self.pair_outside, taste, 0.0)
        self.lmax = lmax

    def compute(
        self,
        traveltime: np.ndarray,
        prices: np.ndarray,
        network_entry: np.ndarray | None = None,
    ) -> PairCosts:
        """Costs of every pair given link travel times (n_links, n_steps) and prices.

        ``network_entry`` (n_platoons,) is when each platoon entered its first link after
        waiting at its origin (:attr:`SimulationOutput.network_entry`); every route of the
        platoon is walked from it (the origin queue is FIFO whatever the route), and the
        wait counts in the travel time. ``None`` or NaN: walk from the departure time.
        """
        n = self.n_steps
        flat_tt = traveltime.ravel()
        t = self.pair_departure.copy()
        if network_entry is not None:
            start = network_entry[self.pair_veh]
            t = np.where(np.isnan(start), t, start)
        charge_entry = np.full(len(t), np.nan)
        step = np.empty(len(t))
        idx = np.empty(len(t), dtype=np.int64)
        for j in range(self.lmax):
            m = self._active[j]
            at = self._at_charge[j]
            charge_entry[at] = t[at]
            # idx = min(floor(t / delta_t), n - 1) + the link's row offset, in place
            np.divide(t[:m], self.delta_t, out=step[:m])
            np.copyto(idx[:m], step[:m], casting="unsafe")
            np.minimum(idx[:m], n - 1, out=idx[:m])
            idx[:m] += self._pair_link_rows[j, :m]
            t[:m] += flat_tt[idx[:m]]
        travel = t - self.pair_departure
        charging = self.pair_station >= 0
        period = np.minimum(
            (np.nan_to_num(charge_entry) / self.period_length).astype(np.int64), self.n_periods - 1
        )
        price = np.where(charging, prices[np.maximum(self.pair_station, 0), period], 0.0)
        price_cost = price * self.energy
        if self.outside_cost is not None:
            price_cost = np.where(self.pair_outside, self.outside_cost, price_cost)
        cost = self.time_value * travel + price_cost
        if self.pair_taste is not None:
            cost += self.pair_taste
        out = []
        for values, fill in (
            (cost, np.inf),
            (travel, np.inf),
            (charge_entry, np.nan),
            (price_cost, np.inf),
        ):
            full = np.full(self.shape, fill)
            full.ravel()[self._flat_pair] = values
            out.append(full)
        return PairCosts(*out)


def relative_gap(cost: np.ndarray, slot: np.ndarray, best_slot: np.ndarray) -> np.ndarray:
    """``(cost_own - cost_best) / cost_own`` per platoon (0 where the own cost is 0).

    Example:
        >>> relative_gap(np.array([[4.0, 3.0]]), np.array([0]), np.array([1])).tolist()
        [0.25]
    """
    rows = np.arange(len(slot))
    own = cost[rows, slot]
    gap = np.zeros(len(own))
    ok = own > 0
    gap[ok] = (own[ok] - cost[rows, best_slot][ok]) / own[ok]
    return gap
