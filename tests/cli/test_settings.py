"""``evcs-gym settings``: a scenario's settings with their values and meanings."""

from __future__ import annotations

import json

import pytest

from evcs_gym.cli import main
from evcs_gym.scenarios.setting_docs import setting_names


def test_settings_lists_a_scenarios_values_with_their_meanings(capsys):
    assert main(["settings", "--scenario", "tiny", "--set", "deltan=1"]) == 0
    text = capsys.readouterr().out
    assert "deltan = 1\n    UXsim platoon size" in text
    assert main(["settings", "--json"]) == 0
    values = json.loads(capsys.readouterr().out)
    assert list(values) == setting_names() and values["network_name"] == "unnamed"
    with pytest.raises(SystemExit, match="bogus"):
        main(["settings", "--set", "bogus=1"])
