"""Scenario settings (evcs_gym.network.settings): conversion and range checks naming the
key, the stop rule's tolerances, the digest; FAST_STOP_SETTINGS."""

from __future__ import annotations

import dataclasses

import pytest

import evcs_gym
from evcs_gym.errors import ScenarioError
from evcs_gym.network.settings import (
    FAST_STOP_SETTINGS,
    STOP_SETTINGS,
    ScenarioSettings,
    StationOverride,
    convert_setting,
    link_cells,
)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"deltan": 0}, "`deltan` must be positive, got 0"),
        ({"charging_car_rate": 1.5}, r"`charging_car_rate` must be in \[0, 1\], got 1.5"),
        ({"routes_per_od": 2.5}, "`routes_per_od` must be an integer, got 2.5"),
        ({"time_value_coefficient": "fast"}, "`time_value_coefficient` must be a number"),
        ({"station_overrides": {"Z": {"length": 10}}}, "names 'Z', which is not in"),
        ({"warm_start_gap_ratio": 0}, r"`warm_start_gap_ratio` must be in \(0, 1\], got 0"),
        ({"warm_start_gap_ratio": 1.5}, r"`warm_start_gap_ratio` must be in \(0, 1\], got 1.5"),
    ],
)
def test_bad_setting_values(override, message):
    with pytest.raises(ScenarioError, match=message):
        evcs_gym.load_scenario("tiny", **override)


def test_tolerance_scale_scales_every_tolerance():
    base = evcs_gym.ScenarioSettings().stop_tolerances
    half = evcs_gym.ScenarioSettings(ue_tolerance_scale=0.5).stop_tolerances
    for key in ("mean_gap", "charging_mean_gap", "charging_tail_gap", "charging_tail_share"):
        assert half[key] == pytest.approx(base[key] / 2)
    assert 1 - half["min_completed_ratio"] == pytest.approx((1 - base["min_completed_ratio"]) / 2)


@pytest.mark.parametrize("value", [0, -0.5])
def test_tolerance_scale_must_be_positive(value):
    with pytest.raises(evcs_gym.ScenarioError, match="`ue_tolerance_scale` must be positive"):
        evcs_gym.load_scenario("tiny", ue_tolerance_scale=value)


def test_price_aware_start_setting_is_a_bool():
    with pytest.raises(evcs_gym.ScenarioError, match="`ue_price_aware_start` must be true"):
        evcs_gym.load_scenario("tiny", ue_price_aware_start=1)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ue_payoff_precision", -0.01),
        ("ue_payoff_precision", 1.0),
        ("ue_payoff_min_iterations", 0),
        ("ue_payoff_min_iterations", 2.5),
        ("ue_payoff_min_window", 1),
        ("ue_payoff_floor", 1.5),
    ],
)
def test_payoff_settings_are_checked(key, value):
    with pytest.raises(evcs_gym.ScenarioError, match=key):
        evcs_gym.ScenarioSettings.from_mapping({"charging_nodes": {"A": [0.5, 2]}, key: value})


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("station_taste_scale", -1.0, "station_taste_scale"),
        ("station_taste_scale", float("nan"), "station_taste_scale"),
        ("station_taste_seed", -3, "station_taste_seed"),
        ("station_taste_seed", 1.5, "station_taste_seed"),
        ("charging_outside_cost", -1.0, r"`charging_outside_cost` must be >= 0 or null"),
        ("charging_outside_cost", float("inf"), "`charging_outside_cost` must be finite"),
        ("charging_outside_cost", "home", "`charging_outside_cost` must be a number or null"),
        ("charging_chargers", 0, r"`charging_chargers` must be > 0 or null, got 0"),
        ("charging_chargers", "many", "`charging_chargers` must be a number or null"),
        ("ue_price_aware_start_gap", -0.1, r"`ue_price_aware_start_gap` must be >= 0 or null"),
        ("ue_stop_settled_ratio", 0, r"`ue_stop_settled_ratio` must be > 0 or null, got 0"),
        ("ue_stop_settled_ratio", "long", "`ue_stop_settled_ratio` must be a number or null"),
        ("station_taste_logit", 1, "`station_taste_logit` must be true or false"),
        ("station_taste_quasi_random", "yes", "`station_taste_quasi_random` must be true"),
    ],
)
def test_bad_values_name_the_setting(key, value, match):
    with pytest.raises(ScenarioError, match=match):
        evcs_gym.load_scenario("tiny", warm_start=False, **{key: value})


