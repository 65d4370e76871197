"""The 0.2.0 games' payoffs, bit for bit, at pinned prices and seeds.

``data/pinned_payoffs_0.2.0.json`` holds rewards and per-period flows (as ``float.hex``)
and UE iteration counts recorded with evcs-gym 0.2.0 before the package was reorganised.
A change that moves code, or adds a setting that is off by default, must leave every one
of them unchanged; a change that alters them changes the published games.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evcs_gym
from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.scenarios import scenario_folder

PINNED = json.loads((Path(__file__).parent / "data" / "pinned_payoffs_0.2.0.json").read_text())
SCENARIOS = {
    "tiny": ("tiny", {}),
    "tiny+tastes": ("tiny", {"station_taste_scale": 12.0}),
    "siouxfalls": ("siouxfalls", {}),
}


def profile(nd: evcs_gym.NetworkData, kind: str) -> dict[str, np.ndarray]:
    """``mid``: every station at mid-bounds; ``stair``: a price rising over stations and
    periods, so that every period and station has its own price."""
    out = {}
    for i, agent in enumerate(nd.agent_names):
        lo, hi = nd.price_bounds[agent]
        if kind == "mid":
            out[agent] = np.full(nd.n_periods, (lo + hi) / 2)
        else:
            frac = (np.arange(nd.n_periods) + i + 1) / (nd.n_periods + nd.n_agents + 1)
            out[agent] = lo + (hi - lo) * frac
    return out


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(key, marks=[pytest.mark.siouxfalls] if key.startswith("siouxfalls") else [])
        for key in PINNED
    ],
)
def test_payoffs_are_those_recorded_for_0_2_0(key):
    name, kind, seed = key.split("/")
    scenario, overrides = SCENARIOS[name]
    nd = evcs_gym.load_scenario(scenario, **overrides)
    res = evcs_gym.EVCSRewardEvaluator(nd).evaluate(profile(nd, kind), seed=int(seed))
    want = PINNED[key]
    assert res.ue_iterations == want["ue_iterations"]
    assert {a: float(v).hex() for a, v in res.rewards.items()} == want["rewards"]
    assert {a: [float(x).hex() for x in f] for a, f in res.flows.items()} == want["flows"]


DIGESTS_0_2_0 = {
    "tiny": "b19290784656",
    "siouxfalls": "1bdd955f9c73",
    "berlin_friedrichshain": "6e837c766f5b",
    "anaheim": "d463508cfe15",
}
"""``ScenarioSettings.digest`` of every bundled 0.2.0 game: results files carry it."""


@pytest.mark.parametrize("name", sorted(DIGESTS_0_2_0))
def test_settings_digests_are_those_of_0_2_0(name):
    folder = scenario_folder(name)
    raw = json.loads((folder / f"{name}_settings.json").read_text())
    assert ScenarioSettings.from_mapping(raw).digest == DIGESTS_0_2_0[name]


def test_every_pinned_scenario_is_covered():
    assert {key.split("/")[0] for key in PINNED} == set(SCENARIOS)
