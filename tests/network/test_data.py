"""The prepared scenario (evcs_gym.network.data): NetworkData pickles and compares by value,
its sizes and routes by hand, and ``with_stop_settings`` changes only the stop settings."""

from __future__ import annotations

import pickle

import pytest

import evcs_gym


def test_network_data_pickles_to_an_equal_object(tiny):
    clone = pickle.loads(pickle.dumps(tiny))
    assert clone == tiny
    assert clone is not tiny


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"deltan": 3}, r"\['deltan'\] are not stop settings"),
        ({"ue_switch_budget": 0.02}, "not stop settings"),
        ({"ue_payoff_precision": 1.0}, "ue_payoff_precision"),
        ({"ue_max_iterations": "many"}, "ue_max_iterations"),
    ],
)
def test_with_stop_settings_takes_only_stop_settings_in_range(tiny, changes, match):
    with pytest.raises(evcs_gym.ScenarioError, match=match):
        tiny.with_stop_settings(**changes)


def test_the_two_route_network_by_count(two_routes):
    """4 nodes (the destination's sink is internal), 6 links (4 roads, 2 charging links;
    the sink's connector is internal), 30 charging vehicles in 6 platoons, 2 routes."""
    nd = two_routes
    assert (nd.n_nodes, nd.n_links, nd.n_platoons, nd.n_routes) == (4, 6, 6, 2)
    assert (nd.n_agents, nd.n_periods) == (2, 1)
    assert nd.agent_names == ("S1", "S2")
    assert nd.price_bounds == {"S1": (0.5, 2.0), "S2": (0.5, 2.0)}
    assert nd.simulated_vehicles() == {"charging": 30, "non_charging": 0}
    assert nd.route(0) == ["O-S1", "charging_S1", "S1-D", "connector_D"]
    assert nd.route(1) == ["O-S2", "charging_S2", "S2-D", "connector_D"]
    assert nd.free_flow_route_choice.tolist() == [0] * 6  # S1's is the shorter route
    assert "30 charging + 0 other vehicles" in nd.summary()


def test_with_stop_settings_shares_everything_but_the_stop_settings(tiny):
    fast = tiny.with_stop_settings(ue_max_iterations=12, ue_payoff_precision=0.05)
    assert (fast.settings.ue_max_iterations, fast.settings.ue_payoff_precision) == (12, 0.05)
    assert fast.initial_route_choice is tiny.initial_route_choice
    assert fast.route_links is tiny.route_links
    assert fast.settings_hash != tiny.settings_hash
    assert (
        fast.settings_hash
        == tiny.with_stop_settings(ue_max_iterations=12.0, ue_payoff_precision=0.05).settings_hash
    )
    assert fast != tiny
    assert tiny.with_stop_settings() == tiny
