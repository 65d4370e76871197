"""The on-disk cache of scenario preparation (:mod:`evcs_gym.scenarios.cache`): hits, keys, faults
(corrupt, truncated, foreign and tampered entries), concurrent loads, the CLI."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import evcs_gym
from evcs_gym.cli import main as cli_main
from evcs_gym.scenarios.cache import ENV_VAR, PreparationCache, default_cache_dir
from evcs_gym.scenarios.loader import scenario_folder


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """An empty cache folder of this test, and a cleared in-process memo."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(ENV_VAR, str(folder))
    evcs_gym.scenarios.loader._CACHE.clear()
    yield folder
    evcs_gym.scenarios.loader._CACHE.clear()


@pytest.fixture
def tiny_copy(tmp_path) -> Path:
    """A copy of the bundled tiny scenario that a test may edit."""
    folder = tmp_path / "tiny"
    shutil.copytree(scenario_folder("tiny"), folder)
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.npz"))


def fresh_load(folder: str | Path, **kwargs) -> evcs_gym.NetworkData:
    """Load as a new process would: the in-process memo cleared first."""
    evcs_gym.scenarios.loader._CACHE.clear()
    return evcs_gym.load_scenario(folder, **kwargs)


def prices(nd: evcs_gym.NetworkData, level: float = 1.0) -> dict[str, np.ndarray]:
    return {a: np.full(nd.n_periods, level) for a in nd.agent_names}


def test_a_cached_load_is_the_computed_one_bit_for_bit(cache_dir):
    first = fresh_load("tiny")
    assert not first.from_cache and len(entries(cache_dir)) == 1
    second = fresh_load("tiny")
    assert second.from_cache
    assert second.timings["computed"]["warm_start"] == first.timings["warm_start"]
    uncached = fresh_load("tiny", cache=False)
    assert second == first == uncached
    assert second.warm_start_info == uncached.warm_start_info
    np.testing.assert_array_equal(second.reference_traveltime, uncached.reference_traveltime)
    a = evcs_gym.EVCSRewardEvaluator(second).evaluate(prices(second), seed=5)
    b = evcs_gym.EVCSRewardEvaluator(uncached).evaluate(prices(uncached), seed=5)
    assert a.rewards == b.rewards
    assert a.ue_stats["revenue_history"] == b.ue_stats["revenue_history"]


def test_a_load_without_warm_start_has_its_own_entry(cache_dir):
    cold = fresh_load("tiny", warm_start=False)
    assert cold.warm_start_info == {"kind": "free_flow"}
    again = fresh_load("tiny", warm_start=False)
    assert again.from_cache and again == cold and again.reference_traveltime is None
    fresh_load("tiny")
    assert len(entries(cache_dir)) == 2


def test_a_second_load_in_a_new_process_reads_the_cache(cache_dir):
    code = (
        "import evcs_gym, json; nd = evcs_gym.load_scenario('tiny'); "
        "print(json.dumps([nd.from_cache, nd.initial_route_choice.tolist()]))"
    )
    env = {**os.environ, ENV_VAR: str(cache_dir)}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert [r[0] for r in runs] == [False, True]
    assert runs[0][1] == runs[1][1]


def test_the_key_covers_file_content_and_settings(cache_dir, tiny_copy):
    base = fresh_load(tiny_copy)
    demand = tiny_copy / "tiny_demand.csv"
    lines = demand.read_text().splitlines()
    head, first = lines[0], lines[1].split(",")
    first[-1] = str(float(first[-1]) * 1.5)  # more demand on the first row
    demand.write_text("\n".join([head, ",".join(first), *lines[2:]]) + "\n")
    edited = fresh_load(tiny_copy)
    assert not edited.from_cache and len(entries(cache_dir)) == 2
    assert edited.n_platoons > base.n_platoons
    overridden = fresh_load(tiny_copy, demand_multiplier=0.5)
    assert not overridden.from_cache and len(entries(cache_dir)) == 3
    assert fresh_load(tiny_copy, demand_multiplier=0.5).from_cache


def test_cache_false_neither_reads_nor_writes(cache_dir):
    nd = fresh_load("tiny", cache=False)
    assert not nd.from_cache
    assert not cache_dir.exists() or not entries(cache_dir)
    fresh_load("tiny")
    assert not fresh_load("tiny", cache=False).from_cache


def _damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _damage_garbage(path: Path) -> None:
    path.write_bytes(b"not a zip archive at all" * 100)


