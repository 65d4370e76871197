"""Smoke runs of the benchmarks on ``tiny``: they keep working and their checks hold.

Timings are printed, never asserted (shared, noisy machines); what is asserted is the
correctness figure a benchmark reports, e.g. that the vector env matched serial stepping.
"""

from __future__ import annotations

import math


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
