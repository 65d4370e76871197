"""``evcs-gym solve`` on tiny: its answer file (which ``exploit`` reads) and ``--start``."""

from __future__ import annotations

import json

import pytest

from evcs_gym.cli import main


@pytest.mark.timeout(300)
def test_solve_then_exploit_its_answer(tmp_path, capsys):
    answer = tmp_path / "solver.json"
    argv = ["solve", "--scenario", "tiny", "--rounds", "2", "--budget-per-station", "6"]
    argv += ["--target", "0"]  # both rounds, even when the first finds no gain
    assert main([*argv, "--out", str(answer)]) == 0
    assert "best-response dynamics: 2 rounds" in capsys.readouterr().out
    solved = json.loads(answer.read_text())
    assert set(solved["prices"]) == {"A", "B"} and solved["rounds"] == 2
    # exploit reads the solver's file (its "prices" entry) and prints JSON
    argv = ["exploit", "--scenario", "tiny", "--prices", str(answer), "--budget-per-station", "4"]
    assert main(argv) == 0
    assert "NashConv" in capsys.readouterr().out


@pytest.mark.timeout(300)
def test_solve_starts_from_a_price_file(tmp_path, capsys):
    start = tmp_path / "start.json"
    start.write_text(json.dumps({"A": [0.5] * 4, "B": [1.75] * 4}))
    answer = tmp_path / "solver.json"
    argv = ["solve", "--scenario", "tiny", "--rounds", "1", "--budget-per-station", "4"]
    assert main([*argv, "--start", str(start), "--out", str(answer)]) == 0
    first = json.loads(answer.read_text())["history"][0]["prices"]
    assert first == {"A": [0.5] * 4, "B": [1.75] * 4}  # round 1 certifies the start
    start.write_text("[0.5, 1.75]")
    with pytest.raises(SystemExit, match=r"--start .*start\.json.* must hold"):
        main([*argv, "--start", str(start)])
