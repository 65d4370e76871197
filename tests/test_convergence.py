"""Convergence study (evcs_gym.convergence): revenues independent of UE start and tolerance.

The properties of docs/concepts.md, "What an evaluation promises", as tests: for a
profile near the reference, single-period deviations, training-like noise and
uniform-random prices, each station's mean revenue over 6 seeds under the default UE
agrees with (a) the free-flow start, (b) every stop-rule tolerance halved and (c) the
iteration cap doubled from the same start, within max(3 standard errors, ``rel_tol`` of
the station's revenue): 2 %, on Sioux Falls and on ``tiny``. ``tiny``'s drivers carry
station tastes of scale 4 since 2026-11-27, as Sioux Falls' do
(docs/research/heterogeneous-drivers.md); with identical drivers its rule had to be 5 %
(one platoon is 3-5 % of station B's revenue) and one comparison still failed it, which
a test below keeps pinned.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import evcs_gym
from evcs_gym.cli import main as cli
from evcs_gym.convergence import (
    STANDARD_CONDITIONS,
    ConvergenceStudy,
    _condition_network,
    convergence_study,
    study_profiles,
    uniform_profile,
)


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
    profiles = study_profiles(nd, deviations=2, training_like=1, random=1)
    return convergence_study("tiny", profiles, seeds=6, workers=2, rel_tol=0.02)


def test_tiny_revenues_do_not_depend_on_start(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("free_flow/")]
    assert not bad, bad


def test_tiny_revenues_do_not_depend_on_tolerance(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("halved/")]
    assert not bad, bad
    # the spike that identical drivers left loose (below) is pinned to the bit
    assert tiny_study.comparison("halved", "deviation_B_p2")["B"]["difference"] == 0.0


def test_tiny_revenues_do_not_depend_on_the_iteration_cap(tiny_study):
    bad = [d for d in _disagreements(tiny_study) if d.startswith("doubled_cap/")]
    assert not bad, bad


def test_identical_drivers_leave_the_spike_loose_that_tastes_pin(tiny_study):
    """Why ``tiny`` has station tastes: with identical drivers (``station_taste_scale=0``,
    its default before 2026-11-27) and B's period 2 at the bound, B's revenue under halved
    tolerances is 604 ± 135 (18 %) below the default's (3,417), beyond even a 5 % rule.
    Nobody pays B's 2.0; the difference is the equal-price split of period 1 (both at 1.25):
    B's period-1 customers are 113 vehicles under the default against 93 under halved
    tolerances, four platoons of near-indifferent drivers
    (docs/research/known-limitations.md). With the tastes of the default the same
    comparison moves by nothing. A better UE that made identical drivers agree would fail
    this test: then the research notes and this docstring need revisiting."""
    nd = evcs_gym.load_scenario("tiny", station_taste_scale=0.0)
    profiles = study_profiles(nd, deviations=2, training_like=1, random=1)
    identical = convergence_study(
        "tiny", profiles, seeds=6, workers=2, rel_tol=0.05, station_taste_scale=0.0
    )
    assert not identical.comparison("halved", "deviation_B_p2")["B"]["agrees"]
    assert tiny_study.comparison("halved", "deviation_B_p2")["B"]["difference"] == 0.0


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
            else:
                assert default.ue_iterations == cap < longer.ue_iterations or longer.converged
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
    nd = condition("doubled_cap", ue_max_iterations=3)
    assert nd.settings.ue_max_iterations == 6
    short = evcs_gym.load_scenario("tiny", ue_max_iterations=3)  # the caller's start
    assert np.array_equal(nd.initial_route_choice, short.initial_route_choice)
    assert not np.array_equal(short.initial_route_choice, default.initial_route_choice)
    # the long run: the doubled cap also turns the caller's stall stop off, the others keep it
    assert condition("doubled_cap", ue_stall_patience=20).settings.ue_stall_patience == 0
    assert condition("halved", ue_stall_patience=20).settings.ue_stall_patience == 20
    assert condition("free_flow", ue_stall_patience=20).settings.ue_stall_patience == 20


@pytest.mark.parametrize(
    ("condition", "population", "price_aware"),
    [("free_flow_charging", "charging", False), ("free_flow_background", "non_charging", True)],
)
def test_free_flow_halves_move_one_population_of_the_callers_start(
    tiny, condition, population, price_aware
):
    nd = _condition_network("tiny", condition, tiny, {})
    moved = tiny.veh_charging if population == "charging" else ~tiny.veh_charging
    free_flow = tiny.group_routes[tiny.veh_group, 0]
    start = nd.initial_route_choice
    assert np.array_equal(start[moved], free_flow[moved])
    assert np.array_equal(start[~moved], tiny.initial_route_choice[~moved])  # the rest: warm
    assert not np.array_equal(start, tiny.initial_route_choice)  # the condition does move some
    assert nd.reference_traveltime is tiny.reference_traveltime  # no new warm start
    assert nd.settings.ue_price_aware_start is price_aware
    assert nd.warm_start_info["free_flow_routes"] == population
    assert nd.settings.ue_tolerance_scale == tiny.settings.ue_tolerance_scale


def test_free_flow_halves_run_only_when_asked(tiny):
    profiles = {"base": uniform_profile("tiny", 1.0)}
    study = convergence_study(
        "tiny", profiles, seeds=2, conditions=["free_flow_charging", "free_flow_background"]
    )
    assert study.conditions == ["default", "free_flow_charging", "free_flow_background"]
    assert set(study.comparison("free_flow_background", "base")) == set(tiny.agent_names)
    assert "free_flow_charging" not in STANDARD_CONDITIONS  # a diagnostic, not a claim
    # the long names widen the condition column: every row's iterations end under the header's
    lines = study.table().splitlines()
    header = next(line for line in lines if line.startswith("  condition"))
    rows = [re.match(r"  (\S+)\s+(\S+)", line) for line in lines if line.startswith("  free_")]
    assert [r.group(1) for r in rows] == ["free_flow_charging", "free_flow_background"]
    assert {r.end(2) for r in rows} == {header.index("iterations") + len("iterations")}


def test_study_reports_every_profile_and_condition(tiny_study):
    assert tiny_study.conditions == ["default", "free_flow", "halved", "doubled_cap"]
    assert tiny_study.profiles == [
        "base",
        "deviation_A_p2",
        "deviation_B_p2",
        "training_0",
        "random_0",
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
        max(3 * row["difference_se"], 0.02 * abs(row["default"]))
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


SIOUXFALLS_KNOWN_MISSES = {"free_flow/random_0/3"}
"""Measured and open (benchmarks/results/convergence_siouxfalls.txt, the 0.8 % all-platoon
mean gap): station 3 at the uniform-random profile from a free-flow start, -705 ± 101 on
29,482 (2.4 %), a stalled loop; the other 47 comparisons agree. Over 12 seeds that
comparison agrees (-244 ± 197, convergence_siouxfalls_solver_12seeds.txt: seeds 6-11
lean the other way), but this study over 12 seeds misses another, station 13 at its base
from free flow (+417 ± 120 on 16,854, 2.5 %; convergence_siouxfalls_12seeds.txt, 63 of
64); it keeps its 6 seeds and the miss as measured. Until the
stall stop judged loops against the unscaled rule (2026-11-28), halved loops stalled at
the default's quality, and two of them missed (station 13 at this profile, +2.5 %; station
10 at its spike, -4.2 %). At the 1 % rule (``*_mean1pct.txt``) the free-flow start
missed at this profile instead (stations 13 and 10, 3.1 % and 2.3 %). With identical
drivers: station 3 at this profile, 6.9 %."""


def _siouxfalls_study(**overrides):
    """The acceptance study's Sioux Falls profiles (the previous solver equilibrium, one
    spike, one training-like and one uniform-random profile) at 6 seeds."""
    nd = evcs_gym.load_scenario("siouxfalls")
    base = {"10": [0.53] * 8, "13": [0.5] * 8, "18": [0.75] * 8, "3": [0.5] * 8}
    profiles = study_profiles(nd, base, deviations=1, training_like=1, random=1)
    return convergence_study("siouxfalls", profiles, seeds=6, workers=2, **overrides)


@pytest.mark.slow
@pytest.mark.siouxfalls
def test_siouxfalls_revenues_do_not_depend_on_start_tolerance_or_cap():
    """The issue's acceptance study on Sioux Falls at its defaults (about 10 minutes on 2
    idle cores): the uniform-random evaluations stall (``ue_stall_patience=20``), and
    the revenues agree with the free-flow start, the halved tolerances and a
    200-iteration run without the stall stop, but for the known miss of 2.4 %."""
    study = _siouxfalls_study()
    assert max(study.iteration_stats("default", "random_0")["iterations"]) < 100  # stalled
    bad = {d.split(":")[0] for d in _disagreements(study)}
    assert bad <= SIOUXFALLS_KNOWN_MISSES, bad


@pytest.mark.slow
@pytest.mark.siouxfalls
def test_siouxfalls_revenues_without_the_stall_stop():
    """The same study with the stall stop off (``ue_stall_patience=0``, about 15 minutes):
    the uniform-random evaluations run to the 100-iteration cap, and every comparison
    agrees (convergence_siouxfalls_no_stall.txt; at the 1 % rule the free-flow start
    missed at the base profile). The known miss of the default study is an evaluation
    that the stall stop ends (a uniform-random one from a free-flow start)."""
    study = _siouxfalls_study(ue_stall_patience=0)
    assert min(study.iteration_stats("default", "random_0")["iterations"]) == 100  # the cap
    assert _disagreements(study) == []


@pytest.mark.slow
@pytest.mark.siouxfalls
def test_siouxfalls_solver_equilibrium_revenues_do_not_depend_on_start_or_tolerance():
    """The issue's acceptance study at the solver's equilibrium of the default game
    (``benchmarks/inputs/solve_siouxfalls.json``): that profile, its spike, a
    training-like and a uniform-random profile, each from the free-flow start and under
    halved tolerances, over 12 seeds (about 8 minutes). Every comparison agrees
    (convergence_siouxfalls_solver_12seeds.txt). Over seeds 0-5 alone one did not
    (station 3 at the uniform-random profile from free flow, -705 ± 101 on 29,482, 2.4 %;
    convergence_siouxfalls_solver.txt); over 0-11 it is -244 ± 197 (0.8 %). With
    identical drivers the 6-seed study split by the start at the equilibrium (station 3:
    -13 % at the 1 % rule, -11 % at 0.8 %; docs/research/heterogeneous-drivers.md)."""
    inputs = Path(__file__).resolve().parents[1] / "benchmarks" / "inputs"
    base = json.loads((inputs / "solve_siouxfalls.json").read_text())["prices"]
    nd = evcs_gym.load_scenario("siouxfalls")
    profiles = study_profiles(nd, base, deviations=1, training_like=1, random=1)
    study = convergence_study(
        "siouxfalls", profiles, seeds=12, conditions=("default", "free_flow", "halved"), workers=2
    )
    assert _disagreements(study) == []
