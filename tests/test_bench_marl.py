"""``benchmarks/bench_marl.py`` and its ``marl`` package: tasks, the VMAS adapter, the
shared evaluation, the report, evcs-gym's runner and the orchestrator, all for real
(the peer libraries' runners run in their nox environments: ``.ci/run``'s smoke grid)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import parallel_api_test

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from marl import report  # noqa: E402
from marl.evaluation import evaluate_returns  # noqa: E402
from marl.reverify import needs_reverify  # noqa: E402
from marl.runners import run_cell  # noqa: E402
from marl.tasks import TASKS, make_env, resolve_tasks  # noqa: E402


@pytest.fixture(scope="module")
def bench(load_script):
    return load_script("benchmarks", "bench_marl")


def zeros(obs):
    return {a: np.zeros(5, np.float32) for a in obs}


def test_simple_spread_task_is_a_box_action_parallel_env():
    env = make_env("simple_spread")
    parallel_api_test(env, num_cycles=30)
    assert all(isinstance(env.action_space(a), spaces.Box) for a in env.possible_agents)
    assert TASKS["simple_spread"].max_steps == 25 and TASKS["simple_spread"].unit == "env steps"


def test_vmas_adapter_passes_the_pettingzoo_checks_and_is_reproducible():
    pytest.importorskip("vmas")
    env = make_env(TASKS["navigation"], max_steps=6)
    parallel_api_test(env, num_cycles=20)
    first, _ = env.reset(seed=5)
    again, _ = env.reset(seed=5)
    other, _ = env.reset(seed=6)
    assert all(np.array_equal(first[a], again[a]) for a in first)
    assert not all(np.array_equal(first[a], other[a]) for a in first)
    env.reset(seed=0)
    for _ in range(6):
        _, rewards, terms, truncs, _ = env.step(zeros_like(env))
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    assert set(rewards) == set(env.possible_agents)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(zeros_like(env))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no entry for agent"):
        env.step({"agent_0": np.zeros(2)})


def zeros_like(env):
    return {a: np.zeros(env.action_space(a).shape, np.float32) for a in env.possible_agents}


def test_unknown_task_names_are_named():
    assert [t.name for t in resolve_tasks(["tiny", "navigation"])] == ["tiny", "navigation"]
    with pytest.raises(ValueError, match=r"unknown task\(s\) \['nope'\]"):
        resolve_tasks(["tiny", "nope"])


def test_evaluation_is_deterministic_and_tells_policies_apart():
    make = lambda: make_env("simple_spread")  # noqa: E731
    still = evaluate_returns(make, zeros, episodes=3)
    assert still == evaluate_returns(make, zeros, episodes=3)
    assert len(set(still)) == 3  # three different evaluation seeds
    rng = np.random.default_rng(0)
    jitter = evaluate_returns(
        make, lambda obs: {a: rng.uniform(0, 1, 5).astype(np.float32) for a in obs}, episodes=3
    )
    assert jitter != still
    with pytest.raises(ValueError, match="`episodes` must be >= 1, got 0"):
        evaluate_returns(make, zeros, episodes=0)


def test_run_cell_rejects_bad_input_by_name():
    task = TASKS["tiny"]
    with pytest.raises(ValueError, match="unknown library 'nope'"):
        run_cell("nope", "maddpg", task, 0, 10)
    with pytest.raises(ValueError, match="library 'ours' has no algorithm 'ppo'"):
        run_cell("ours", "ppo", task, 0, 10)
    with pytest.raises(ValueError, match="rllib-ppo does not run tiny_repeated"):
        run_cell("rllib", "ppo", TASKS["tiny_repeated"], 0, 10)
    with pytest.raises(ValueError, match="`budget` must be >= 1, got 0"):
        run_cell("ours", "maddpg", task, 0, 0)


@pytest.fixture(scope="module")
def real_cells():
    """Two real cells of evcs-gym's runner: simple_spread and the tiny pricing game."""
    spread = run_cell("ours", "maddpg", TASKS["simple_spread"], 0, 300)
    tiny = run_cell("ours", "iddpg", TASKS["tiny"], 1, 24, smoke=True)
    return [spread, tiny]


