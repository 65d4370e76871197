"""Shared fixtures: the bundled scenarios (loaded once per session), scenario folders and
scripts of the repository. Plain helpers and constants are in ``tests/helpers.py``."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

import evcs_gym
from tests.helpers import (
    CHARGING_LENGTH,
    CHARGING_SPEED,
    ENERGY,
    LONG,
    REPO,
    SHORT,
    SPEED,
    TIME_VALUE,
)


@pytest.fixture(scope="session", autouse=True)
def _sb3_log_folder(tmp_path_factory):
    """Keep Stable-Baselines3's log folders in pytest's temporary tree.

    Every ``learn()`` without a log folder makes an (empty) ``$TMPDIR/SB3-<time>`` folder
    unless ``SB3_LOGDIR`` names one; without this, each test run left four in /tmp.
    """
    patch = pytest.MonkeyPatch()
    patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def _scenario_cache(tmp_path_factory):
    """Point the on-disk scenario cache (:mod:`evcs_gym.scenarios.cache`) at a folder of this
    test run: tests neither read a developer's entries nor leave their own behind. Worker
    processes inherit the variable. Under pytest-xdist the run's workers share the folder
    (the cache locks each entry), so a bundled scenario's warm start is computed once."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / "scenario_cache"
    folder.mkdir(exist_ok=True)
    patch = pytest.MonkeyPatch()
    patch.setenv("EVCS_GYM_CACHE_DIR", str(folder))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def tiny() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario("tiny")


@pytest.fixture(scope="session")
def siouxfalls() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario("siouxfalls")


@pytest.fixture(scope="module")
def tasty() -> evcs_gym.NetworkData:
    """``tiny`` with station tastes of scale 2 (heterogeneous drivers)."""
    return evcs_gym.load_scenario("tiny", station_taste_scale=2.0)


@pytest.fixture(scope="module")
def identical() -> evcs_gym.NetworkData:
    """``tiny`` with identical drivers (its bundled settings set scale 4)."""
    return evcs_gym.load_scenario("tiny", station_taste_scale=0.0)


def write_scenario(
    folder: Path,
    name: str,
    nodes: list[tuple],
    links: list[tuple],
    demand: list[tuple],
    settings: dict,
) -> Path:
    """Write a scenario folder in the bundled layout and return its path."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{name}_nodes.csv").write_text(
        "name,x,y\n" + "".join(f"{n},{x},{y}\n" for n, x, y in nodes)
    )
    (path / f"{name}_links.csv").write_text(
        "name,start,end,length,u,kappa,merge_priority\n"
        + "".join(",".join(str(v) for v in row) + "\n" for row in links)
    )
    (path / f"{name}_demand.csv").write_text(
        "orig,dest,start_t,end_t,q\n" + "".join(",".join(str(v) for v in r) + "\n" for r in demand)
    )
    (path / f"{name}_settings.json").write_text(json.dumps(settings, indent=2))
    return path


@pytest.fixture
def scenario_writer(tmp_path):
    def make(name="custom", **parts):
        return write_scenario(tmp_path, name, **parts)

    return make


@pytest.fixture
def two_routes(scenario_writer):
    """O -> S1 -> D (4,000 m) or O -> S2 -> D (5,000 m), a station on each, no congestion
    (constants in ``tests/helpers.py``)."""
    folder = scenario_writer(
        name="two_routes",
        nodes=[("O", 0, 0), ("S1", 1000, 500), ("S2", 1000, -500), ("D", 2000, 0)],
        links=[
            ("O-S1", "O", "S1", SHORT, SPEED, 0.2, 1),
            ("S1-D", "S1", "D", SHORT, SPEED, 0.2, 1),
            ("O-S2", "O", "S2", LONG, SPEED, 0.2, 1),
            ("S2-D", "S2", "D", LONG, SPEED, 0.2, 1),
        ],
        demand=[("O", "D", 0, 600, 0.05)],  # 30 vehicles, 6 platoons
        settings={
            "simulation_time": 3000,
            "deltan": 5,
            "charging_car_rate": 1.0,
            "charging_link_length": CHARGING_LENGTH,
            "charging_link_free_flow_speed": CHARGING_SPEED,
            "charging_periods": 1,
            "charging_nodes": {"S1": [0.5, 2.0], "S2": [0.5, 2.0]},
            "routes_per_od": 4,
            "time_value_coefficient": TIME_VALUE,
            "charging_demand_per_vehicle": ENERGY,
            "ue_convergence_threshold": 0.0005,
            "ue_max_iterations": 200,
        },
    )
    return evcs_gym.load_scenario(folder)


@pytest.fixture(scope="session")
def load_script():
    """``load_script("examples", "sb3_best_response")``: import a repository script by path
    (``folder`` may be nested: ``"benchmarks/studies"``)."""

    def load(folder: str, name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"{folder.replace('/', '_')}_{name}", REPO / folder / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while defined
        spec.loader.exec_module(module)
        return module

    return load
