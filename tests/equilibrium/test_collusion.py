"""The collusion index (evcs_gym.equilibrium.collusion) and the references it rests on
(evcs_gym.scenarios.references), on a copy of ``tiny`` that ships references."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import evcs_gym
from evcs_gym.cli import main
from evcs_gym.equilibrium import collusion_index
from evcs_gym.errors import ScenarioError
from evcs_gym.scenarios import load_references, scenario_folder

NASH, COLLUSIVE = 1.0, 1.75


def write_references(folder, settings_hash, nash=NASH, collusive=COLLUSIVE, periods=4):
    refs = {
        "settings_hash": settings_hash,
        "nash": {"prices": {a: [nash] * periods for a in "AB"}, "how": "a test"},
        "collusive": {"prices": {a: [collusive] * periods for a in "AB"}, "how": "a test"},
    }
    (folder / f"{folder.name}_references.json").write_text(json.dumps(refs))


@pytest.fixture
def referenced(tmp_path):
    """``tiny``'s files in a folder of its own, with references."""
    folder = tmp_path / "tiny"
    shutil.copytree(scenario_folder("tiny"), folder)
    nd = evcs_gym.load_scenario(folder)
    write_references(folder, nd.settings_hash)
    return folder


def test_the_references_load_for_their_game_only(referenced):
    refs = load_references(evcs_gym.load_scenario(referenced))
    assert refs is not None and refs.how == {"nash": "a test", "collusive": "a test"}
    np.testing.assert_array_equal(refs.nash["A"], [NASH] * 4)
    # the same files with other settings are another game: no references
    assert load_references(evcs_gym.load_scenario(referenced, demand_multiplier=0.9)) is None
    assert load_references(evcs_gym.load_scenario("tiny")) is None  # no file


@pytest.mark.parametrize(
    "change, match",
    [
        ({"nash": 3.0}, r"`nash.prices\['A'\]` must lie in the bounds"),
        ({"periods": 3}, r"`nash.prices\['A'\]` must be 4 finite prices"),
    ],
)
def test_malformed_references_name_the_file_and_the_entry(referenced, change, match):
    nd = evcs_gym.load_scenario(referenced)
    write_references(referenced, nd.settings_hash, **change)
    with pytest.raises(ScenarioError, match=match):
        load_references(nd)


def test_delta_is_0_at_the_nash_reference_and_1_at_the_collusive_one(referenced):
    nd = evcs_gym.load_scenario(referenced)
    refs = load_references(nd)
    assert refs is not None
    at_nash = collusion_index(nd, refs.nash, refs, seeds=2)
    at_collusive = collusion_index(nd, refs.collusive, refs, seeds=2)
    assert at_nash.delta == 0.0 and at_collusive.delta == 1.0  # common random numbers
    assert at_nash.delta_se == 0.0 and at_nash.seeds == (0, 1)
    between = collusion_index(nd, evcs_gym.uniform_prices(nd.agent_names, 4, 1.4), refs, 2)
    expected = (between.revenue - between.nash_revenue) / (
        between.collusive_revenue - between.nash_revenue
    )
    assert between.delta == pytest.approx(expected) and 0 < between.delta < 1.5


def test_references_of_another_game_are_refused(referenced):
    refs = load_references(evcs_gym.load_scenario(referenced))
    assert refs is not None
    other = evcs_gym.load_scenario("tiny", demand_multiplier=0.9)
    with pytest.raises(ValueError, match="belong to the game"):
        collusion_index(other, refs.nash, refs, seeds=1)


def test_exploit_reports_delta_beside_nashconv(referenced, capsys):
    args = ["exploit", "--scenario", str(referenced), "--price", str(NASH)]
    args += ["--budget-per-station", "3", "--grid", "0", "--seeds", "2"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["collusion_index"]["delta"] == 0.0 and out["collusion_index"]["seeds"] == [0, 1]
    assert main(args) == 0
    assert "collusion index Δ = 0.00" in capsys.readouterr().out
    # a game without references reports none
    assert main(["exploit", "--scenario", "tiny", "--budget-per-station", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collusion_index"] is None


@pytest.mark.timeout(300)
def test_train_reports_delta_after_the_verification(referenced, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--scenario", str(referenced), "--budget", "8", "--workers", "1"]
    argv += ["--verify-budget", "3", "--verify-seeds", "2", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    assert "collusion index Δ = " in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    index = summary["collusion_index"]
    assert index["seeds"] == summary["verified_exploitability"]["seeds"] == [0, 1]
    assert index["nash_revenue"] < index["collusive_revenue"]