def _damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def _damage_tamper(path: Path) -> None:
    """A valid archive whose route-choice array was changed but not its checksum."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["initial_route_choice"] = arrays["initial_route_choice"].copy()
    arrays["initial_route_choice"][0] += 1
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _damage_no_meta(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("veh_group.npy", b"")


@pytest.mark.parametrize(
    "damage", [_damage_truncate, _damage_garbage, _damage_empty, _damage_tamper, _damage_no_meta]
)
def test_a_damaged_entry_is_logged_and_rebuilt(cache_dir, caplog, damage):
    good = fresh_load("tiny")
    (entry,) = entries(cache_dir)
    damage(entry)
    with caplog.at_level(logging.WARNING, logger="evcs_gym.scenarios.cache"):
        rebuilt = fresh_load("tiny")
    assert not rebuilt.from_cache and rebuilt == good
    assert any("discarding unreadable entry" in r.getMessage() for r in caplog.records)
    again = fresh_load("tiny")  # the rebuilt entry is whole again
    assert again.from_cache and again == good


def test_an_entry_under_another_key_is_not_read(cache_dir, caplog):
    tiny = fresh_load("tiny")
    fresh_load("tiny", warm_start=False)
    by_label = {_label(p): p for p in entries(cache_dir)}
    warm = next(p for label, p in by_label.items() if label.endswith("warm_start=True"))
    cold = next(p for label, p in by_label.items() if label.endswith("warm_start=False"))
    shutil.copyfile(cold, warm)  # the warm key now holds the cold start's arrays
    with caplog.at_level(logging.WARNING, logger="evcs_gym.scenarios.cache"):
        again = fresh_load("tiny")
    assert not again.from_cache and again == tiny
    assert any("names key" in r.getMessage() for r in caplog.records)


def _label(path: Path) -> str:
    with np.load(path, allow_pickle=False) as npz:
        return json.loads(str(npz["__meta__"]))["label"]


def _load_in_process(folder: str, barrier, queue) -> None:
    import evcs_gym as eg

    barrier.wait()
    nd = eg.load_scenario("tiny")
    queue.put((nd.from_cache, nd.initial_route_choice.tobytes()))


def test_concurrent_loads_compute_once_and_agree(cache_dir):
    ctx = multiprocessing.get_context("spawn")
    n = 3
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_load_in_process, args=("tiny", barrier, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(hit for hit, _ in results) == [False, True, True]
    assert len({choice for _, choice in results}) == 1
    assert len(entries(cache_dir)) == 1
    assert not list(cache_dir.glob("*.tmp"))


def test_an_unwritable_cache_costs_speed_not_the_result(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("the cache folder cannot be made under a file")
    monkeypatch.setenv(ENV_VAR, str(blocker / "cache"))
    evcs_gym.scenarios.loader._CACHE.clear()
    nd = fresh_load("tiny")
    assert not nd.from_cache and nd == fresh_load("tiny", cache=False)


def test_preparation_cache_api(tmp_path):
    cache = PreparationCache(tmp_path / "c")
    assert cache.entries() == [] and cache.clear() == 0 and cache.get("0" * 64) is None
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(4, dtype=np.int32)}

    key = "a" * 64
    first = cache.get_or_compute(key, compute, label="doc")
    second = cache.get_or_compute(key, compute)
    assert len(calls) == 1 and second["x"].dtype == np.int32
    np.testing.assert_array_equal(first["x"], second["x"])
    (entry,) = cache.entries()
    assert entry.key == key and entry.label == "doc" and entry.bytes > 0
    with pytest.raises(ValueError, match="cache key must be 64 lowercase hex digits"):
        cache.path("../escape")
    with pytest.raises(ValueError, match="reserved"):
        cache.put(key, {"__meta__": np.zeros(1)})
    assert cache.clear() == 1 and cache.entries() == []


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv(ENV_VAR)
    assert "evcs-gym" in str(default_cache_dir())


def test_cli_cache_list_dir_and_clear(cache_dir, capsys):
    fresh_load("tiny")
    assert cli_main(["cache", "dir"]) == 0
    assert capsys.readouterr().out.strip() == str(cache_dir)
    assert cli_main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "1 entries" in out and "tiny warm_start=True" in out
    assert cli_main(["cache", "clear"]) == 0
    assert "deleted 1 entries" in capsys.readouterr().out
    assert entries(cache_dir) == []
