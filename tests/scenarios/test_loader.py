"""Scenario loading (evcs_gym.scenarios.loader): the bundled scenarios, scenario folders and
their validation errors naming file, row and column, overrides."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import evcs_gym
from evcs_gym.errors import ScenarioError
from evcs_gym.scenarios import scenario_settings
from evcs_gym.scenarios.loader import scenario_folder
from evcs_gym.ue.simulation import WorldBuilder

BUNDLED = ["siouxfalls", "berlin_friedrichshain", "anaheim", "tiny"]


def test_available_scenarios_lists_the_bundled_four():
    assert set(BUNDLED) <= set(evcs_gym.available_scenarios())


def test_siouxfalls_matches_the_published_network(siouxfalls):
    nd = siouxfalls
    assert nd.n_nodes == 24
    assert nd.n_links == 80
    assert int((nd.links.kind == 1).sum()) == 4
    assert list(nd.agent_names) == ["10", "13", "18", "3"]
    assert nd.n_periods == 8
    assert all(b == (0.5, 2.0) for b in nd.price_bounds.values())
    # settings exactly as in the shipped file
    raw = _bundled_settings("siouxfalls")
    for key, value in raw.items():
        got = getattr(nd.settings, key)
        if key == "charging_nodes":
            assert got == {k: tuple(v) for k, v in value.items()}
        else:
            assert got == value, key


def test_a_game_on_another_scenarios_network_reads_its_files(tmp_path):
    market = evcs_gym.load_scenario("siouxfalls_market", warm_start=False)
    plain = evcs_gym.load_scenario("siouxfalls", warm_start=False)
    assert (market.n_nodes, market.n_links) == (plain.n_nodes, plain.n_links)
    assert market.n_routes > plain.n_routes  # the outside option's routes
    assert market.source.endswith("siouxfalls_market")  # its references live there
    assert market.settings.charging_outside_cost == 40
    # its own demand (a rush hour), the same trips as Sioux Falls' in all
    assert market.demand_rows.shape[0] == 3 * plain.demand_rows.shape[0]
    assert market.demanded_vehicles == pytest.approx(plain.demanded_vehicles)
    assert scenario_settings("siouxfalls_market").station_taste_scale == 30  # key popped
    folder = tmp_path / "broken"
    folder.mkdir()
    raw = {**_bundled_settings("tiny"), "network_from": "nowhere"}
    (folder / "broken_settings.json").write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="`network_from` must name a sibling .*'nowhere'"):
        evcs_gym.load_scenario(folder)


def _bundled_settings(name: str) -> dict:
    """A bundled scenario's settings file as written (keys it does not set are absent)."""
    folder = scenario_folder(name)
    return json.loads((folder / f"{folder.name}_settings.json").read_text())


@pytest.mark.parametrize("name", ["siouxfalls", "berlin_friedrichshain", "anaheim", "tiny"])
def test_bundled_scenarios_use_the_default_stationary_stop(name):
    """No bundled scenario sets a key its UE ignores, and each takes the stationary
    stop's defaults (revenue SE within 3 %, after 20 iterations)."""
    raw = _bundled_settings(name)
    assert not any(k.startswith("ue_payoff_") for k in raw)
    # the settings alone, without loading the network (Anaheim's load takes 10 s)
    assert scenario_settings(name).ue_payoff_precision == 0.03


@pytest.mark.parametrize(
    ("name", "scale"),
    [("siouxfalls", 4.0), ("berlin_friedrichshain", 0.0), ("anaheim", 0.0), ("tiny", 4.0)],
)
def test_bundled_station_tastes(name, scale):
    """Sioux Falls' and ``tiny``'s drivers carry station tastes of scale 4
    (docs/research/heterogeneous-drivers.md); Berlin-Friedrichshain and Anaheim keep
    identical drivers."""
    raw = _bundled_settings(name)
    assert raw.get("station_taste_scale", 0.0) == scale
    assert raw.get("station_taste_seed", 0) == 0


@pytest.mark.parametrize("name", ["berlin_friedrichshain", "anaheim"])
@pytest.mark.slow
def test_large_bundled_scenarios_load(name):
    nd = evcs_gym.load_scenario(name, warm_start=False)
    assert nd.n_agents == len(nd.settings.charging_nodes)
    assert nd.n_platoons > 0
    assert (nd.group_routes[:, 0] >= 0).all()


def test_tiny_loads_with_congestion_and_two_stations(tiny):
    assert tiny.agent_names == ("A", "B")
    assert tiny.n_periods == 4
    out = WorldBuilder(tiny).run(tiny.initial_route_choice, seed=0)
    # congestion: some link's travel time reaches 1.5x its free-flow time
    slowest = (out.traveltime.max(axis=1) / tiny.links.free_flow_time).max()
    assert slowest > 1.5


def test_loading_twice_gives_identical_route_sets():
    a = evcs_gym.load_scenario("tiny", warm_start=False)
    evcs_gym.scenarios.loader._CACHE.clear()
    b = evcs_gym.load_scenario("tiny", warm_start=False)
    assert a is not b
    assert a == b
    assert np.array_equal(a.route_links, b.route_links)


