"""PriceGrid and Calvano's grid (evcs_gym.tabular.grid): the path from N to M, indices,
validation."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.scenarios import load_references
from evcs_gym.tabular import PriceGrid, calvano_grid, path_levels


def test_levels_run_from_below_nash_to_above_collusion():
    t = path_levels(13, 0.1)
    np.testing.assert_allclose(t, np.arange(-1, 12) / 10, atol=1e-15)


def test_calvano_grid_passes_through_both_references(market):
    refs = load_references(market)
    grid = calvano_grid(market, m=13, xi=0.1)  # t = -0.1, 0.0, 0.1, ..., 1.0, 1.1
    for i, a in enumerate(market.agent_names):
        np.testing.assert_allclose(grid.prices[i, 1], refs.nash[a], atol=1e-12)
        np.testing.assert_allclose(grid.prices[i, 11], refs.collusive[a], atol=1e-12)
        step = (refs.collusive[a] - refs.nash[a]) / 10
        np.testing.assert_allclose(grid.prices[i, 0], refs.nash[a] - step, atol=1e-12)


def test_calvano_grid_clips_to_the_bounds(market):
    grid = calvano_grid(market, m=3, xi=3.0)  # t = -3, 0.5, 4: far beyond both ends
    low, high = market.price_bounds["A"]
    assert grid.prices.min() == low and grid.prices.max() == high
    grid.check_bounds(market)


def test_indices_are_row_major_and_round_trip():
    grid = PriceGrid(("A", "B", "C"), np.zeros((3, 4, 2)))
    levels = grid.levels(np.arange(grid.n_profiles))
    assert levels[1].tolist() == [0, 0, 1] and levels[4].tolist() == [0, 1, 0]
    assert grid.index(levels).tolist() == list(range(64))
    assert grid.index([3, 2, 1]) == 3 * 16 + 2 * 4 + 1


def test_profile_and_price_array(small_grid):
    profile = small_grid.profile(small_grid.index([2, 0]))
    assert profile["A"].tolist() == small_grid.prices[0, 2].tolist()
    assert profile["B"].tolist() == small_grid.prices[1, 0].tolist()
    assert small_grid.price_array([2, 0]).shape == (2, 4)


def test_digest_names_the_prices(market, small_grid):
    assert small_grid.digest() == calvano_grid(market, m=3).digest()
    assert small_grid.digest() != calvano_grid(market, m=3, xi=0.2).digest()


def test_user_profiles(market):
    grid = PriceGrid.from_profiles(market, {"A": [[1.0] * 4, [2.0] * 4], "B": np.ones((2, 4))})
    assert grid.m == 2 and grid.t is None and grid.prices[0, 1].tolist() == [2.0] * 4


@pytest.mark.parametrize(
    "profiles, match",
    [
        ({"A": np.ones((2, 4))}, "every station"),
        ({"A": np.ones((2, 3)), "B": np.ones((2, 3))}, r"`grid\['A'\]` must be an \(m, 4\)"),
        ({"A": np.ones((2, 4)), "B": np.ones((3, 4))}, "same number of levels"),
        ({"A": np.full((2, 4), 9.0), "B": np.ones((2, 4))}, r"outside the station's bounds"),
        ({"A": np.full((2, 4), np.nan), "B": np.ones((2, 4))}, "finite"),
    ],
)
def test_bad_profiles_raise(market, profiles, match):
    with pytest.raises(ValueError, match=match):
        PriceGrid.from_profiles(market, profiles)


def test_a_game_without_references_needs_a_grid(tiny):
    with pytest.raises(ValueError, match="ships no Nash and collusive references"):
        calvano_grid(tiny)


@pytest.mark.parametrize("m, xi, match", [(1, 0.1, "`m`"), (2.5, 0.1, "`m`"), (5, -1, "`xi`")])
def test_bad_levels_raise(m, xi, match):
    with pytest.raises(ValueError, match=match):
        path_levels(m, xi)


def test_references_of_other_settings_are_refused(market):
    other = evcs_gym.load_scenario("tiny_market", station_taste_scale=10.0)
    with pytest.raises(ValueError, match="belong to the game"):
        calvano_grid(other, references=load_references(market))
