"""Plain helpers and constants shared by several test modules (fixtures live in conftest.py).

Import them as ``from tests.helpers import ...``: ``tests/`` is a package, and pytest puts
the repository root on ``sys.path``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import psutil

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper

REPO = Path(__file__).resolve().parents[1]
"""The repository root."""

# ------------------------------------------------------------------ price profiles
UNEVEN = {"A": [0.9, 1.6, 1.1, 1.3], "B": [1.4, 0.8, 1.5, 1.0]}
"""A ``tiny`` profile with uneven prices across stations and periods."""

NEAR = {"A": [1.0, 1.1, 1.0, 1.2], "B": [1.1, 1.0, 1.2, 1.0]}
"""A ``tiny`` profile near the reference price, whose UE meets its stop rule."""

ORBITING = {"A": [1.79, 0.52, 1.57, 1.19], "B": [1.38, 0.72, 1.7, 1.07]}
"""A ``tiny`` profile whose UE never meets its rule at seed 0 (a uniform-random draw)."""

AVERAGE_PRICES = {"A": [1.0, 1.2, 0.9, 1.1], "B": [1.1, 0.9, 1.3, 1.0]}
"""The ``tiny`` profile of the seed-averaging tests."""

TASTE_PRICES = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5, 1.5, 0.8, 2.0]}
"""The ``tiny`` profile of the station-taste tests."""

# a profile with every price strictly inside [0.75, 1.75] for A: its 8 single-period bound
# moves and 16 nearby moves (±1, ±2 steps of 0.125) are all distinct (B's evaluate fast)
MIXED = np.array([[0.9, 1.1, 0.8, 1.3], [0.6, 0.6, 0.6, 0.6]])


def uniform(nd: evcs_gym.NetworkData, price: float) -> dict[str, np.ndarray]:
    """Every station of ``nd`` at ``price`` in every period."""
    return evcs_gym.uniform_prices(nd.agent_names, nd.n_periods, price)


def with_settings(nd: evcs_gym.NetworkData, **settings) -> evcs_gym.NetworkData:
    """``nd`` with some settings replaced, nothing prepared again."""
    return dataclasses.replace(nd, settings=dataclasses.replace(nd.settings, **settings))


def agent_arrays(res: evcs_gym.EvalResult, field: str) -> np.ndarray:
    """A per-station field of a result (``flows``, ``revenues``) stacked in agent order."""
    return np.stack([np.asarray(getattr(res, field)[a], dtype=float) for a in res.revenues])


# ------------------------------------------------------------ the two-route network
# (the ``two_routes`` fixture of conftest.py): O -> S1 -> D or O -> S2 -> D
SPEED = 20.0
SHORT, LONG = 2000.0, 2500.0  # each of the two legs of the S1 route / the S2 route
ENERGY = 10.0
TIME_VALUE = 0.005
CHARGING_LENGTH, CHARGING_SPEED = 3000.0, 10.0  # the charging link: 300 s

# ------------------------------------------------------------------ worker pools
SLOW_ITERATIONS = 60
"""UE iterations of every evaluation of the ``slow_tiny`` scenario (tests/parallel): about
0.4 s a task on a 2-core host, four times the 0.1 s timeouts of the pool tests."""


def price_vectors(nd: evcs_gym.NetworkData, n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {a: rng.uniform(0.8, 1.6, nd.n_periods).round(3) for a in nd.agent_names} for _ in range(n)
    ]


def bad_prices(nd: evcs_gym.NetworkData) -> dict:
    prices = {a: np.full(nd.n_periods, 1.0) for a in nd.agent_names}
    prices[nd.agent_names[1]][2] = 99.0
    return prices


def serial(nd: evcs_gym.NetworkData, batch: list[dict], seeds: list) -> list:
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    return [ev.evaluate(p, seed=s) for p, s in zip(batch, seeds)]


def helper_process(proc: psutil.Process) -> bool:
    """multiprocessing's fork server and resource tracker (live as long as the interpreter)."""
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return True  # already gone
    return (
        "multiprocessing.forkserver import main" in cmd
        or "multiprocessing.resource_tracker import main" in cmd
    )


def children() -> dict[int, psutil.Process]:
    return {p.pid: p for p in psutil.Process().children(recursive=True)}


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


# ------------------------------------------------------------------ envs and wrappers
ENV_PRICES = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5, 1.5, 1.5, 1.5]}
"""A ``tiny`` joint action of the PettingZoo game (prices per station and period)."""


def make_gym_env(**kwargs):
    """``EVCSPricing-v0`` on ``tiny``."""
    return gym.make("EVCSPricing-v0", scenario="tiny", **kwargs)


def history_env(tiny: evcs_gym.NetworkData, **kwargs):
    """The repeated game on ``tiny`` (``rounds`` 3 unless given)."""
    kwargs.setdefault("rounds", 3)
    return HistoryWrapper(evcs_gym.parallel_env(scenario=tiny), **kwargs)
