"""Smoke runs of the benchmarks on ``tiny``: they keep working and their checks hold.

Timings are printed, never asserted (shared, noisy machines); what is asserted is the
correctness figure a benchmark reports, e.g. that the vector env matched serial stepping.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
from pathlib import Path

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


def test_bench_table_env_times_a_step_against_an_evaluation(load_script, capsys):
    figures = load_script("benchmarks", "bench_table_env").main(
        ["--steps", "100", "--evaluations", "2"]
    )
    assert all(math.isfinite(v) and v > 0 for v in figures.values()), figures
    assert figures["ratio"] == figures["evaluation_s"] / figures["step_s"]
    assert "µs" in capsys.readouterr().out


def test_bench_load_times_cold_and_cached_loads_in_new_processes(load_script, capsys):
    results = load_script("benchmarks", "bench_load").main(["--scenarios", "tiny", "--uncached"])
    tiny = results["tiny"]
    assert not tiny["cold"]["from_cache"] and tiny["cached"]["from_cache"]
    assert tiny["same"] is True and tiny["entry_mb"] > 0
    assert "tiny" in capsys.readouterr().out


def test_bench_soak_loses_nothing_and_matches_serial_under_sigkill(load_script, capsys):
    figures = load_script("benchmarks", "bench_soak").main(
        ["--evaluations", "96", "--kills", "3", "--kill-every", "0.6", "--no-baseline"]
    )
    assert figures["evaluations"] >= 96 and figures["kills"] >= 1
    assert figures["lost"] == 0 and figures["mismatches"] == 0
    assert figures["checked"] == figures["evaluations"]
    assert "bit-identical to serial" in capsys.readouterr().out


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


def test_market_probe_on_tiny_shows_an_interior_joint_optimum(load_script, capsys):
    probe = load_script("benchmarks/studies", "market_probe")
    argv = ["--scenario", "tiny", "--levels", "5", "--budget", "6", "--grid", "3"]
    argv += ["--seeds", "1", "--workers", "1", "--set", "station_taste_scale=12"]
    argv += ["--set", "station_taste_logit=true", "--set", "charging_outside_cost=30"]
    figures = probe.main(argv)
    uniform = figures["uniform"]
    assert len(uniform) == 5 and set(figures["guesses"]) == {"floor", "mid-bounds", "ceiling"}
    # the outside option takes drivers as prices rise, so the total peaks inside the bounds
    charged = [row["charged"] for row in uniform.values()]
    assert charged == sorted(charged, reverse=True) and charged[-1] < uniform[0.5]["charging"]
    totals = [row["total"] for row in uniform.values()]
    assert max(totals) > totals[-1]
    assert figures["guesses"]["floor"] > 0.05  # the floor is far below the Nash markup
    assert "best uniform profile" in capsys.readouterr().out


def test_seed_spread_measures_a_profile_on_each_seed(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "seed_spread")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"prices": {"A": [1.0] * 4, "B": [1.5] * 4}}))
    argv = [str(profile), "--scenario", "tiny", "--seeds", "3", "--workers", "1"]
    figures = study.main([*argv, "--variant", "-", "--variant", "station_taste_scale=8"])
    assert set(figures) == {"-", "station_taste_scale=8"}
    for run in figures.values():
        assert len(run["iterations"]) == 3 and set(run["spread"]) == {"A", "B"}
        assert all(0 <= v < 0.5 for v in run["spread"].values())
    assert "SE of 4 seeds" in capsys.readouterr().out


def test_stop_rule_replay_replays_the_scenarios_rule_and_a_candidate(load_script, capsys):
    study = load_script("benchmarks/studies", "stop_rule_replay")
    rule = '{"ue_convergence_stable_rounds": 6}'
    argv = ["--scenario", "tiny_market", "--seeds", "2", "--training", "2", "--random", "0"]
    figures = study.main([*argv, "--iterations", "16", "--workers", "1", "--rule", rule])
    assert list(figures["rules"]) == ["{}", rule]
    for replay in figures["rules"].values():
        assert replay["of"] > 0 and 0 <= replay["agree"] <= replay["of"]
        assert len(replay["misses"]) == replay["of"] - replay["agree"]
    out = capsys.readouterr().out
    assert "long-run level (iterations 9-16)" in out and f"rule {rule}: agree" in out


def test_bench_ue_reachability_names_an_unknown_profile(load_script):
    bench = load_script("benchmarks/studies", "bench_ue_reachability")
    with pytest.raises(SystemExit):
        bench.main(["--scenario", "tiny", "--profiles", "random_99"])


def test_bench_evaluator_reports_why_each_loop_stopped(load_script, capsys):
    bench = load_script("benchmarks", "bench_evaluator")
    summary = bench.bench("tiny", 3)
    out = capsys.readouterr().out
    assert f"evcs-gym {evcs_gym.__version__}, settings " in out
    assert list(summary) == ["training-like (mid-bounds)", "uniform-random"]
    rand = summary["uniform-random"]
    assert not any(c and s for c, s in zip(rand["conv"], rand["stationary"]))
    # every evaluation's ratio divides by raw simulations timed next to it
    assert len(rand["ratios"]) == len(rand["raw_s"]) == 3 and min(rand["raw_s"]) > 0
    assert rand["ratio"] == statistics.median(rand["ratios"])
    # the raw simulation's freeing of its World counts in the main ratio only
    assert all(r > q for r, q in zip(rand["ratios_run_only"], rand["ratios"]))


def test_bench_evaluator_reads_training_centres_from_the_inputs(load_script):
    bench = load_script("benchmarks", "bench_evaluator")
    nd = evcs_gym.load_scenario("siouxfalls", warm_start=False)
    sets = bench.price_sets(nd, 2)
    assert list(sets) == [
        "training-like (solver equilibrium)",
        "training-like (learned (MADDPG))",
        "training-like (mid-bounds)",
        "uniform-random",
    ]
    centre = bench.centres(nd)["solver equilibrium"]
    for profile in sets["training-like (solver equilibrium)"]:  # noise of 5 % of the range
        for a, (lo, hi) in nd.price_bounds.items():
            assert np.all(np.abs(profile[a] - centre[a]) <= 5 * 0.05 * (hi - lo))


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
    assert len(summary["training-like (mid-bounds)"]["iterations"]) == 1


def test_bench_long_run_compares_real_answers_with_the_level_on_tiny(load_script, capsys):
    bench = load_script("benchmarks", "bench_long_run")
    args = ["--scenario", "tiny", "--seeds", "2", "--random", "1", "--iterations", "40"]
    out = bench.main([*args, "--level-from", "21", "--workers", "1"])
    text = capsys.readouterr().out
    assert "all agree:" in text and out["version"] == evcs_gym.__version__
    assert list(out["profiles"]) == [
        "base",
        "deviation_A_p2",
        "deviation_B_p2",
        "training_0",
        "training_1",
        "random_0",
    ]
    # the replayed answer is what a real evaluation returns
    row = out["profiles"]["random_0"]
    ev = evcs_gym.EVCSRewardEvaluator(evcs_gym.load_scenario("tiny"))
    real = [ev.evaluate(row["prices"], seed=s) for s in (0, 1)]
    assert row["iterations"] == [r.ue_iterations for r in real]
    answer = np.mean([[r.revenues[a] for a in out["agents"]] for r in real], axis=0)
    assert np.allclose(row["answer"], answer, rtol=1e-12)
    assert all(isinstance(a, bool) for a in row["agrees"])


SIOUXFALLS_LONG_RUN_KNOWN_MISSES = {("random_4", "10")}
"""Measured and open (``benchmarks/results/bench_long_run_siouxfalls.txt``): at the
uniform-random profile ``random_4`` station 10 sits about 5 % below its level for
iterations 11-50 on every seed, a transient of some 50 iterations that an evaluation
stopping at 30 cannot see; its answer is -4.5 % ± 0.9 % off the level of iterations
41-100 (band 3 %). The other 39 station-profile comparisons agree."""


@pytest.mark.slow
@pytest.mark.siouxfalls
def test_siouxfalls_evaluations_answer_the_long_run_level(load_script):
    """The long-run check at 4 seeds (about 10 minutes on 2 cores): every station of
    the convergence study's profiles and five uniform-random ones, replayed as the
    default evaluation, lies within max(3 SE, 3 %) of the level of the same loop run to
    100 iterations, but for the known miss."""
    bench = load_script("benchmarks", "bench_long_run")
    out = bench.main(["--scenario", "siouxfalls", "--seeds", "4", "--random", "5"])
    misses = {
        (name, agent)
        for name, row in out["profiles"].items()
        for agent, ok in zip(out["agents"], row["agrees"])
        if not ok
    }
    assert misses <= SIOUXFALLS_LONG_RUN_KNOWN_MISSES, misses


def test_repeated_market_plays_the_impulse_on_the_learned_policies(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "repeated_market")
    argv = ["--budget", "40", "--seeds", "0", "--horizon", "6", "--shock", "3", "--last", "2"]
    argv += ["--smoke"]
    assert study.main([*argv, "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "maddpg__seed0.json").read_text())
    path, impulse = np.asarray(record["path"]), np.asarray(record["impulse"])
    assert path.shape == impulse.shape == (6, 2, 4)  # rounds, stations, periods
    np.testing.assert_array_equal(path[:3], impulse[:3])  # the same rounds until the cut
    floor = evcs_gym.load_scenario("tiny_market").price_bounds["A"][0]
    assert np.all(impulse[3, 0] == floor) and not np.all(path[3, 0] == floor)
    assert record["collusion_index"]["delta"] is not None and record["evaluations"] == 40
    assert (tmp_path / "impulse_response.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "| maddpg | 0 |" in out and "maddpg (1 seeds): Δ" in out
    assert study.main([*argv, "--out", str(tmp_path), "--resume"]) == 0  # kept, not rerun
    assert "kept maddpg__seed0.json" in capsys.readouterr().out
    assert study.main([*argv, "--out", str(tmp_path), "--report-only", "--rescore"]) == 0
    again = json.loads((tmp_path / "maddpg__seed0.json").read_text())
    assert again["superseded"] == [
        {k: record[k] for k in study.SCORED} | {"search": study.VERIFY_0_3_0}
    ]
    assert again["verification"]["search"] == "converged" and again["path"] == record["path"]
    assert "(was " in capsys.readouterr().out


def test_repeated_market_studies_another_game_with_its_references(load_script):
    """``--set`` makes the 0.3.0 ``tiny_market`` again, and ``--references`` gives it the
    references it no longer ships (Δ and the plot's lines)."""
    study = load_script("benchmarks/studies", "repeated_market")
    inputs = Path(__file__).parents[1] / "benchmarks/inputs"
    argv = ["--set", "charging_car_rate=0.3", "--set", "reward_scale=2000", "--references"]
    argv += [str(inputs / f"tiny_market_{kind}_0.3.0.json") for kind in ("nash", "collusive")]
    args = study.parse_args(argv)
    nd = study.game(args)
    assert nd.settings_hash == "103e38a91c73"  # the archived study's game
    refs = study.references(args, nd)
    nash = json.loads((inputs / "tiny_market_nash_0.3.0.json").read_text())
    np.testing.assert_array_equal(refs.nash["B"], nash["B"])
    assert "--set reward_scale=2000 --references" in study.command(
        args, [{"algorithm": "maddpg", "seed": 0}]
    )
    with pytest.raises(SystemExit, match="give --references"):
        study.references(study.parse_args(argv[:4]), nd)


def test_calvano_study_smoke_and_resume(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "calvano")
    argv = ["--parts", "anchor", "simulator", "tiny_market", "--sessions", "2"]
    argv += ["--max-rounds", "2000", "--window", "500", "--m-anchor", "3", "--m-tiny", "3"]
    argv += ["--drivers", "200", "--horizon", "5", "--out", str(tmp_path)]
    results = study.main(argv)
    assert set(results) == {"anchor", "simulator", "tiny_market"}
    for part in results:
        summary = results[part]["qlearning"]["summary"]
        assert summary["sessions"] == 2 and len(summary["impulse"]) == 2
        assert (tmp_path / f"impulse_{part}.png").is_file()
    assert results["simulator"]["closed_form"]["drivers"] == 200
    assert (tmp_path / "tables" / "tiny_market.npz").is_file()
    report = (tmp_path / "report.md").read_text()
    assert "## Overview" in report and "deep learners" in report
    capsys.readouterr()
    again = study.main([*argv, "--resume"])
    assert "== " not in capsys.readouterr().out  # every part kept
    assert again["anchor"]["qlearning"]["sessions"] == results["anchor"]["qlearning"]["sessions"]


def test_price_war_study_compares_the_critic_with_the_simulator(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "price_war")
    argv = ["--scenario", "tiny", "--budget", "12", "--stages", "6", "12", "--points", "3"]
    assert study.main([*argv, "--workers", "1", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "maddpg__seed0.json").read_text())
    assert [s["evaluations"] for s in record["stages"]] == [6, 12]
    stage = record["stages"][-1]
    for agent in ("A", "B"):
        assert np.shape(stage["critic"][agent]) == np.shape(stage["simulator"][agent]) == (4, 3)
    # the training path is every training evaluation's pure prices
    assert len(record["path"]) == 12 and set(record["path"][0]) == {"A", "B"}
    assert "critic's argmax at a bound" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "maddpg__seed0.png").stat().st_size > 0


