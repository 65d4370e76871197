"""What the commands share (``evcs_gym.cli.common``): ``--set`` pairs and price files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evcs_gym.cli.common import SEARCH_NAMES, parse_settings, read_price_file
from evcs_gym.equilibrium.search_spec import SEARCHES, SearchSpec


def test_parse_settings_reads_json_else_a_string_and_rejects_a_pair_without_equals():
    assert parse_settings(None) == {}
    assert parse_settings([" deltan =5", "network_name=a=b"]) == {
        "deltan": 5,
        "network_name": "a=b",
    }
    for bad in ("noequals", "=1"):
        with pytest.raises(SystemExit, match="KEY=VALUE"):
            parse_settings([bad])


def test_read_price_file_takes_a_profile_or_the_prices_entry_of_an_output(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"A": [1, 2], "B": [0.5, 1.5]}))
    prices = read_price_file(str(path), "--prices")
    assert set(prices) == {"A", "B"} and prices["A"].dtype == float
    np.testing.assert_array_equal(prices["B"], [0.5, 1.5])
    path.write_text(json.dumps({"scenario": "tiny", "prices": {"A": [1.0], "B": [2.0]}}))
    assert {a: v.tolist() for a, v in read_price_file(str(path), "--start").items()} == {
        "A": [1.0],
        "B": [2.0],
    }
    path.write_text("[1, 2]")
    with pytest.raises(SystemExit, match=r"--start .*prices\.json.* must hold"):
        read_price_file(str(path), "--start")


def test_the_cli_offers_every_search_preset_and_the_default_is_the_converged_one():
    assert set(SEARCH_NAMES) == set(SEARCHES)
    assert SEARCHES["converged"] == SearchSpec()
    assert (SearchSpec().resolution, SearchSpec().rounds) == (1 / 192, 2)
    old = SEARCHES["converged-0.4"]  # evcs-gym 0.4.0's default, for its figures
    assert (old.resolution, old.rounds, old.random_directions) == (1 / 96, 1, 0)
