"""The example scripts run to completion on ``tiny`` with tiny budgets (imported ``main``)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("algo", ["sac", "ppo"])
def test_sb3_joint_pricing(load_script, capsys, algo):
    out = load_script("examples", "sb3_joint_pricing").main(
        ["--scenario", "tiny", "--total-timesteps", "16", "--algo", algo]
    )
    assert set(out["prices"]) == {"A", "B"}
    assert all(np.all((p >= 0.5) & (p <= 2.0)) for p in out["prices"].values())
    assert out["total_revenue"] > 0
    assert "learned joint prices" in capsys.readouterr().out


def test_sb3_best_response(load_script, capsys):
    out = load_script("examples", "sb3_best_response").main(
        ["--scenario", "tiny", "--total-timesteps", "16", "--agent", "B", "--opponent-price", "1.4"]
    )
    assert out["agent"] == "B" and out["prices"].shape == (4,)
    assert "learned prices of B" in capsys.readouterr().out


def test_supersuit_shared_policy(load_script, capsys):
    out = load_script("examples", "supersuit_shared_policy").main(
        ["--scenario", "tiny", "--total-timesteps", "16", "--rounds", "2", "--n-steps", "4"]
    )
    assert set(out["prices"]) == {"A", "B"} and out["timesteps"] >= 16
    assert "total revenue" in capsys.readouterr().out


def test_custom_scenario_writes_loads_and_evaluates_a_folder(load_script, tmp_path, capsys):
    out = load_script("examples", "custom_scenario").main(["--out", str(tmp_path)])
    files = sorted(p.name for p in (tmp_path / "corridor").iterdir())
    assert files == [f"corridor_{kind}" for kind in ("demand.csv", "links.csv", "nodes.csv")] + [
        "corridor_settings.json"
    ]
    # undercutting wins the south station drivers
    assert out["south undercuts"]["south"] > out["equal prices"]["south"]
    assert "one step of the game" in capsys.readouterr().out


def test_qlearning_discrete(load_script, capsys):
    out = load_script("examples", "qlearning_discrete").main(
        ["--levels", "3", "--sessions", "2", "--max-rounds", "3000", "--window", "500"]
    )
    assert len(out["deltas"]) == 2 and all(np.isfinite(out["deltas"]))
    text = capsys.readouterr().out
    assert "collusion index of the limit cycles" in text and "round 3: levels" in text
