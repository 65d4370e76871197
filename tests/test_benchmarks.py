"""Smoke runs of the benchmarks on ``tiny``: they keep working and their checks hold.

Timings are printed, never asserted (shared, noisy machines); what is asserted is the
correctness figure a benchmark reports, e.g. that the vector env matched serial stepping.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import statistics

import numpy as np
import pytest

import evcs_gym


def test_bench_vector_env_matches_serial_across_an_autoreset(load_script, capsys):
    bench = load_script("benchmarks", "bench_vector_env")
    # rounds=2: step 2 crosses the vector env's autoreset
    figures = bench.main(["--scenario", "tiny", "--steps", "3", "--rounds", "2"])
    out = capsys.readouterr().out
    assert figures["identical"] is True
    for key in (
        "speedup",
        "median_step_speedup",
        "iteration_balance",
        "machine_ceiling",
        "machine_ceiling_median",
    ):
        assert math.isfinite(figures[key]) and figures[key] > 0, key
    assert "machine ceiling" in out and "identical results (obs, rewards, infos): True" in out


def test_bench_vector_env_without_ceiling(load_script, capsys):
    figures = load_script("benchmarks", "bench_vector_env").main(
        ["--scenario", "tiny", "--steps", "1", "--no-ceiling", "--actions", "uniform"]
    )
    assert figures["identical"] is True
    assert "machine_ceiling" not in figures
    assert "machine ceiling" not in capsys.readouterr().out


def test_bench_ue_reachability_on_tiny(load_script, capsys):
    bench = load_script("benchmarks/studies", "bench_ue_reachability")
    argv = ["--scenario", "tiny", "--profiles", "training_0", "random_0"]
    figures = bench.main(argv + ["--movers", "6", "--warmup", "10", "--iterations", "10"])
    out = capsys.readouterr().out
    assert set(figures) == {"training_0", "random_0"}
    # the default loop meets the tail rule near the middle of the bounds
    assert figures["training_0"]["default_loop"]["tail_last"] <= 0.03
    # far from equilibrium there are platoons to move, and the route-cost model predicts a
    # lone platoon's move: the saving is realised
    moves = figures["random_0"]["unilateral"]
    assert moves["movers"] > 0 and moves["share_realising_half"] >= 0.5
    assert moves["realised_saving_mean"] > 0
    for row in figures.values():
        slow = row["slow_best_response"]
        assert 0 <= slow["min_tail"] <= slow["first_tail"] <= 1
    assert "unilateral moves" in out and "slow best response" in out


def test_bench_ue_reachability_names_an_unknown_profile(load_script):
    bench = load_script("benchmarks/studies", "bench_ue_reachability")
    with pytest.raises(SystemExit):
        bench.main(["--scenario", "tiny", "--profiles", "random_99"])


def test_bench_evaluator_reports_why_each_loop_stopped(load_script, capsys):
    bench = load_script("benchmarks", "bench_evaluator")
    summary = bench.bench("tiny", 3, patience=[0, 5])
    out = capsys.readouterr().out
    assert "stall patience off" in out and "stall patience 5" in out and "stalled" in out
    off, on = summary["uniform-random (patience 0)"], summary["uniform-random (patience 5)"]
    assert not any(off["stalled"]) and any(on["stalled"])
    assert not any(c and s for c, s in zip(on["conv"], on["stalled"]))
    # every evaluation's ratio divides by raw simulations timed next to it
    assert len(on["ratios"]) == len(on["raw_s"]) == 3 and min(on["raw_s"]) > 0
    assert on["ratio"] == statistics.median(on["ratios"])
    # the raw simulation's freeing of its World counts in the main ratio only
    assert all(r > q for r, q in zip(on["ratios_run_only"], on["ratios"]))
    # here it only shortened loops that would not have converged (not a law: see settings)
    for c, a, b in zip(off["conv"], off["iterations"], on["iterations"]):
        assert (a == b) if c else (b <= a)


def _uxsim_objects() -> int:
    return sum(str(type(o).__module__).startswith("uxsim") for o in gc.get_objects())


def test_raw_simulation_frees_its_world_without_the_garbage_collector(load_script):
    """The wrapper's reference cycles are broken at once: no UXsim object is left for the
    gc. (Counting all collectable objects was fragile: in the full suite 5,637 other
    objects became garbage meanwhile, source not traced.)"""
    bench = load_script("benchmarks", "bench_evaluator")
    raw = bench.RawSimulation(evcs_gym.load_scenario("tiny", warm_start=False))
    gc.collect()
    gc.disable()
    try:
        before = _uxsim_objects()
        raw.time()
        assert _uxsim_objects() == before
    finally:
        gc.enable()


def test_bench_evaluator_applies_and_prints_setting_overrides(load_script, capsys):
    bench = load_script("benchmarks", "bench_evaluator")
    summary = bench.bench("tiny", 1, station_taste_scale=2.0)
    assert "settings overridden: station_taste_scale=2.0" in capsys.readouterr().out
    assert len(summary["training-like"]["iterations"]) == 1


def test_bench_stall_stop_replays_the_traces_on_tiny(load_script, capsys):
    bench = load_script("benchmarks/studies", "bench_stall_stop")
    argv = [
        "--scenario",
        "tiny",
        "--equilibrium",
        "",
        "--seeds",
        "3",
        "--random",
        "1",
        "--training",
        "0",
    ]
    figures = bench.main([*argv, "--cap", "60", "--patience", "0", "3", "--workers", "1"])
    out = capsys.readouterr().out
    assert set(figures) == {0, 3, "orbit", "against_orbit", "stalled_revenue_error"}
    assert set(figures["against_orbit"]) == set(figures["orbit"])
    off = figures[0]
    assert set(off) == {"base", "deviation_A_p2", "training_0", "random_0", "bench_random_0"}
    for row in off.values():
        # without a stall stop and with the traces' own cap, the replay is the long run
        ok, rel = row["comparisons"]["long"]
        assert ok.all() and not rel.any()
        assert all(why != "stalled" for _, why in row["stops"]["default"])
    hasty = figures[3]
    for name, row in hasty.items():  # a stall stop only ever shortens a loop
        for (n3, _), (n0, _) in zip(row["stops"]["default"], off[name]["stops"]["default"]):
            assert n3 <= n0
    assert "patience 0:" in out and "patience 3:" in out and "orbit averages" in out


def test_bench_stall_stop_reuses_cached_traces_only_under_the_same_settings(
    load_script, tmp_path, capsys
):
    bench = load_script("benchmarks/studies", "bench_stall_stop")
    nd = evcs_gym.load_scenario("tiny", warm_start=False)
    profiles = {"p": {a: np.full(nd.n_periods, 1.0) for a in nd.agent_names}}
    args = ("tiny", profiles, [0], 8, 1, tmp_path)
    first = bench.record(*args, settings=nd.settings)
    assert capsys.readouterr().out.count("iterations (") == len(bench.CONDITIONS)
    again = bench.record(*args, settings=nd.settings)
    assert capsys.readouterr().out.count("iterations (") == 0  # all from the cache
    assert set(again) == set(first)
    for key, trace in first.items():
        assert again[key].iterations == trace.iterations
    tighter = dataclasses.replace(nd.settings, ue_convergence_threshold=1e-4)
    bench.record(*args, settings=tighter)
    assert capsys.readouterr().out.count("iterations (") == len(bench.CONDITIONS)


def test_bench_stall_stop_replays_stable_rounds_on_traces_run_through(load_script, capsys):
    """Traces that run on through convergence replay the scenario's own stable rounds
    exactly as the plain traces do: the switching does not read that setting."""
    bench = load_script("benchmarks/studies", "bench_stall_stop")
    argv = ["--scenario", "tiny", "--equilibrium", "", "--seeds", "3", "--random", "1"]
    argv += ["--training", "0", "--cap", "60", "--patience", "5", "--workers", "1"]
    plain = bench.main(argv)
    through = bench.main([*argv, "--stable-rounds", "3"])
    out = capsys.readouterr().out
    # every through-trace runs to the cap, so every profile has a long-run level
    assert set(through["orbit"]) == set(through["against_orbit"]) == set(through[5])
    for conditions in through["against_orbit"].values():
        assert set(conditions) == {"default", "free_flow", "halved"}
    assert "against their own loop's long-run level" in out
    for name, row in plain[5].items():
        assert through[5][name]["stops"] == row["stops"]
        for c, (_, rel) in row["comparisons"].items():
            assert np.array_equal(through[5][name]["comparisons"][c][1], rel)


def test_bench_stop_rule_compares_candidates_on_the_same_profiles(load_script, capsys):
    bench = load_script("benchmarks/studies", "bench_stop_rule")
    argv = ["--scenario", "tiny", "--equilibrium", "", "--seeds", "2", "--deviations", "1"]
    argv += ["--training", "1", "--random", "0", "--bench-training", "1", "--workers", "1"]
    argv += ["--candidate", "same:ue_tolerance_scale=1.0", "--candidate", "one:ue_max_iterations=1"]
    out = bench.main(argv)
    printed = capsys.readouterr().out
    assert list(out) == ["defaults", "same", "one"]
    # the scenario's own value as a candidate is the defaults, bit for bit
    assert {k: v for k, v in out["same"].items() if k not in ("settings", "seconds")} == {
        k: v for k, v in out["defaults"].items() if k not in ("settings", "seconds")
    }
    assert out["defaults"]["comparisons"] == 4 * 2 * 2  # profiles x conditions x stations
    assert set(out["defaults"]["default_iterations"]) == {"base", "deviation", "training"}
    assert out["one"]["default_iterations"]["base"] == (1, 1.0, 1)
    assert out["one"]["default_unconverged"] == out["one"]["evaluations"] == 8
    assert "summary" in printed and "######## one" in printed


def test_bench_stop_rule_can_skip_the_defaults(load_script, capsys):
    bench = load_script("benchmarks/studies", "bench_stop_rule")
    argv = ["--scenario", "tiny", "--equilibrium", "", "--seeds", "2", "--deviations", "0"]
    argv += ["--training", "0", "--random", "0", "--bench-training", "0", "--workers", "1"]
    out = bench.main([*argv, "--no-defaults", "--candidate", "one:ue_max_iterations=1"])
    assert list(out) == ["one"]
    assert "######## defaults" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main([*argv, "--no-defaults"])
    assert "--no-defaults needs at least one --candidate" in capsys.readouterr().err


def test_bench_stop_rule_candidate_syntax(load_script):
    bench = load_script("benchmarks/studies", "bench_stop_rule")
    assert bench.parse_candidate("a:x=1,y=off") == ("a", {"x": 1, "y": "off"})
    for bad in ("noname", ":x=1", "a:", "a:x"):
        with pytest.raises(ValueError, match="--candidate"):
            bench.parse_candidate(bad)


def test_bench_tolerance_sweep_replays_real_evaluations_on_tiny(load_script, tmp_path, capsys):
    """The sweep's replayed stops are what an evaluation at that scale and start returns,
    and a second run takes every trace from the cache."""
    bench = load_script("benchmarks/studies", "bench_tolerance_sweep")
    argv = ["--scenario", "tiny", "--prices", "", "--profiles", "base", "training_0"]
    argv += ["--seeds", "3", "--cap", "60", "--scales", "1", "0.5", "--workers", "1"]
    figures = bench.main([*argv, "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.count("[1/24") == 1 and "transient at scale 1" in out
    assert set(figures) == {"base", "training_0"}
    rows = {(r["scale"], r["rule"]): r for r in figures["training_0"]["rows"]}
    assert set(rows) == {(s, r) for s in (1.0, 0.5) for r in ("scenario's", "rule alone")}

    nd = evcs_gym.load_scenario("tiny", warm_start=False)
    prices = evcs_gym.convergence.study_profiles(nd, None, deviations=4, training_like=3)
    traces = bench.record(
        "tiny", {"training_0": prices["training_0"]}, [0.5], [0, 1, 2], 60, 1, tmp_path
    )
    assert capsys.readouterr().out == "0 traces recorded, 6 from the cache\n"
    for start, warm in (("warm", True), ("free_flow", False)):
        ev = evcs_gym.EVCSRewardEvaluator(
            evcs_gym.load_scenario("tiny", warm_start=warm, ue_tolerance_scale=0.5)
        )
        for seed, n in enumerate(rows[(0.5, "scenario's")]["iterations"][start]):
            res = ev.evaluate(prices["training_0"], seed=seed)
            assert n is not None  # tiny's own cap is 60: its rule stops every trace
            assert res.ue_iterations == n
            replayed = traces[("training_0", 0.5, start, seed)].revenues[n - 1]
            assert np.array_equal(replayed, [res.revenues[a] for a in nd.agent_names])