def test_search_plateau_records_each_search_and_resumes(load_script, tmp_path):
    study = load_script("benchmarks/studies", "search_plateau")
    argv = ["--scenario", "tiny", "--profiles", "mid", "--searches", "budget32", "converged-0.4"]
    argv += ["--seeds", "2", "--workers", "1", "--out", str(tmp_path)]
    assert study.main(argv) == 0
    records = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "records/mid").iterdir()}
    assert set(records) == {"budget32", "converged-0.4"}  # 0.4.0's: cheaper
    assert records["converged-0.4"]["converged"] is True
    assert (
        records["converged-0.4"]["evaluations"] > 0
        and records["converged-0.4"]["raw_simulations"] > 0
    )
    report = (tmp_path / "report.md").read_text()
    assert "| mid |" in report and "converged-x2" not in report
    before = records["converged-0.4"]["date"]
    assert study.main([*argv, "--resume"]) == 0  # kept, not measured again
    assert json.loads((tmp_path / "records/mid/converged-0.4.json").read_text())["date"] == before
    run = json.loads((tmp_path / "run.json").read_text())
    assert len(run["commands"]) == 2 and "--resume" in run["command"]
    # other seeds make a record stale: held out, the search scores on seed 2
    assert study.main([*argv, "--resume", "--held-out", "--searches", "budget32"]) == 0
    held = json.loads((tmp_path / "records/mid/budget32.json").read_text())["certificate"]
    assert held["seeds"] == [0, 1] and held["search_seeds"] == [2] and held["held_out"]
    assert "seeds [2] (held out" in (tmp_path / "report.md").read_text()
    stale = json.loads((tmp_path / "records/mid/budget32.json").read_text())
    stale["certificate"]["prices"]["A"][0] += 0.1  # another profile's record: measured again
    (tmp_path / "records/mid/budget32.json").write_text(json.dumps(stale))
    assert study.main([*argv, "--resume", "--searches", "budget32"]) == 0
    again = json.loads((tmp_path / "records/mid/budget32.json").read_text())
    assert again["certificate"]["prices"] == records["budget32"]["certificate"]["prices"]
    # the report alone: a search without a record stays unmeasured
    assert study.main([*argv, "--report-only", "--searches", "converged-0.4", "converged-x2"]) == 0
    assert not (tmp_path / "records/mid/converged-x2.json").exists()
    assert "| mid |" in (tmp_path / "report.md").read_text()


