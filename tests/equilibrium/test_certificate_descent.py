"""The certificate-descent solver (evcs_gym.equilibrium.certificate_descent) on ``tiny``."""

from __future__ import annotations

import json

import pytest

from evcs_gym.cli import main
from evcs_gym.equilibrium.certificate_descent import CertificateDescent


@pytest.mark.timeout(300)
def test_descent_keeps_only_moves_that_lower_the_certificate(tmp_path, capsys):
    start = tmp_path / "start.json"
    start.write_text(json.dumps({"A": [2.0] * 4, "B": [1.0] * 4}))
    answer = tmp_path / "descent.json"
    argv = ["solve", "--scenario", "tiny", "--method", "descent", "--rounds", "4"]
    argv += ["--resolution", "0.0417", "--target", "0", "--start", str(start)]
    assert main([*argv, "--out", str(answer)]) == 0
    assert "certificate descent: 4 rounds" in capsys.readouterr().out
    solved = json.loads(answer.read_text())
    history = solved["history"]
    assert solved["method"] == "descent" and history[0]["prices"] == json.loads(start.read_text())
    kept = [h["relative_nash_conv"] for h in history if h["accepted"]]
    assert kept == sorted(kept, reverse=True) and len(set(kept)) == len(kept)
    assert solved["certificate"]["relative_nash_conv"] == kept[-1]
    for before, after in zip(history[1:], history[2:]):  # a rejected station's step halves
        if not before["accepted"] and after["step"]["station"] == before["step"]["station"]:
            assert after["step"]["share"] == before["step"]["share"] / 2
    # later certificates also search from the deviations found before
    assert all(d["search"]["starts"] >= 1 for d in solved["certificate"]["deviations"].values())


def test_descent_rejects_bad_arguments(tiny):
    with pytest.raises(ValueError, match="`step` must be in"):
        CertificateDescent(tiny, step=0.0)
    with pytest.raises(ValueError, match="`min_step` must be in"):
        CertificateDescent(tiny, step=0.5, min_step=0.8)
    with pytest.raises(ValueError, match="`memory` must be >= 1"):
        CertificateDescent(tiny, memory=0)
    with pytest.raises(SystemExit, match="--method descent solves for a Nash"):
        main(["solve", "--scenario", "tiny", "--method", "descent", "--objective", "total"])
