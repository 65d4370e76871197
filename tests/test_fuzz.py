"""Hostile input, fuzzed with Hypothesis: scenario folders, price inputs, env actions and
cache files.

Every generated case must end in one of two ways: it works (and the result is sane:
finite rewards), or it raises the package's own clear error (``ScenarioError``,
``PriceError`` or ``ValueError``) whose message names the file, field or argument. A
crash inside the simulator, any other exception type, a hang or a silent wrong result
fails the test.

Example counts: the ``ci`` profile (the default) keeps the suite within its time; set
``HYPOTHESIS_PROFILE=long`` for a long run (``pytest tests/test_fuzz.py -s`` prints
how many cases each test ran). Long runs on 2026-11-29: 2,000 cases of every test, all
passing (the damaged-cache test's took 605 s on 2 cores).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import evcs_gym
from evcs_gym.errors import PriceError, ScenarioError
from evcs_gym.scenarios.loader import scenario_folder
from evcs_gym.seeds import check_seed

settings.register_profile(
    "ci",  # the same cases at every run: CI never fails on a newly drawn case
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")

# ------------------------------------------------------------------ scenario folders
TINY = scenario_folder("tiny")
FILES = {
    "nodes": "tiny_nodes.csv",
    "links": "tiny_links.csv",
    "demand": "tiny_demand.csv",
}


def _read_table(name: str) -> list[list[str]]:
    with open(TINY / name, newline="") as f:
        return [row for row in csv.reader(f)]


BASE_TABLES = {kind: _read_table(name) for kind, name in FILES.items()}
BASE_SETTINGS = json.loads((TINY / "tiny_settings.json").read_text())

BAD_CELLS = st.sampled_from(
    [
        "",
        " ",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "-1",
        "0",
        "-0",
        "abc",
        "1e400",
        "1e308",
        "1,5",
        "None",
        "1e-300",
        "-1e-9",
        "ZZ",
        "A",
        "1",
        "5",
        "3e9",
        "0x10",
    ]  # fmt: skip
)
BAD_SETTING_VALUES = st.one_of(
    st.sampled_from([None, "", "x", [], {}, True, [1, 2], {"a": 1}]),
    st.sampled_from([-1, 0, 1, 2, 0.5, 1e9, 1e300, -1e-9, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**15), max_value=10**15),
)


@st.composite
def mutated_scenarios(draw):
    """The tiny scenario with one to three hostile edits; returns (tables, settings, notes)."""
    tables = {kind: [list(r) for r in rows] for kind, rows in BASE_TABLES.items()}
    config = json.loads(json.dumps(BASE_SETTINGS))
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                [
                    "cell",
                    "drop_column",
                    "empty_file",
                    "add_row",
                    "drop_rows",
                    "setting",
                    "drop_setting",
                    "station",
                    "bounds",
                ]  # fmt: skip
            )
        )
        if kind in ("cell", "drop_column", "empty_file", "add_row", "drop_rows"):
            table = draw(st.sampled_from(sorted(tables)))
            rows = tables[table]
            if kind == "cell" and len(rows) > 1:
                r = draw(st.integers(1, len(rows) - 1))
                c = draw(st.integers(0, len(rows[r]) - 1))
                rows[r][c] = draw(BAD_CELLS)
                edits.append(
                    f"{table}[{r}][{rows[0][c] if c < len(rows[0]) else c}]={rows[r][c]!r}"
                )
            elif kind == "drop_column" and rows and rows[0]:
                c = draw(st.integers(0, len(rows[0]) - 1))
                edits.append(f"{table}: drop column {rows[0][c]!r}")
                for row in rows:
                    if c < len(row):
                        del row[c]
            elif kind == "empty_file":
                edits.append(f"{table}: empty")
                tables[table] = draw(st.sampled_from([[], [rows[0]] if rows else []]))
            elif kind == "add_row" and rows:
                row = [draw(BAD_CELLS) for _ in rows[0]]
                edits.append(f"{table}: add {row}")
                rows.append(row)
            elif kind == "drop_rows" and len(rows) > 1:
                keep = draw(st.integers(0, len(rows) - 2))
                edits.append(f"{table}: keep {keep} rows")
                tables[table] = rows[: 1 + keep]
        elif kind == "setting":
            key = draw(st.sampled_from(sorted(BASE_SETTINGS) + ["ue_max_iterations", "bogus"]))
            config[key] = draw(BAD_SETTING_VALUES)
            edits.append(f"settings[{key}]={config[key]!r}")
        elif kind == "drop_setting":
            key = draw(st.sampled_from(sorted(config)))
            config.pop(key, None)
            edits.append(f"settings: drop {key}")
        elif kind == "station":
            node = draw(st.sampled_from(["A", "B", "Z", "", "1", "sink_5"]))
            config["charging_nodes"] = {node: [0.5, 2.0]}
            edits.append(f"station {node!r}")
        elif kind == "bounds":
            low, high = draw(BAD_SETTING_VALUES), draw(BAD_SETTING_VALUES)
            config["charging_nodes"] = {"A": [low, high], "B": [0.5, 2.0]}
            edits.append(f"bounds A={[low, high]!r}")
    return tables, config, edits


def _write(folder: Path, tables: dict, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for kind, name in FILES.items():
        buf = io.StringIO()
        csv.writer(buf).writerows(tables[kind])
        (folder / name).write_text(buf.getvalue())
    try:
        text = json.dumps(config, allow_nan=True)
    except (TypeError, ValueError):
        text = str(config)  # not JSON at all: the loader must say so
    (folder / "tiny_settings.json").write_text(text)
    return folder


NAMED = ("tiny_nodes.csv", "tiny_links.csv", "tiny_demand.csv", "tiny_settings.json")


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow or NaN cast is a silent fault
@settings(settings.get_profile(PROFILE))
@given(case=mutated_scenarios())
def test_hostile_scenario_folders_fail_clearly_or_load_sanely(case, tmp_path_factory):
    tables, config, edits = case
    note(f"edits: {edits}")
    folder = _write(tmp_path_factory.mktemp("scenario") / "tiny", tables, config)
    try:
        nd = evcs_gym.load_scenario(folder, warm_start=False, cache=False)
    except ScenarioError as e:
        named = [name for name in NAMED if name in str(e)]
        assert named, f"error names no file: {e}"
        event(f"ScenarioError naming {named[0]}")
        return
    # it loaded: one short evaluation must work and give finite rewards
    ev = evcs_gym.EVCSRewardEvaluator(
        evcs_gym.load_scenario(folder, warm_start=False, cache=False, ue_max_iterations=2)
    )
    lows = {a: np.full(nd.n_periods, lo) for a, (lo, _) in nd.price_bounds.items()}
    res = ev.evaluate(lows, seed=0)
    assert all(math.isfinite(r) for r in res.rewards.values())
    event("loaded and evaluated")


# ------------------------------------------------------------------ prices
@pytest.fixture(scope="module")
def tiny_evaluator() -> evcs_gym.EVCSRewardEvaluator:
    return evcs_gym.EVCSRewardEvaluator(evcs_gym.load_scenario("tiny"))


PRICE_LEAVES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.sampled_from([None, "1.0", "abc", b"1", True, [], {}, 1 + 2j, np.float32(1.0)]),
)


def price_values(n_periods: int):
    return st.one_of(
        PRICE_LEAVES,
        st.lists(PRICE_LEAVES, min_size=0, max_size=n_periods + 2),
        st.builds(
            np.array,
            st.lists(st.floats(0.0, 3.0), min_size=n_periods, max_size=n_periods),
            dtype=st.sampled_from([np.float64, np.float32, np.int64, object, np.float16]),
        ),
        st.lists(st.lists(st.floats(0.5, 2.0), min_size=1, max_size=3), min_size=1, max_size=4),
    )


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_hostile_prices_raise_price_errors_naming_the_station(tiny_evaluator, data):
    nd = tiny_evaluator.network
    keys = data.draw(
        st.lists(st.sampled_from([*nd.agent_names, "Z", "", 0, None]), max_size=4, unique=True)
    )
    prices = {k: data.draw(price_values(nd.n_periods)) for k in keys}
    if data.draw(st.booleans()):
        prices = data.draw(st.sampled_from([prices, list(prices.values()), None, 1.0, "A"]))
    note(f"prices: {prices!r}")
    try:
        matrix = tiny_evaluator.check_prices(prices)
    except PriceError as e:
        assert isinstance(e, ValueError)
        message = str(e)
        assert "price" in message, message
        return
    # accepted: exactly the stations, finite and inside the bounds
    assert matrix.shape == (nd.n_agents, nd.n_periods) and np.isfinite(matrix).all()
    for i, (lo, hi) in enumerate(nd.price_bounds.values()):
        assert (matrix[i] >= lo).all() and (matrix[i] <= hi).all()


@settings(settings.get_profile(PROFILE))
@given(
    seed=st.one_of(
        st.integers(-(10**30), 10**30),
        st.floats(),
        st.sampled_from(["1", None, [1], True, np.int64(3), 2**64]),
    )
)
def test_hostile_seeds_fail_clearly(tiny_evaluator, seed):
    nd = tiny_evaluator.network
    lows = {a: np.full(nd.n_periods, lo) for a, (lo, _) in nd.price_bounds.items()}
    try:
        check_seed(nd.settings.default_seed if seed is None else seed)
    except ValueError as e:
        assert "seed" in str(e), str(e)
        with pytest.raises(ValueError, match="seed"):
            tiny_evaluator.evaluate(lows, seed=seed)
        return
    res = tiny_evaluator.evaluate(lows, seed=seed)
    assert all(math.isfinite(r) for r in res.rewards.values())


# ------------------------------------------------------------------ env actions
@pytest.fixture(scope="module")
def gym_env():
    import gymnasium as gym

    env = gym.make("EVCSPricing-v0", scenario="tiny")
    env.reset(seed=0)
    yield env
    env.close()


@pytest.fixture(scope="module")
def parallel_env():
    env = evcs_gym.parallel_env(scenario="tiny")
    env.reset(seed=0)
    yield env
    env.close()


ACTION_LEAVES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([None, "x", [], {}, True]),
)


def actions(shape: tuple[int, ...]):
    return st.one_of(
        ACTION_LEAVES,
        st.builds(
            np.array,
            st.lists(st.floats(-3, 3, width=32), min_size=0, max_size=int(np.prod(shape)) + 3),
            dtype=st.sampled_from([np.float32, np.float64, np.int64, np.float16, object]),
        ),
        st.builds(
            lambda a, dt: np.asarray(a, dtype=dt),
            st.lists(
                st.floats(allow_nan=True, allow_infinity=True, width=32),
                min_size=int(np.prod(shape)),
                max_size=int(np.prod(shape)),
            ).map(lambda v: np.reshape(v, shape)),
            st.sampled_from([np.float32, np.float64]),
        ),
        st.lists(ACTION_LEAVES, max_size=4),
    )


def _step_or_clear_error(env, action) -> tuple | None:
    """``env.step(action)``, or None after checking that its error names the action."""
    try:
        return env.step(action)
    except (ValueError, TypeError) as e:
        assert "action" in str(e).lower(), str(e)
        return None


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_hostile_gym_actions_fail_clearly(gym_env, data):
    space = gym_env.action_space
    action = data.draw(actions(space.shape))
    note(f"action: {action!r}")
    gym_env.reset(seed=0)
    stepped = _step_or_clear_error(gym_env, action)
    if stepped is None:
        return
    reward = stepped[1]
    # accepted: the right number of finite values (outside the box they are clipped)
    values = np.asarray(action, dtype=np.float64)
    assert values.size == int(np.prod(space.shape)) and np.isfinite(values).all(), values
    assert math.isfinite(reward)


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_hostile_parallel_actions_fail_clearly(parallel_env, data):
    agents = parallel_env.possible_agents
    shape = parallel_env.action_space(agents[0]).shape
    keys = data.draw(st.lists(st.sampled_from([*agents, "Z", 0]), max_size=3, unique=True))
    acts = {k: data.draw(actions(shape)) for k in keys}
    note(f"actions: {acts!r}")
    parallel_env.reset(seed=0)
    stepped = _step_or_clear_error(parallel_env, acts)
    if stepped is None:
        return
    rewards = stepped[1]
    assert set(acts) == set(agents)
    assert all(math.isfinite(r) for r in rewards.values())


# ------------------------------------------------------------------ cache files
@settings(settings.get_profile(PROFILE))
@given(
    cut=st.floats(0.0, 1.0),
    flip=st.integers(0, 2**31),
    mode=st.sampled_from(["truncate", "flip", "append"]),
)
def test_damaged_cache_entries_never_give_a_wrong_result(tmp_path_factory, cut, flip, mode):
    folder = tmp_path_factory.mktemp("cache")
    old = os.environ.get("EVCS_GYM_CACHE_DIR")
    os.environ["EVCS_GYM_CACHE_DIR"] = str(folder)
    try:
        evcs_gym.scenarios.loader._CACHE.clear()
        good = evcs_gym.load_scenario("tiny")
        (entry,) = folder.glob("*.npz")
        data = bytearray(entry.read_bytes())
        if mode == "truncate":
            data = data[: int(len(data) * cut)]
        elif mode == "flip":
            i = flip % len(data)
            data[i] ^= 1 + flip % 255
        else:
            data += bytes([flip % 256]) * (1 + flip % 64)
        entry.write_bytes(bytes(data))
        evcs_gym.scenarios.loader._CACHE.clear()
        again = evcs_gym.load_scenario("tiny")
        assert again == good
        assert again.warm_start_info == good.warm_start_info
    finally:
        evcs_gym.scenarios.loader._CACHE.clear()
        if old is None:
            os.environ.pop("EVCS_GYM_CACHE_DIR", None)
        else:
            os.environ["EVCS_GYM_CACHE_DIR"] = old
        shutil.rmtree(folder, ignore_errors=True)