def test_search_plateau_judges_a_search_against_the_stronger_ones(load_script):
    study = load_script("benchmarks/studies", "search_plateau")
    figures = {"converged": 0.0165, "converged-x2": 0.0255, "converged-x4": 0.0253, "de": 0.0208}
    records = {k: {"relative_nash_conv": v} for k, v in figures.items()}
    assert study.plateau(records) == (
        "converged-x2 +0.90% (MOVES), converged-x4 +0.88% (MOVES), de +0.43% (holds)"
    )
    assert (
        study.plateau(records, "converged-x2") == "converged-x4 -0.02% (holds), de -0.47% (holds)"
    )
    assert study.plateau({"converged": records["converged"]}) == "nothing to compare"


def test_search_plateau_gives_the_nash_conv_out_of_sample(load_script):
    """The seeds the search scored on are left out: the winner's curse is on them."""
    study = load_script("benchmarks/studies", "search_plateau")
    cert = {
        "seeds": [0, 1, 2, 3],
        "search_seeds": [0],
        "rewards": {"A": 100.0, "B": 100.0},
        "deviations": {  # A gains 10 on seed 0 only; B loses out of sample (clipped)
            "A": {"current_rewards": [100.0] * 4, "best_rewards": [110.0, 102.0, 104.0, 103.0]},
            "B": {"current_rewards": [100.0] * 4, "best_rewards": [120.0, 99.0, 98.0, 97.0]},
        },
    }
    nash_conv, se, seeds = study.out_of_sample(cert)
    assert seeds == [1, 2, 3] and nash_conv == pytest.approx(3 / 200)
    assert se == pytest.approx(math.sqrt(1 / 3 + 1 / 3) / 200)
    assert study.out_of_sample({**cert, "search_seeds": [7]}) is None  # held out already
    assert study.out_of_sample({**cert, "search_seeds": [0, 1, 2]}) is None  # one seed left


