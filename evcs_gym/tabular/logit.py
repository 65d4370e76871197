"""Calvano et al.'s logit market in closed form, and the same market as a scenario folder.

Calvano, Calzolari, Denicolò and Pastorello (AER 2020) let ``n`` firms of quality ``a_i``
and marginal cost ``c_i`` sell to consumers with an outside good of quality ``a_0``;
firm ``i``'s demand at prices ``p`` is the multinomial logit

    q_i = exp((a_i − p_i) / μ) / (Σ_j exp((a_j − p_j) / μ) + exp(a_0 / μ))

and its profit ``(p_i − c_i) q_i``. :class:`LogitMarket` computes demands and profits,
the one-shot Nash prices from the first-order conditions ``p_i − c_i = μ / (1 − q_i)``
and the prices that maximise total profit (both with SciPy), Calvano's grid and the
payoff table of the grid game, all without a simulator.

:meth:`LogitMarket.write_scenario` writes the same market as a scenario folder that the
simulator plays: one origin, one destination, a station on each of ``n`` equal roads and
a direct road for the outside option, no congestion (each road far below its capacity)
and no value of time, so every driver's cost is what the logit puts in it. Each driver
is a one-vehicle platoon buying one kWh (``charging_demand_per_vehicle``) at the
station's price ``p_i``; the energy cost is ``c`` (``energy_cost_per_kwh``); the taste
scale is μ (``station_taste_scale``, logit and quasi-random tastes); the outside option
costs ``a − a_0`` (``charging_outside_cost``), so a station's share against it is
``exp((a − a_0 − p_i) / μ)``, the logit's. The scenario needs firms of one quality and one
cost (the package has one energy cost for all stations). With ``N`` drivers a station's
reward is then ``N`` times its profit, up to the platoons' discreteness (quasi-random
tastes put the shares within a few drivers of the logit). The folder also gets
``<name>_references.json`` with the closed form's Nash and collusive prices, so
:func:`~evcs_gym.tabular.calvano_grid` and the collusion index work on it as on a market
game.

Example:
    >>> market = LogitMarket()  # Calvano's baseline: n = 2, a = 2, a0 = 0, μ = 1/4, c = 1
    >>> market.nash_prices().round(4).tolist(), market.monopoly_prices().round(4).tolist()
    ([1.4729, 1.4729], [1.925, 1.925])
    >>> market.profits(market.nash_prices()).round(4).tolist()
    [0.2229, 0.2229]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import fsolve, minimize

from evcs_gym.scenarios.loader import load_scenario
from evcs_gym.tabular.grid import PriceGrid, path_levels
from evcs_gym.tabular.table import PayoffTable

__all__ = ["LogitMarket"]

_ROAD = 2000.0
"""Length (m) of each station's road and of the direct road; 20 m/s on every one."""


