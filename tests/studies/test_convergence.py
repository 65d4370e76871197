"""Convergence study (evcs_gym.studies.convergence): revenues independent of UE start and
run length.

The properties of the docs' concepts page ("The payoff") as tests: for a profile near
the reference, single-period spikes, training-like noise and uniform-random prices,
each station's mean revenue over 6 seeds under the default UE agrees with (a) the
free-flow start and (b) the iteration cap doubled without the stationary stop, from
the same start, within max(3 standard errors, 3 % of the station's revenue), on
Sioux Falls and on ``tiny``. ``tiny``'s drivers carry station tastes of scale 4, as
Sioux Falls' do; with identical drivers one comparison fails, which a test below keeps
pinned.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import evcs_gym
from evcs_gym.cli import main as cli
from evcs_gym.studies.convergence import (
    STANDARD_CONDITIONS,
    ConvergenceStudy,
    _condition_network,
    convergence_study,
    study_profiles,
    uniform_profile,
)
from tests.helpers import REPO


def _disagreements(study: ConvergenceStudy) -> list[str]:
    out = []
    for c in study.conditions[1:]:
        for p in study.profiles:
            for a, row in study.comparison(c, p).items():
                if not row["agrees"]:
                    out.append(f"{c}/{p}/{a}: {row['difference']:+.0f} > {row['tolerance']:.0f}")
    return out


@pytest.fixture(scope="module")
def tiny_study() -> ConvergenceStudy:
    nd = evcs_gym.load_scenario("tiny")
    profiles = study_profiles(nd, deviations=2, training_like=2, random=3)
    return convergence_study(
        "tiny", profiles, seeds=6, conditions=[*STANDARD_CONDITIONS, "halved"], workers=2
    )


def test_tiny_revenues_do_not_depend_on_start(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("free_flow/")]
    assert not bad, bad


def test_tiny_revenues_do_not_depend_on_tolerance(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("halved/")]
    assert not bad, bad


def test_tiny_revenues_do_not_depend_on_the_iteration_cap(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("doubled_cap/")]
    assert not bad, bad


def test_identical_drivers_leave_the_spike_loose_that_tastes_pin(tiny_study):
    """Why ``tiny`` has station tastes: with identical drivers (``station_taste_scale=0``)
    and B's period 2 at the bound, B's revenue under halved tolerances moves by far more
    than 5 % of it. Nobody pays B's 2.0; the difference is the equal-price split of period
    1 (both at 1.25), platoons of near-indifferent drivers
    (docs/research/known-limitations.md). With the tastes of the default the same
    comparison agrees. A better UE that made identical drivers agree would fail this
    test: then the research notes and this docstring need revisiting."""
    nd = evcs_gym.load_scenario("tiny", station_taste_scale=0.0)
    profiles = study_profiles(nd, deviations=2, training_like=0, random=0)
    del profiles["deviation_A_p2"]
    identical = convergence_study(
        "tiny",
        profiles,
        seeds=6,
        conditions=["halved"],
        workers=2,
        rel_tol=0.05,
        station_taste_scale=0.0,
    )
    assert not identical.comparison("halved", "deviation_B_p2")["B"]["agrees"]
    assert tiny_study.comparison("halved", "deviation_B_p2")["B"]["agrees"]


def test_doubled_cap_repeats_every_evaluation_that_converged_bit_for_bit(tiny_study):
    cap = evcs_gym.load_scenario("tiny").settings.ue_max_iterations
    compared = 0
    for p in tiny_study.profiles:
        pairs = zip(
            tiny_study.results["default"][p].results,
            tiny_study.results["doubled_cap"][p].results,
            strict=True,
        )
        for default, longer in pairs:
            assert default.seed == longer.seed
            if default.converged:
                assert default.ue_iterations == longer.ue_iterations <= cap
                assert default.rewards == longer.rewards
                compared += 1
            elif not longer.converged:  # the long run: to the doubled cap, its stationary mean
                assert longer.ue_iterations == 2 * cap >= default.ue_iterations
                assert longer.ue_stats["payoff"] == "stationary_mean"
    assert compared > 0


def test_conditions_scale_the_callers_settings():
    def condition(name: str, **overrides):
        default = evcs_gym.load_scenario("tiny", **overrides)
        return _condition_network("tiny", name, default, overrides)

    assert condition("doubled_cap").settings.ue_max_iterations == 120
    assert condition("doubled_cap", ue_max_iterations=7).settings.ue_max_iterations == 14
    assert condition("halved", ue_tolerance_scale=0.5).settings.ue_tolerance_scale == 0.25
    free_flow = condition("free_flow", deltan=5)
    assert free_flow.settings.deltan == 5 and free_flow.warm_start_info == {"kind": "free_flow"}
    nd = condition("doubled_cap")
    default = evcs_gym.load_scenario("tiny")
    assert np.array_equal(nd.initial_route_choice, default.initial_route_choice)  # same start
    nd = condition("doubled_cap", ue_max_iterations=3, warm_start_max_iterations=3)
    assert nd.settings.ue_max_iterations == 6
    short = evcs_gym.load_scenario("tiny", warm_start_max_iterations=3)  # the caller's start
    assert np.array_equal(nd.initial_route_choice, short.initial_route_choice)
    assert not np.array_equal(short.initial_route_choice, default.initial_route_choice)
    # the long run: the doubled cap also turns the stationary stop off, the others keep it
    assert condition("doubled_cap").settings.ue_payoff_precision == 0.0
    precise = condition("halved", ue_payoff_precision=0.02).settings.ue_payoff_precision
    assert precise == condition("free_flow", ue_payoff_precision=0.02).settings.ue_payoff_precision
    assert precise == 0.02


def test_a_long_condition_name_widens_the_table(tiny):
    profiles = {"base": uniform_profile("tiny", 1.0)}
    study = convergence_study("tiny", profiles, seeds=2, conditions=["doubled_cap"])
    lines = study.table().splitlines()
    header = next(line for line in lines if line.startswith("  condition"))
    rows = [re.match(r"  (\S+)\s+(\S+)", line) for line in lines if line.startswith("  doubled")]
    assert [r.group(1) for r in rows] == ["doubled_cap"]
    assert {r.end(2) for r in rows} == {header.index("iterations") + len("iterations")}
    assert "halved" not in STANDARD_CONDITIONS  # on request only


def test_study_reports_every_profile_and_condition(tiny_study):
    assert tiny_study.conditions == ["default", "free_flow", "doubled_cap", "halved"]
    assert tiny_study.profiles == [
        "base",
        "deviation_A_p2",
        "deviation_B_p2",
        "training_0",
        "training_1",
        "random_0",
        "random_1",
        "random_2",
    ]
    table = tiny_study.table()
    assert "all agree:" in table and "[deviation_A_p2]" in table
    data = json.loads(json.dumps(tiny_study.to_dict()))
    row = data["profiles"]["base"]["conditions"]["halved"]["comparison"]["A"]
    assert set(row) >= {"difference", "difference_se", "tolerance", "agrees"}
    assert data["seeds"] == list(range(6))


def test_agreement_rule_by_hand(tiny_study):
    row = tiny_study.comparison("free_flow", "base")["A"]
    assert row["tolerance"] == pytest.approx(
        max(3 * row["difference_se"], 0.03 * abs(row["default"]))
    )
    assert row["agrees"] == (abs(row["difference"]) <= row["tolerance"])


def test_study_profiles_are_deterministic_and_inside_bounds(tiny):
    a = study_profiles(tiny, random=2, seed=3)
    b = study_profiles(tiny, random=2, seed=3)
    assert a.keys() == b.keys()
    for name in a:
        for st, (lo, hi) in tiny.price_bounds.items():
            assert np.array_equal(a[name][st], b[name][st])
            assert (lo <= a[name][st]).all() and (a[name][st] <= hi).all()
    dev = a["deviation_A_p2"]["A"]
    assert dev[2] == tiny.price_bounds["A"][1] and (np.delete(dev, 2) == 1.25).all()


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="unknown"):
        convergence_study("tiny", {"x": {"A": [1.0] * 4, "B": [1.0] * 4}}, conditions=["hot"])
    with pytest.raises(ValueError, match="`profiles` must not be empty"):
        convergence_study("tiny", {})
    with pytest.raises(ValueError, match="`seeds`"):
        convergence_study("tiny", {"x": {"A": [1.0] * 4, "B": [1.0] * 4}}, seeds=0)


def test_cli_convergence_prints_the_table(tmp_path, capsys):
    out = tmp_path / "study.json"
    code = cli(
        [
            "convergence",
            "--scenario",
            "tiny",
            "--seeds",
            "2",
            "--deviations",
            "0",
            "--training",
            "0",
            "--random",
            "0",
            "--conditions",
            "default",
            "halved",
            "--workers",
            "1",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "[base]" in text and "halved" in text
    assert json.loads(out.read_text())["scenario"] == "tiny"


def siouxfalls_study_profiles(nd: evcs_gym.NetworkData) -> dict[str, dict]:
    """The acceptance study's Sioux Falls profiles: the solver's equilibrium of the default
    game (``benchmarks/inputs/solve_siouxfalls.json``), two single-period spikes to the
    upper bound, two training-like and three uniform-random profiles."""
    inputs = REPO / "benchmarks" / "inputs"
    base = json.loads((inputs / "solve_siouxfalls.json").read_text())["prices"]
    return study_profiles(nd, base, deviations=2, training_like=2, random=3)


SIOUXFALLS_KNOWN_MISSES = {"free_flow/random_0/13", "free_flow/random_1/13"}
"""Measured and open (``benchmarks/results/convergence_siouxfalls.txt``, 62 of 64
agree): station 13, a small earner, from a free-flow start at two uniform-random
profiles, +5.9 % and +8.3 %. Traced to 100 iterations both loops settle to the same
level (iterations 41-100 within 3 %): the miss adds the free-flow start's transient,
which outlasts the evaluation, to the default's own low answer at ``random_1``
(-5.5 % ± 2.7 % off its level, ``bench_long_run_siouxfalls.txt``;
docs/research/known-limitations.md)."""


@pytest.mark.slow
@pytest.mark.siouxfalls
def test_siouxfalls_revenues_do_not_depend_on_start_or_cap():
    """The acceptance study on Sioux Falls at its defaults, 6 seeds (about 20 minutes on 2
    cores; ``benchmarks/results/convergence_siouxfalls.txt``): every station of every
    profile agrees with a run to twice the cap without the stationary stop, and with the
    free-flow start but for the known misses, within max(3 SE, 3 %)."""
    nd = evcs_gym.load_scenario("siouxfalls")
    study = convergence_study("siouxfalls", siouxfalls_study_profiles(nd), seeds=6, workers=2)
    bad = {d.split(":")[0] for d in _disagreements(study)}
    assert bad <= SIOUXFALLS_KNOWN_MISSES, bad