def test_tune_recipe_scores_trials_on_its_own_seeds_and_resumes(load_script, tmp_path):
    study = load_script("benchmarks/studies", "tune_recipe")
    argv = ["--scenario", "tiny_market", "--budget", "8", "--seeds", "100", "--verify-seeds", "2"]
    argv += ["--verify-budget", "2", "--workers", "1", "--out", str(tmp_path)]
    assert study.main([*argv, "--trials", "1"]) == 0
    (first,) = json.loads((tmp_path / "trials.json").read_text())["trials"]
    # trial 0 is the game's shipped recipe, trained with it on seed 100
    assert first["params"]["updates_per_learn"] == 32
    assert [r["seed"] for r in first["runs"]] == [100] and first["runs"][0]["raw_simulations"] > 0
    assert first["value"] == first["runs"][0]["nash_conv_pct"] >= 0
    assert "updates_per_learn=32" in (tmp_path / "logs/trial0_seed100.log").read_text()
    assert study.main([*argv, "--trials", "2", "--resume"]) == 0
    trials = json.loads((tmp_path / "trials.json").read_text())["trials"]
    assert trials[0] == first and len(trials) == 2  # kept, then one new trial
    assert set(trials[1]["params"]) == set(study.SPACE)
    assert "Trial 0 is the shipped recipe" in (tmp_path / "tuning.md").read_text()
    # --confirm trains a trial's settings on other seeds, once, and reports them
    confirm = [*argv[:5], "102", *argv[6:], "--confirm", "1"]
    assert study.main(confirm) == 0 and study.main(confirm) == 0
    data = json.loads((tmp_path / "trials.json").read_text())
    (runs,) = data["trials"][1]["confirmed"].values()
    assert [r["seed"] for r in runs["runs"]] == [102] and data["args"]["seeds"] == [100]
    assert data["trials"][0] == first  # the others untouched
    tuning = (tmp_path / "tuning.md").read_text()
    assert "training seeds 100;" in tuning and "| 1 | 102 |" in tuning
    commands = json.loads((tmp_path / "run.json").read_text())["commands"]
    assert ["--confirm" in c["command"] for c in commands] == [False, False, True, True]