@dataclass(frozen=True)
class LogitMarket:
    """Logit demand with an outside good (module docstring); defaults: Calvano's baseline.

    Attributes:
        a: each firm's quality ``a_i``.
        a0: the outside good's quality.
        mu: the logit scale μ (horizontal differentiation).
        c: each firm's marginal cost.
    """

    a: tuple[float, ...] = (2.0, 2.0)
    a0: float = 0.0
    mu: float = 0.25
    c: tuple[float, ...] = (1.0, 1.0)

    def __post_init__(self) -> None:
        if len(self.a) != len(self.c) or len(self.a) < 1:
            raise ValueError(f"`a` and `c` must hold one value per firm, got {self.a}, {self.c}")
        if not self.mu > 0:
            raise ValueError(f"`mu` must be positive, actually: {self.mu!r}")

    @property
    def n(self) -> int:
        return len(self.a)

    @property
    def agents(self) -> tuple[str, ...]:
        """The stations' names in the scenario folder: ``"1" … "n"``."""
        return tuple(str(i + 1) for i in range(self.n))

    def demand(self, prices: ArrayLike) -> np.ndarray:
        """``(..., n)`` logit shares at ``(..., n)`` prices."""
        p = np.asarray(prices, dtype=np.float64)
        util = (np.asarray(self.a) - p) / self.mu
        top = np.maximum(util.max(axis=-1, keepdims=True), self.a0 / self.mu)
        e = np.exp(util - top)
        return e / (e.sum(axis=-1, keepdims=True) + np.exp(self.a0 / self.mu - top))

    def profits(self, prices: ArrayLike) -> np.ndarray:
        """``(..., n)`` profits ``(p_i − c_i) q_i``."""
        p = np.asarray(prices, dtype=np.float64)
        return (p - np.asarray(self.c)) * self.demand(p)

    def nash_prices(self) -> np.ndarray:
        """The one-shot Nash prices: ``p_i − c_i = μ / (1 − q_i)`` for every firm."""
        c = np.asarray(self.c)

        def foc(p: np.ndarray) -> np.ndarray:
            return p - c - self.mu / (1.0 - self.demand(p))

        p, _, ok, msg = fsolve(foc, c + self.mu, xtol=1e-13, full_output=True)
        if ok != 1:  # pragma: no cover - the baseline and its variants converge
            raise RuntimeError(f"the Nash first-order conditions did not solve: {msg}")
        return np.asarray(p)

    def monopoly_prices(self) -> np.ndarray:
        """The prices that maximise the firms' total profit."""
        res = minimize(
            lambda p: -float(self.profits(p).sum()),
            self.nash_prices() + self.mu,
            method="Nelder-Mead",
            options={"xatol": 1e-11, "fatol": 1e-14, "maxiter": 20_000},
        )
        return np.asarray(res.x)

    def grid(self, m: int = 15, xi: float = 0.1) -> PriceGrid:
        """Calvano's grid: each firm's ``m`` prices from ``p_N − ξ (p_M − p_N)`` to
        ``p_M + ξ (p_M − p_N)`` (one period)."""
        t = path_levels(m, xi)
        pn, pm = self.nash_prices(), self.monopoly_prices()
        prices = pn[:, None] + t[None, :] * (pm - pn)[:, None]
        return PriceGrid(self.agents, prices[:, :, None], t)

    def table(self, grid: PriceGrid) -> PayoffTable:
        """The grid game's profits, with the continuous N and M as references."""
        levels = grid.levels(np.arange(grid.n_profiles))
        prices = grid.prices[np.arange(grid.n_agents), levels, 0]
        refs = {
            "nash": self.profits(self.nash_prices()),
            "collusive": self.profits(self.monopoly_prices()),
        }
        meta = {"market": "logit", "a": self.a, "a0": self.a0, "mu": self.mu, "c": self.c}
        return PayoffTable(grid, self.profits(prices), reference_rewards=refs, meta=meta)

    # ------------------------------------------------------------------ the scenario
    def scenario_settings(self, drivers: int, name: str) -> dict[str, Any]:
        """The settings of :meth:`write_scenario`'s folder."""
        if len(set(self.c)) != 1 or len(set(self.a)) != 1:
            raise ValueError(
                f"the scenario needs one quality and one cost for all firms, got `a` = "
                f"{self.a}, `c` = {self.c}"
            )
        pn, pm = self.nash_prices(), self.monopoly_prices()
        low = max(float(min(pn.min(), pm.min()) - 0.5), 0.0)
        high = float(max(pn.max(), pm.max()) + 0.5)
        return {
            "network_name": name,
            "simulation_time": 7200,
            "deltan": 1,
            "charging_car_rate": 1.0,
            "charging_link_length": 600,
            "charging_link_free_flow_speed": 10,
            "charging_periods": 1,
            "charging_nodes": {a: [low, high] for a in self.agents},
            "station_overrides": {a: {"number_of_lanes": 4} for a in self.agents},
            "routes_per_od": self.n,
            "time_value_coefficient": 0.0,
            "charging_demand_per_vehicle": 1.0,
            "energy_cost_per_kwh": float(self.c[0]),
            "station_taste_scale": self.mu,
            "station_taste_logit": True,
            "station_taste_quasi_random": True,
            "charging_outside_cost": float(self.a[0] - self.a0),
            "ue_tolerance_scale": 0.1,
            "ue_price_aware_start_gap": 0.0,
            "reward_scale": float(drivers),
            "flow_scale_factor": float(drivers),
        }

    def write_scenario(self, folder: str | Path, drivers: int = 1000, name: str = "logit") -> Path:
        """Write the market as scenario folder ``folder/name`` and return its path.

        Args:
            folder: where the scenario folder goes.
            drivers: one-vehicle platoons, all charging, departing over the first hour.
            name: the scenario's name.
        """
        path = Path(folder) / name
        path.mkdir(parents=True, exist_ok=True)
        nodes = [("O", 0, 0), ("D", _ROAD, 0)]
        links = [("O-D", "O", "D", _ROAD)]
        for i, a in enumerate(self.agents):
            y = 500 * (i + 1)
            nodes.append((a, _ROAD / 2, y))
            links += [(f"O-{a}", "O", a, _ROAD / 2), (f"{a}-D", a, "D", _ROAD / 2)]
        _write_csv(path / f"{name}_nodes.csv", "name,x,y", nodes)
        _write_csv(
            path / f"{name}_links.csv",
            "name,start,end,length,u,kappa,merge_priority",
            [(*row, 20, 0.2, 1) for row in links],
        )
        demand = [("O", "D", 0, 3600, drivers / 3600)]
        _write_csv(path / f"{name}_demand.csv", "orig,dest,start_t,end_t,q", demand)
        settings = self.scenario_settings(drivers, name)
        (path / f"{name}_settings.json").write_text(json.dumps(settings, indent=2))
        self._write_references(path, name)
        return path

    def _write_references(self, path: Path, name: str) -> None:
        nd = load_scenario(path)
        refs: dict[str, Any] = {"settings_hash": nd.settings_hash}
        for kind, prices in (("nash", self.nash_prices()), ("collusive", self.monopoly_prices())):
            refs[kind] = {
                "prices": {a: [float(p)] for a, p in zip(self.agents, prices)},
                "how": f"LogitMarket{(self.a, self.a0, self.mu, self.c)}: the closed form",
            }
        (path / f"{name}_references.json").write_text(json.dumps(refs, indent=2))


def _write_csv(path: Path, header: str, rows: list[tuple]) -> None:
    path.write_text(header + "\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows))
