"""Price validation (evcs_gym.ue.prices): a user's price mapping becomes a checked
``(n_agents, n_periods)`` array, or a PriceError naming the station, period and value."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.errors import PriceError
from evcs_gym.ue.prices import price_matrix, uniform_prices


@pytest.mark.parametrize(
    "prices, message",
    [
        ({"A": [1.0] * 4}, r"missing station\(s\) \['B'\]"),
        ({"A": [1.0] * 4, "B": [1.0] * 4, "C": [1.0] * 4}, r"unknown station\(s\) \['C'\]"),
        ({"A": [1.0] * 3, "B": [1.0] * 4}, r"prices\['A'\] must have shape \(4,\)"),
        ({"A": [1.0, np.nan, 1.0, 1.0], "B": [1.0] * 4}, r"prices\['A'\] period 1 is not finite"),
        ({"A": [1.0] * 4, "B": [1.0, 1.0, np.inf, 1.0]}, r"prices\['B'\] period 2 is not finite"),
        ({"A": [1.0] * 4, "B": [1.0, 1.0, 1.0, 2.5]}, r"prices\['B'\] period 3 = 2.5 is outside"),
        ({"A": [0.1] * 4, "B": [1.0] * 4}, r"prices\['A'\] period 0 = 0.1 is outside"),
        ({"A": "cheap", "B": [1.0] * 4}, r"prices\['A'\]"),
        ([1.0, 1.0], "prices must be a mapping"),
    ],
)
def test_bad_prices_raise_naming_station_and_period(tiny, prices, message):
    ev = evcs_gym.EVCSRewardEvaluator(tiny)
    with pytest.raises(PriceError, match=message):
        ev.evaluate(prices, seed=0)
    assert issubclass(PriceError, ValueError)


def test_clip_prices_option(tiny):
    ev = evcs_gym.EVCSRewardEvaluator(tiny, clip_prices=True)
    res = ev.evaluate({"A": [5.0] * 4, "B": [0.0] * 4}, seed=0)
    assert res.prices["A"].tolist() == [2.0] * 4 and res.prices["B"].tolist() == [0.5] * 4


# ------------------------------------------------------------------ price_matrix itself
AGENTS = ("A", "B")
BOUNDS = {"A": (0.5, 2.0), "B": (1.0, 3.0)}


def test_rows_follow_the_agent_order_not_the_mapping_order():
    matrix = price_matrix({"B": [1.5, 2.5], "A": (0.5, 1)}, AGENTS, 2, BOUNDS)
    assert matrix.dtype == np.float64 and matrix.shape == (2, 2)
    assert matrix.tolist() == [[0.5, 1.0], [1.5, 2.5]]


def test_round_off_inside_the_tolerance_is_clipped_beyond_it_refused():
    matrix = price_matrix({"A": [2.0 + 1e-10, 0.5 - 1e-10], "B": [1.0, 3.0]}, AGENTS, 2, BOUNDS)
    assert matrix[0].tolist() == [2.0, 0.5]
    with pytest.raises(PriceError, match=r"prices\['A'\] period 0 = 2.000001 is outside"):
        price_matrix({"A": [2.000001, 1.0], "B": [1.0, 3.0]}, AGENTS, 2, BOUNDS)


def test_each_station_has_its_own_bounds():
    with pytest.raises(PriceError, match=r"prices\['B'\] period 1 = 0.8 is outside .*\[1.0, 3.0\]"):
        price_matrix({"A": [0.8, 0.8], "B": [1.0, 0.8]}, AGENTS, 2, BOUNDS)


def test_clip_clips_finite_prices_only():
    clipped = price_matrix({"A": [9.0, -9.0], "B": [0.0, 1e9]}, AGENTS, 2, BOUNDS, clip=True)
    assert clipped.tolist() == [[2.0, 0.5], [1.0, 3.0]]
    with pytest.raises(PriceError, match=r"prices\['A'\] period 1 is not finite"):
        price_matrix({"A": [1.0, np.inf], "B": [1.0, 1.0]}, AGENTS, 2, BOUNDS, clip=True)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (1.0, r"prices\['A'\] must have one price per period \(2\), got scalar 1.0"),
        ("cheap", r"prices\['A'\] is not numeric: 'cheap'"),
        ([[1.0, 1.0]], r"prices\['A'\] must have shape \(2,\) .*got shape \(1, 2\)"),
        ([None, 1.0], r"prices\['A'\] period 0 is not finite"),
    ],
)
def test_a_row_that_is_not_one_price_per_period(row, message):
    with pytest.raises(PriceError, match=message):
        price_matrix({"A": row, "B": [1.0, 1.0]}, AGENTS, 2, BOUNDS)


def test_unknown_stations_are_named_before_missing_ones():
    with pytest.raises(PriceError, match=r"unknown station\(s\) \['C'\]; stations are"):
        price_matrix({"C": [1.0, 1.0]}, AGENTS, 2, BOUNDS)


def test_uniform_prices():
    prices = uniform_prices(["A", "B"], 3, 1)
    assert list(prices) == ["A", "B"]
    assert all(p.dtype == np.float64 and p.tolist() == [1.0] * 3 for p in prices.values())
    assert price_matrix(prices, AGENTS, 3, BOUNDS).tolist() == [[1.0] * 3] * 2