def test_tune_recipe_baseline_is_the_recipe_or_else_the_package_defaults(load_script):
    from evcs_gym.baselines import MADDPGConfig
    from evcs_gym.baselines.recipe import learner_config

    study = load_script("benchmarks/studies", "tune_recipe")
    assert study.baseline_params("tiny_market", "maddpg")["updates_per_learn"] == 32
    defaults = learner_config(MADDPGConfig, 600)
    anaheim = study.baseline_params("anaheim", "maddpg")  # a game without a recipe
    assert anaheim == {name: getattr(defaults, name) for name in study.SPACE}
    assert study.baseline_name("anaheim") == "the package's defaults"
    sioux = study.baseline_params("siouxfalls", "maddpg")  # its recipe: the defaults at 200
    defaults_at_200 = learner_config(MADDPGConfig, 200)
    assert sioux == {name: getattr(defaults_at_200, name) for name in study.SPACE}
    assert study.baseline_params("tiny", "maddpg")["updates_per_learn"] == 4  # tiny's recipe
    assert study.baseline_name("tiny_market") == "the shipped recipe"
    # the space widens to hold the defaults (2 updates; a warm-up of 50 at 200 evaluations)
    args = study.parse_args(["--scenario", "siouxfalls", "--budget", "200", "--out", "x"])
    space = study.search_space(args)
    assert 2 in space["updates_per_learn"].choices and 50 in space["random_warmup"].choices
    assert 2 not in study.SPACE["updates_per_learn"].choices
    assert study.new_study(args, []).ask(space)  # a draw from the widened space