def test_our_runner_records_what_ran_and_its_score(real_cells):
    spread, tiny = real_cells
    assert spread["env_steps"] == 300 and len(spread["return"]) == 32
    assert all(np.isfinite(spread["return"])) and spread["versions"]["mpe2"]
    assert tiny["env_steps"] == 24 and tiny["seed"] == 1 and tiny["unit"] == "evaluations"
    assert 0 <= tiny["relative_nash_conv"] and tiny["relative_nash_conv_se"] is not None
    assert set(tiny["prices"]) == {"A", "B"} and tiny["total_revenue"] > 0
    assert "--rounds 0" in tiny["settings"]["command"]  # the one-step game
    # the cell says how it was verified, so the report labels it and --reverify skips it
    assert tiny["verification"]["held_out"] is True and tiny["verification"]["seeds"] == 2
    assert report.verification_label(tiny).endswith(", held out")
    assert not needs_reverify(tiny, smoke=True)
    json.dumps(real_cells)  # JSON-safe


def test_report_layouts(real_cells, tmp_path):
    spread, tiny = real_cells
    data = report.marl_eval_json(real_cells)
    run = data["mpe2"]["simple_spread"]["ours-maddpg"]["seed_0"]
    assert run["step_0"]["step_count"] == 300 and len(run["step_0"]["return"]) == 32
    assert run["absolute_metrics"]["return"] == run["step_0"]["return"]
    evcs = data["evcs"]["tiny"]["ours-iddpg"]["seed_1"]["absolute_metrics"]
    assert evcs["nash_conv"] == [tiny["relative_nash_conv"]]
    summary = report.summarize(real_cells)
    assert summary[("simple_spread", "ours-maddpg")]["mean"] == pytest.approx(
        np.mean(spread["return"])
    )
    assert np.isnan(summary[("tiny", "ours-iddpg")]["sd"])  # one seed: no spread
    table = report.markdown_tables(summary, {"tiny": "24 evals"})
    assert "| ours-iddpg |" in table and "tiny (24 evals)" in table
    rows = report.write_csv(real_cells, tmp_path / "cells.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("task,env,library")
    plots = report.plot_tasks(real_cells, tmp_path / "plots")
    assert sorted(p.name for p in plots) == ["simple_spread.png", "tiny.png"]


def test_orchestrator_runs_cells_in_processes_and_reports(bench, tmp_path, capsys):
    out = tmp_path / "grid"
    argv = ["--tasks", "simple_spread", "--libraries", "ours", "--algorithms", "mfddpg"]
    code = bench.main([*argv, "--seeds", "0", "1", "--smoke", "--out", str(out), "--jobs", "2"])
    assert code == 0
    for name in ("marl_eval.json", "cells.csv", "summary.json", "table.md", "run.json"):
        assert (out / name).exists(), name
    assert (out / "plots" / "simple_spread.png").exists()
    run = json.loads((out / "run.json").read_text())
    assert run["budgets"] == {"simple_spread": [400]} and run["machine"]["cores"]
    assert "ours" in run["versions"] and "--algorithms mfddpg" in run["command"]
    data = json.loads((out / "marl_eval.json").read_text())
    assert sorted(data["mpe2"]["simple_spread"]["ours-mfddpg"]) == ["seed_0", "seed_1"]
    assert "ours-mfddpg | " in capsys.readouterr().out
    # --resume keeps finished cells; a library without its environment fails loudly
    code = bench.main(
        ["--tasks", "simple_spread", "--libraries", "ours", "benchmarl", "--seeds", "0"]
        + ["--algorithms", "mfddpg", "maddpg", "--smoke", "--out", str(out), "--resume"]
        + ["--python", "benchmarl=/nonexistent/python"]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "no Python for benchmarl at /nonexistent/python" in captured.err
    assert re.search(r"simple_spread__ours-maddpg__seed0: ok in \d+ s \(\d+ s since", captured.out)
    commands = json.loads((out / "run.json").read_text())["commands"]
    assert len(commands) == 2 and "--resume" in commands[1]["command"]
    assert "1 kept" in captured.out


def test_orchestrator_rejects_bad_flags(bench):
    with pytest.raises(SystemExit, match="--budget 'nope=5'"):
        bench.main(["--budget", "nope=5", "--out", "/tmp/unused"])
    with pytest.raises(SystemExit, match="--python 'x=y'"):
        bench.main(["--python", "x=y", "--tasks", "tiny", "--out", "/tmp/unused_bench"])


def test_reference_rows_are_verified_like_a_learner_and_run_at_one_seed(bench):
    lower = run_cell("reference", "lower", TASKS["tiny"], 0, 600, smoke=True)
    assert lower["library"] == "reference" and lower["env_steps"] == 0
    assert lower["prices"] == {"A": [0.5] * 4, "B": [0.5] * 4}  # tiny's lower bounds
    assert lower["verify_evaluations"] > 0 and lower["relative_nash_conv"] >= 0
    with pytest.raises(ValueError, match="reference-mid does not run tiny_repeated"):
        run_cell("reference", "mid", TASKS["tiny_repeated"], 0, 600)
    cells, skipped = bench.plan(
        bench.parse_args(
            [
                "--tasks",
                "tiny",
                "simple_spread",
                "--libraries",
                "ours",
                "reference",
                "--seeds",
                "3",
                "4",
            ]
        )  # fmt: skip
    )
    ref = [c for c in cells if c.library == "reference"]
    assert sorted(c.algorithm for c in ref) == ["lower", "mid", "solve"]
    assert {c.seed for c in ref} == {3} and {c.task.name for c in ref} == {"tiny"}
    assert len([c for c in cells if c.library == "ours"]) == 2 * 3 * 2  # 2 tasks, 3, 2 seeds
    assert any(line.startswith("simple_spread x reference") for line in skipped)
    # LIB-NAME picks one library's algorithm, a bare name every library's
    cells, _ = bench.plan(
        bench.parse_args(
            [
                "--tasks",
                "tiny",
                "--algorithms",
                "benchmarl-mappo",
                "maddpg",
                "reference-lower",
                "--seeds",
                "0",
            ]
        )  # fmt: skip
    )
    assert sorted(f"{c.library}-{c.algorithm}" for c in cells) == [
        "agilerl-maddpg", "benchmarl-maddpg", "benchmarl-mappo", "ours-maddpg", "reference-lower"
    ]  # fmt: skip


def test_market_cells_report_the_collusion_index_beside_nash_conv(bench):
    nash = run_cell("reference", "nash", TASKS["tiny_market"], 0, 600, smoke=True)
    collusive = run_cell("reference", "collusive", TASKS["tiny_market"], 0, 600, smoke=True)
    assert nash["collusion_index"]["delta"] == 0.0  # the references themselves: 0 and 1
    assert collusive["collusion_index"]["delta"] == pytest.approx(1.0)
    assert nash["total_revenue"] < collusive["total_revenue"]
    with pytest.raises(ValueError, match="reference-nash does not run tiny: tiny ships no"):
        run_cell("reference", "nash", TASKS["tiny"], 0, 600, smoke=True)
    cells, _ = bench.plan(
        bench.parse_args(["--tasks", "tiny", "tiny_market", "--libraries", "reference"])
    )
    rows = {(c.task.name, c.algorithm) for c in cells}
    assert rows == {("tiny", a) for a in ("solve", "lower", "mid")} | {
        ("tiny_market", a) for a in ("nash", "collusive", "lower", "mid", "upper")
    }
    table = report.markdown_tables(report.summarize([nash, collusive]), {})
    assert "| Δ |" in table and "| reference-collusive |" in table
    assert re.search(r"\| reference-nash \| [^|]+ \| [^|]+ \| 0\.00 \|", table)
    untouched = report.markdown_tables(report.summarize([{**nash, "collusion_index": None}]), {})
    assert "Δ" not in untouched  # a game without references: the 0.2.0 table


def test_report_interval_is_seeded_and_brackets_the_mean():
    scores = [0.23, 0.16, 0.19, 0.39, 18.99]
    low, high = report.mean_interval(scores)
    assert (low, high) == report.mean_interval(scores)  # the same cells, the same report
    assert min(scores) <= low < np.mean(scores) < high <= max(scores)
    assert report.mean_interval([2.0, 2.0]) == (2.0, 2.0)
    assert all(np.isnan(report.mean_interval([1.0])))


def test_curve_points_are_their_own_runs_plotted_and_kept_out_of_the_tables(bench, tmp_path):
    out = tmp_path / "curve"
    argv = ["--tasks", "tiny", "simple_spread", "--algorithms", "ours-mfddpg", "reference-lower"]
    cells, _ = bench.plan(bench.parse_args([*argv, "--seeds", "0", "--smoke", "--curve", "12"]))
    assert sorted(c.name for c in cells) == [
        "simple_spread__ours-mfddpg__seed0",  # no curve off the pricing game
        "tiny__ours-mfddpg__seed0",
        "tiny__ours-mfddpg__seed0__budget12",
        "tiny__reference-lower__seed0",  # nor for a row that does not learn
    ]
    code = bench.main(
        ["--tasks", "tiny", "--algorithms", "ours-mfddpg", "reference-lower", "--seeds", "0"]
        + ["--smoke", "--curve", "12", "--out", str(out)]
    )
    assert code == 0
    point = json.loads((out / "cells" / "tiny__ours-mfddpg__seed0__budget12.json").read_text())
    assert point["curve"] is True and point["budget"] == 12 and point["env_steps"] <= 12
    assert (out / "plots" / "tiny_curve.png").exists()
    run = json.loads((out / "marl_eval.json").read_text())["evcs"]["tiny"]["ours-mfddpg"]["seed_0"]
    assert [run[f"step_{i}"]["step_count"] for i in range(2)] == [point["env_steps"], 24]
    table = (out / "table.md").read_text()
    assert "tiny (24 evals)" in table and table.count("| ours-mfddpg |") == 1
    assert json.loads((out / "run.json").read_text())["curve_budgets"] == {"tiny": [12]}
    with pytest.raises(SystemExit):
        bench.parse_args(["--curve", "0"])


def test_the_report_tells_releases_of_a_pinned_game_from_different_games(bench, capsys):
    def cell(task, version, digest):
        return {"task": task, "game": {"version": version, "settings_hash": digest}}

    from tests.test_pinned_payoffs import DIGESTS_0_2_0

    assert bench.PINNED_SINCE_0_2_0 == set(DIGESTS_0_2_0.values())  # the games pinned there
    tiny = "b19290784656"  # a 0.2.0 game: its payoffs are pinned across releases
    note = bench.games_note([cell("tiny", "0.2.0", tiny), cell("tiny", "0.4.0", tiny)])
    assert "several releases on one game (evcs-gym 0.2.0, 0.4.0, settings b19290784656)" in note
    assert "different games" not in note and capsys.readouterr().err == ""
    # a game not pinned: another minor release may score other payoffs on the same hash
    market = [cell("tiny_market", "0.3.0", "abc"), cell("tiny_market", "0.4.0", "abc")]
    assert "cells of different games" in bench.games_note(market)
    assert "warning: tiny_market" in capsys.readouterr().err
    assert "cells of different games" in bench.games_note(
        [cell("tiny", "0.2.0", tiny), cell("tiny", "0.2.0", "abc")]
    )
    assert bench.games_note([cell("tiny", "0.2.0", tiny)] * 2) == ""


def test_resume_reruns_cells_measured_on_another_game(bench, tmp_path, capsys):
    cell = bench.Cell(TASKS["tiny"], "ours", "maddpg", 0, 600)
    games: dict = {}
    assert not bench.resume_keeps(cell, tmp_path, games)  # no record yet
    now = bench.game_of(TASKS["tiny"])
    record = tmp_path / "cells" / f"{cell.name}.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"game": {**now, "version": now["version"] + ".post1"}}))
    assert bench.resume_keeps(cell, tmp_path, games)  # a patch does not change payoffs
    record.write_text(json.dumps({"game": {**now, "version": "0.2.0"}}))
    assert bench.resume_keeps(cell, tmp_path, games)  # tiny's payoffs are pinned since 0.2.0
    assert capsys.readouterr().out == ""
    record.write_text(json.dumps({"game": {**now, "settings_hash": "0123456789ab"}}))
    assert not bench.resume_keeps(cell, tmp_path, games)
    assert f"stale {cell.name}: measured on" in capsys.readouterr().out
    mpe = bench.Cell(TASKS["simple_spread"], "ours", "maddpg", 0, 400)
    (tmp_path / "cells" / f"{mpe.name}.json").write_text(json.dumps({"game": None}))
    assert bench.resume_keeps(mpe, tmp_path, games)


def test_resume_reruns_a_reference_row_whose_reference_was_re_solved(bench, tmp_path, capsys):
    """A game's references can be re-solved without a change of payoffs: the ``nash`` row
    holding the old prices must run again (a re-verification would certify the old N)."""
    import evcs_gym
    from evcs_gym.scenarios import load_references

    cell = bench.Cell(TASKS["tiny_market"], "reference", "nash", 0, 0)
    shipped = load_references(evcs_gym.load_scenario("tiny_market", warm_start=False)).nash
    prices = {a: v.tolist() for a, v in shipped.items()}
    record = {"task": "tiny_market", "library": "reference", "algorithm": "nash", "seed": 0}
    record |= {"game": bench.game_of(TASKS["tiny_market"]), "prices": prices}
    path = tmp_path / "cells" / f"{cell.name}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(record))
    assert bench.resume_keeps(cell, tmp_path, {})
    prices["A"][0] += 0.01  # an older N
    path.write_text(json.dumps(record))
    assert not bench.resume_keeps(cell, tmp_path, {})
    assert "reference was re-solved" in capsys.readouterr().out


def test_cells_are_timed_against_a_raw_simulation_of_their_scenario(bench):
    assert bench.raw_simulation_seconds(TASKS["simple_spread"]) is None  # no game
    assert bench.raw_simulation_seconds(TASKS["tiny"], repeats=1) > 0
    cells = [
        {"task": "tiny", "env": "evcs", "library": "ours", "algorithm": "maddpg", "seed": s,
         "env_steps": 600, "wall_s": wall, "relative_nash_conv": 0.01, "total_revenue": 1.0,
         **raw}
        for s, wall, raw in ((0, 60.0, {"raw_simulation_s": [0.01, 0.03]}), (1, 90.0, {}))
    ]  # fmt: skip
    row = report.summarize(cells)[("tiny", "ours-maddpg")]
    assert row["wall_raw"] == pytest.approx(3000.0)  # the cell that has the timings
    assert "| 1.2 min (3,000 raw sims) |" in report.markdown_tables({("tiny", "x"): row}, {})


def test_every_cell_is_verified_alike():
    from marl.runners.common import verify_options

    from evcs_gym import load_scenario
    from evcs_gym.equilibrium import verify_prices

    # the same search for every library: the converged search, each candidate on one
    # seed after the gains' seeds, as `evcs-gym train` (our runner) does; the
    # verification's seeds start at the cell's
    for scenario in ("tiny", "siouxfalls", "tiny_market", "siouxfalls_market"):
        verify = verify_options(scenario, smoke=False)
        assert verify["search"] == "converged" and verify["search_seeds"] == 1
        assert verify["held_out"] is True
    lows = {"A": [0.5] * 4, "B": [0.5] * 4}
    cert = verify_prices(
        load_scenario("tiny"), lows, budget=4, seeds=2, seed=3, search_seeds=2, out=print
    )
    assert cert.seeds == (3, 4)
    assert "search on the mean of seeds [5, 6] (held out)" in cert.summary()


def test_reverify_replaces_the_score_and_keeps_the_old_one(tmp_path, real_cells):
    """``--reverify`` verifies a cell's stored prices again with today's search (with
    ``--algorithms``, only those), keeps the old figures in ``superseded`` and resumes: a
    record already re-verified is kept."""
    from marl.reverify import reverify_cells

    tiny = dict(real_cells[1])
    tiny.pop("verification", None)
    tiny["relative_nash_conv"] = 0.123  # as if an older search had found this
    path = tmp_path / "tiny__ours-iddpg__seed1.json"
    path.write_text(json.dumps(tiny))
    assert reverify_cells(tmp_path, algorithms=["maddpg", "benchmarl-mappo"], smoke=True) == []
    assert reverify_cells(tmp_path, algorithms=["mappo", "ours-iddpg"], smoke=True) == [path]
    record = json.loads(path.read_text())
    assert record["superseded"][-1]["relative_nash_conv"] == 0.123
    assert record["prices"] == tiny["prices"] and record["relative_nash_conv"] != 0.123
    assert record["verification"]["search"]["method"] == "converged"
    assert reverify_cells(tmp_path, smoke=True) == []  # nothing left to do


def test_a_table_names_its_verification_and_flags_a_mix():
    """A task's table says which search verified its cells, and flags a table whose
    cells were verified by different searches (one being re-verified)."""
    search = {"method": "converged", "rounds": 2, "resolution": 1 / 192}
    cell = {
        "task": "tiny", "env": "evcs", "library": "ours", "algorithm": "maddpg", "seed": 0,
        "env_steps": 600, "wall_s": 60.0, "relative_nash_conv": 0.02, "total_revenue": 1.0,
        "search": search, "verification": {"held_out": True},
    }  # fmt: skip
    old = {**cell, "seed": 1, "search": {"method": "budget", "budget": 32}, "verification": {}}
    one = report.markdown_tables(report.summarize([cell]), {})
    assert "verified with the search: converged, 2 rounds to 1/192, held out" in one
    assert "mixed" not in one
    both = report.markdown_tables(report.summarize([cell, old]), {})
    assert "**mixed verification**" in both
    mix = "converged, 2 rounds to 1/192, held out (1 cells); budget 32, in sample (1 cells)"
    assert mix in both
