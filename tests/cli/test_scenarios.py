"""``evcs-gym scenarios``: the bundled scenarios, one name a line."""

from __future__ import annotations

from evcs_gym.cli import main


def test_scenarios_lists_the_bundled_ones(capsys):
    assert main(["scenarios"]) == 0
    names = capsys.readouterr().out.split()
    assert {"siouxfalls", "tiny", "berlin_friedrichshain", "anaheim"} <= set(names)