def test_tune_recipe_resumed_study_draws_settings_of_its_own(load_script):
    study = load_script("benchmarks/studies", "tune_recipe")
    args = study.parse_args(["--scenario", "tiny_market", "--algo", "maddpg", "--out", "x"])
    first = study.new_study(args, []).ask(study.SPACE).params
    resumed = study.new_study(args, [{"params": first, "value": 1.0}])
    assert len(resumed.trials) == 1 and resumed.ask(study.SPACE).params != first
    assert study.new_study(args, []).ask(study.SPACE).params == first  # seeded


def test_nash_ridge_reads_best_responses_slope_and_slack_off_its_curves(load_script):
    study = load_script("benchmarks/studies", "nash_ridge")
    offsets = [-0.1, -0.05, 0.0, 0.05, 0.1]
    x = 1.0 + np.asarray(offsets)

    def curve(shift: float) -> dict:
        # a parabola peaking at 1 + shift / 2 (best-response slope 1/2)
        own = 100 - 1000 * (x - 1.0 - shift / 2) ** 2
        return {"agent": "A", "rival": "B", "period": 0, "rival_shift": shift,
                "own_prices": x.tolist(), "own_revenue": own.tolist(),
                "rival_revenue": [100.0] * len(x)}  # fmt: skip

    record = {"offsets": offsets, "curves": [curve(-0.1), curve(0.0), curve(0.1)]}
    (row,) = study.analyse(record)
    np.testing.assert_allclose(row["best_responses"], [0.95, 1.0, 1.05], atol=1e-9)
    assert row["slope"] == pytest.approx(0.5)
    # on the diagonal at -0.1 the station prices at 0.9, 0.05 from its best response
    assert row["slack"][0] == pytest.approx(100 / (100 - 1000 * 0.05**2) - 1)
    assert row["slack"][1] == 0.0
    assert row["total_change"][1] == 0.0 and row["total_change"][0] < 0
    assert study.vertex(x, -((x - 1.03) ** 2)) == pytest.approx(1.03)
    assert study.vertex(x, x) == x[-1]  # a maximum at the end is not refined


