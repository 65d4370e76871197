"""``evcs-gym evaluate`` on tiny: its JSON, ``--set`` overrides, bad settings and prices."""

from __future__ import annotations

import json

import pytest

from evcs_gym.cli import main


def test_evaluate_prints_json_with_rewards(capsys):
    assert main(["evaluate", "--scenario", "tiny", "--price", "1.0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "tiny"
    assert set(out["rewards"]) == {"A", "B"}
    assert out["converged"] is True


def test_evaluate_prints_a_table_of_prices_flows_and_revenues(capsys):
    assert main(["evaluate", "--scenario", "tiny", "--price", "1.0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("loaded tiny: ") and "scenario tiny: 2 stations, 4 periods" in text
    assert "total revenue " in text and "UE: " in text


def test_set_overrides_a_setting_of_the_evaluated_scenario(capsys):
    args = ["evaluate", "--scenario", "tiny", "--price", "1.0", "--json"]
    assert main([*args, "--set", "ue_max_iterations=2", "--set", "ue_payoff_precision=0.05"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ue_iterations"] <= 2 and out["ue_stats"]["stop_reason"] != "converged"


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("ue_payoff_precision=-1", "ue_payoff_precision"),
        ("bogus=1", "bogus"),
        ("noequals", "KEY=VALUE"),
    ],
)
def test_set_rejects_a_bad_setting_by_name(pair, message):
    with pytest.raises(SystemExit, match=message):
        main(["evaluate", "--scenario", "tiny", "--set", pair])


def test_evaluate_rejects_prices_outside_the_bounds(capsys):
    assert main(["evaluate", "--scenario", "tiny", "--price", "5.0"]) == 2
    err = capsys.readouterr().err
    assert "invalid prices" in err and "5.0" in err


def test_evaluate_names_an_unreadable_prices_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(SystemExit, match="cannot read --prices"):
        main(["evaluate", "--scenario", "tiny", "--prices", str(missing)])