# ------------------------------------------------------------------ conversion
@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("deltan", 10.0, 10),  # JSON's 10.0 for an integer setting
        ("time_value_coefficient", 1, 1.0),
        ("ue_price_aware_start", False, False),
        ("warm_start_price", None, None),
        ("charging_nodes", {"A": [1, 2]}, {"A": (1.0, 2.0)}),
        ("station_overrides", {"A": {"length": 600}}, {"A": StationOverride(length=600)}),
    ],
)
def test_convert_setting_gives_the_fields_type(name, raw, expected):
    value = convert_setting(name, raw)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("name", "raw", "match"),
    [
        ("deltan", 2.5, "`deltan` must be an integer, got 2.5"),
        ("deltan", True, "`deltan` must be an integer, got True"),
        ("time_value_coefficient", float("inf"), "`time_value_coefficient` must be finite"),
        ("time_value_coefficient", "0.1", "`time_value_coefficient` must be a number"),
        ("network_name", 3, "`network_name` must be a string"),
        (
            "charging_nodes",
            {"A": [1.0]},
            r"`charging_nodes`\['A'\] must be \[price_min, price_max\]",
        ),
        ("station_overrides", {"A": {"size": 1}}, r"`station_overrides`\['A'\] must be a map"),
        ("station_overrides", {"A": {"length": -1}}, r"`station_overrides`\['A'\].length must"),
    ],
)
def test_convert_setting_names_the_source_and_key(name, raw, match):
    with pytest.raises(ScenarioError, match="^my.json: " + match):
        convert_setting(name, raw, source="my.json")


def test_from_mapping_names_unknown_keys_and_checks_ranges():
    nodes = {"charging_nodes": {"A": [0.5, 2]}}
    s = ScenarioSettings.from_mapping({**nodes, "deltan": 10.0}, source="my.json")
    assert s.deltan == 10 and s.charging_nodes == {"A": (0.5, 2.0)}
    with pytest.raises(ScenarioError, match=r"^my.json: unknown setting key\(s\) \['detlan'\]"):
        ScenarioSettings.from_mapping({**nodes, "detlan": 5}, source="my.json")
    with pytest.raises(ScenarioError, match=r"^my.json: `charging_car_rate` must be in \[0, 1\]"):
        ScenarioSettings.from_mapping({**nodes, "charging_car_rate": -0.1}, source="my.json")
    with pytest.raises(ScenarioError, match="`charging_nodes` must name at least one station"):
        ScenarioSettings.from_mapping({})


# ------------------------------------------------------------------ derived values
def test_digest_names_the_game():
    a = ScenarioSettings(charging_nodes={"A": (0.5, 2.0)})
    assert len(a.digest) == 12 and int(a.digest, 16) >= 0
    assert a.digest == ScenarioSettings(charging_nodes={"A": (0.5, 2.0)}).digest
    for change in ({"deltan": 10}, {"charging_nodes": {"A": (0.5, 2.5)}}, {"default_seed": 1}):
        assert dataclasses.replace(a, **change).digest != a.digest, change


def test_period_length_and_link_cells():
    s = ScenarioSettings(simulation_time=7200.0, charging_periods=8)
    assert s.period_length == 900.0
    assert link_cells(length=1000.0, free_flow_speed=10.0, deltan=5) == 20.0


def test_stop_settings_are_fields_and_fast_stop_settings_are_stop_settings():
    fields = {f.name for f in dataclasses.fields(ScenarioSettings)}
    assert set(STOP_SETTINGS) <= fields
    assert set(FAST_STOP_SETTINGS) <= set(STOP_SETTINGS)
    with pytest.raises(TypeError):
        FAST_STOP_SETTINGS["ue_payoff_precision"] = 0.5  # read-only
    fast = dataclasses.replace(ScenarioSettings(), **FAST_STOP_SETTINGS)
    assert fast.ue_payoff_min_iterations == 10 and fast.ue_payoff_precision == 0.05


@pytest.mark.parametrize(
    "name, on",
    [
        ("charging_outside_cost", 30.0),
        ("station_taste_logit", True),
        ("station_taste_quasi_random", True),
        ("charging_chargers", 40.0),
        ("ue_price_aware_start_gap", 0.0),
        ("ue_stop_settled_ratio", 2.0),
    ],
)
def test_a_market_setting_turned_on_changes_the_digest(name, on):
    """Off, they leave the 0.2.0 digests as they were (``tests/test_pinned_payoffs.py``)."""
    base = ScenarioSettings(charging_nodes={"A": (0.5, 2.0)})
    assert dataclasses.replace(base, **{name: on}).digest != base.digest