@pytest.mark.slow  # ~3 minutes: two converged searches on tiny_market
def test_nash_ridge_study_on_tiny_market(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "nash_ridge")
    argv = ["--half-width", "0.05", "--step", "0.05", "--rival-shifts", "-0.05", "0",
            "--seeds", "0", "--diagonal-shifts", "-0.1", "0", "--verify-seeds", "2"]  # fmt: skip
    assert study.main([*argv, "--workers", "2", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "nash_ridge.json").read_text())
    assert len(record["curves"]) == 2 * 4 * 2  # stations x periods x rival shifts
    below, at_n = sorted(record["diagonal"], key=lambda d: d["shift"])
    assert below["delta"] < at_n["delta"] == pytest.approx(0.0)
    assert "Profiles on the diagonal" in (tmp_path / "nash_ridge.md").read_text()


def test_default_seeds_runs_the_default_command_per_seed_and_resumes(load_script, tmp_path):
    study = load_script("benchmarks/studies", "default_seeds")
    argv = ["--scenario", "tiny_market", "--seeds", "3", "--out", str(tmp_path), "--target", "99"]
    extra = ["--extra", "--budget", "8", "--workers", "1", "--verify-search", "budget"]
    extra += ["--verify-budget", "2", "--verify-seeds", "2"]
    summary = study.main([*argv, *extra])
    (row,) = json.loads((tmp_path / "seeds.json").read_text())["rows"]
    assert row["seed"] == 3 and row["recipe"] == "tiny_market.toml"
    assert row["algorithm"] == "maddpg" and row["raw_simulations"] > 0
    assert summary["worst"] == {"seed": 3, "nash_conv_pct": row["nash_conv_pct"]}
    assert summary["meet_target"] == ([3] if row["minutes"] <= 15 else [])
    log = (tmp_path / "seed3.log").read_text()
    assert "recipe tiny_market.toml" in log and "verified NashConv" in log
    (tmp_path / "seed3.log").unlink()
    assert study.main([*argv, "--resume"]) == summary  # kept: not trained again
    assert not (tmp_path / "seed3.log").exists()


def test_payoff_roughness_separates_a_spike_from_the_smooth_gain(load_script):
    study = load_script("benchmarks/studies", "payoff_roughness")
    grid = np.linspace(0.9, 1.5, 61)
    smooth = 1000 - 100 * (grid - 1.2) ** 2  # its top at 1.2
    spiky = smooth.copy()
    spiky[10] += 15  # +1.5 % at 1.0 alone
    row = study.roughness(grid, float(1000 - 100 * 0.3**2), 0.9, np.array([spiky, spiky]))
    assert row["spike"] > 0.012 and row["seed_correlation"] > 0.99  # the fit takes a little
    assert abs(row["smooth_gain"] - 0.009) < 0.002  # the fitted curve's rise from 0.9 to 1.2
    assert row["raw_gain"] > row["smooth_gain"] + 0.005  # the raw gain counts the spike
    around = study.line_grid(None, (0.3, 0.1), 0.5, (0.4, 2.4))  # clipped at the floor
    assert around.tolist() == [0.4, 0.5, 0.6, 0.7, 0.8]


def test_payoff_roughness_measures_every_line_of_a_game(load_script, tmp_path, capsys):
    study = load_script("benchmarks/studies", "payoff_roughness")
    out = tmp_path / "roughness.md"
    argv = ["--scenario", "tiny_market", "--grid", "0.9", "1.5", "0.1", "--seeds", "2"]
    results = study.main([*argv, "--variants", "shipped", "--workers", "1", "--out", str(out)])
    lines = results["shipped"]["lines"]
    assert [(r["station"], r["period"]) for r in lines] == [
        (a, p) for a in ("A", "B") for p in (1, 2, 3, 4)
    ]
    assert all(r["sd"] >= 0 and -1 < r["seed_correlation"] <= 1 for r in lines)
    assert "| shipped |" in out.read_text() and out.with_suffix(".json").exists()
    assert "The lines of shipped" in capsys.readouterr().out
    one = study.main([*argv, "--variants", "shipped", "--workers", "1", "--lines", "B:2"])
    assert [(r["station"], r["period"]) for r in one["shipped"]["lines"]] == [("B", 2)]