def test_overrides_apply_and_unknown_keys_are_rejected():
    nd = evcs_gym.load_scenario("tiny", warm_start=False, demand_multiplier=0.5)
    assert nd.settings.demand_multiplier == 0.5
    with pytest.raises(ScenarioError, match="unknown setting key.*demand_multipler"):
        evcs_gym.load_scenario("tiny", demand_multipler=0.5)


def test_unknown_scenario_name():
    with pytest.raises(ScenarioError, match="'nowhere'"):
        evcs_gym.load_scenario("nowhere")


# ---------------------------------------------------------------- validation errors
@pytest.fixture
def tiny_copy(tmp_path):
    dst = tmp_path / "tiny"
    shutil.copytree(scenario_folder("tiny"), dst)
    return dst


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_folder_path_loads(tiny_copy):
    nd = evcs_gym.load_scenario(tiny_copy, warm_start=False)
    assert nd.agent_names == ("A", "B")


def test_missing_file(tiny_copy):
    (tiny_copy / "tiny_demand.csv").unlink()
    with pytest.raises(ScenarioError, match="missing file .*tiny_demand.csv"):
        evcs_gym.load_scenario(tiny_copy)


def test_missing_column(tiny_copy):
    _edit(tiny_copy / "tiny_links.csv", "name,start,end,length,u,", "name,start,end,len,u,")
    with pytest.raises(ScenarioError, match=r"tiny_links.csv: missing column\(s\) \['length'\]"):
        evcs_gym.load_scenario(tiny_copy)


def test_unknown_node_in_link(tiny_copy):
    _edit(tiny_copy / "tiny_links.csv", "2-3,2,3,", "2-3,2,Z,")
    with pytest.raises(ScenarioError, match="tiny_links.csv row 4: link '2-3' .*unknown node 'Z'"):
        evcs_gym.load_scenario(tiny_copy)


def test_unknown_node_in_demand(tiny_copy):
    _edit(tiny_copy / "tiny_demand.csv", "5,1,0,1800", "9,1,0,1800")
    with pytest.raises(ScenarioError, match="tiny_demand.csv row 3: .*`orig`.*unknown node '9'"):
        evcs_gym.load_scenario(tiny_copy)


@pytest.mark.parametrize(
    "column, old, new",
    [("length", "1-2,1,2,3000", "1-2,1,2,-5"), ("u", "1-2,1,2,3000,15", "1-2,1,2,3000,0")],
)
def test_non_positive_length_or_speed(tiny_copy, column, old, new):
    _edit(tiny_copy / "tiny_links.csv", old, new)
    with pytest.raises(
        ScenarioError, match=f"row 2: link '1-2' column `{column}` must be positive"
    ):
        evcs_gym.load_scenario(tiny_copy)


def test_price_min_above_price_max(tiny_copy):
    _edit(tiny_copy / "tiny_settings.json", '"A": [0.5, 2.0]', '"A": [2.5, 2.0]')
    with pytest.raises(
        ScenarioError, match=r"charging_nodes\['A'\]` has price_min 2.5 > price_max"
    ):
        evcs_gym.load_scenario(tiny_copy)


def test_negative_demand(tiny_copy):
    _edit(tiny_copy / "tiny_demand.csv", "2,4,0,1800,0.35", "2,4,0,1800,-0.35")
    with pytest.raises(ScenarioError, match="tiny_demand.csv row 4: negative demand q=-0.35"):
        evcs_gym.load_scenario(tiny_copy)


def test_od_pair_without_route(tiny_copy):
    # remove every link into node 5: trips to 5 have no route
    _edit(tiny_copy / "tiny_links.csv", "4-5,4,5,3000,8,0.2,1\n", "")
    with pytest.raises(ScenarioError, match="row 2: no route from '1' to '5'"):
        evcs_gym.load_scenario(tiny_copy)


def test_station_not_in_network(tiny_copy):
    _edit(tiny_copy / "tiny_settings.json", '"B": [0.5, 2.0]', '"Q": [0.5, 2.0]')
    with pytest.raises(ScenarioError, match="`charging_nodes` names 'Q', which is not a node"):
        evcs_gym.load_scenario(tiny_copy)


def test_unknown_settings_key_in_file(tiny_copy):
    _edit(tiny_copy / "tiny_settings.json", '"deltan": 5', '"deltan": 5, "detlan": 5')
    with pytest.raises(
        ScenarioError, match=r"tiny_settings.json: unknown setting key\(s\) \['detlan'\]"
    ):
        evcs_gym.load_scenario(tiny_copy)


def test_station_override_changes_the_charging_link():
    nd = evcs_gym.load_scenario(
        "tiny", warm_start=False, station_overrides={"B": {"length": 600, "number_of_lanes": 2}}
    )
    link = nd.station_link[nd.agent_names.index("B")]
    assert nd.links.length[link] == 600
    assert nd.links.number_of_lanes[link] == 2


def test_the_market_demand_is_what_its_script_writes(load_script, capsys):
    """``siouxfalls_market_demand.csv`` is Sioux Falls' demand with the script's rush hour."""
    peaked = load_script("docs/_scripts", "peaked_demand")
    assert peaked.main(["siouxfalls", "siouxfalls_market", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
