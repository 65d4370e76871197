"""Benchmark: seconds per evaluation, UE iterations and the cost ratio to a raw simulation.

For each scenario (default: every bundled one) it times, in one run:

* raw simulation: one World build + ``exec_simulation`` + freeing the World, with every
  platoon on its free-flow route and no vehicle logging, timed afresh between every two
  evaluations (:class:`RawSimulation`);
* ``--n`` evaluations at *training-like* prices around each centre the scenario has:
  Gaussian noise of 5 % of the price range per station and period around the solver's
  equilibrium (``benchmarks/inputs/solve_<scenario>.json``), around the main job's
  learned prices (``benchmarks/inputs/maddpg_<scenario>.json``) and around the middle
  of the bounds — the prices learners visit, each reported apart;
* ``--n`` evaluations at *uniform-random* prices over the whole bounds, per station and
  period (an untrained policy);

each at its own seed, and prints per evaluation: seconds, UE iterations, why the loop
stopped (``converged``, ``stationary`` or ``cap``), the charging platoons' final gap
statistics (mean, share above 5 %), the largest relative revenue standard error of a
station, and the ratio eval seconds / raw-simulation seconds, the raw simulation being
the mean of the two timed just before and just after that evaluation. A shared host's
load drifts within minutes; timing the denominator next to each evaluation keeps that
drift out of the ratios. Every figure is taken at the scenario's defaults; ``--set
KEY=VALUE`` overrides a scenario setting (as on the command line).

Run: ``python benchmarks/bench_evaluator.py [--scenarios siouxfalls tiny] [--n 6]
[--set KEY=VALUE]`` (Sioux Falls at ``--n 24``: about 15 minutes on 2 idle cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import uxsim

import evcs_gym
from evcs_gym.cli import parse_settings
from evcs_gym.ue.simulation import WorldBuilder


class RawSimulation:
    """Times one raw simulation: World build + exec_simulation + freeing the World.

    Every platoon on its free-flow route, no vehicle logging. The World is made through
    UXsim's own wrapper, ``uxsim.World(cpp=True)`` (:meth:`WorldBuilder.build_wrapped`):
    the simulation a UXsim user would run. The evaluator builds the same World without
    the wrapper (:meth:`WorldBuilder.build`), so what the wrapper costs counts in the raw
    simulation and not in the evaluation.

    Freeing counts on both sides: every UE iteration frees its World (the engine's
    destructor, ~5 ms on Sioux Falls), so the raw simulation frees its own, breaking the
    wrapper's reference cycles (its nodes, links and vehicles point back at it) so that
    the engine's destructor runs at once. Before 2026-11-28 night it did not: the Worlds
    (~30 MB each on Sioux Falls) waited for a full garbage collection, the process grew
    past 1 GB, and the collections fell at random inside raw simulations and
    evaluations alike.

    Example:
        >>> raw = RawSimulation(evcs_gym.load_scenario("tiny", warm_start=False))
        >>> run, free = raw.time()
        >>> run > 0 and free > 0 and raw.seconds() > 0
        True
    """

    def __init__(self, nd: evcs_gym.NetworkData) -> None:
        self._builder = WorldBuilder(nd)
        self._free_flow = nd.free_flow_route_choice

    def time(self) -> tuple[float, float]:
        """Seconds of (build + exec_simulation, freeing the World) of one raw simulation."""
        t0 = time.perf_counter()
        W = self._builder.build_wrapped(self._free_flow, seed=0)
        W.exec_simulation()
        t1 = time.perf_counter()
        assert isinstance(W, uxsim.uxsim_cpp_wrapper.CppWorld)
        for obj in (*W.NODES, *W.LINKS, *W.VEHICLES.values()):
            obj.__dict__.clear()
        if "analyzer" in W.__dict__:
            W.analyzer.__dict__.clear()
        W.__dict__.clear()
        del W
        return t1 - t0, time.perf_counter() - t1

    def seconds(self) -> float:
        """Seconds of one raw simulation, timed now (build, run and free)."""
        return sum(self.time())


INPUTS = Path(__file__).resolve().parent / "inputs"

CENTRES = {"solver equilibrium": "solve", "learned (MADDPG)": "maddpg"}
"""Training-like centres read from ``benchmarks/inputs/<file>_<scenario>.json``, where present."""


def centres(nd: evcs_gym.NetworkData) -> dict[str, dict[str, np.ndarray]]:
    """The training-like centres of ``nd``: the solver's equilibrium and the learned prices
    where ``benchmarks/inputs`` has them, and the middle of the bounds."""
    out = {}
    for label, stem in CENTRES.items():
        path = INPUTS / f"{stem}_{nd.name}.json"
        if path.exists():
            prices = json.loads(path.read_text())["prices"]
            out[label] = {a: np.asarray(prices[a], dtype=float) for a in nd.agent_names}
    out["mid-bounds"] = {
        a: np.full(nd.n_periods, (lo + hi) / 2) for a, (lo, hi) in nd.price_bounds.items()
    }
    return out


def price_sets(nd: evcs_gym.NetworkData, n: int, seed: int = 2024) -> dict[str, list[dict]]:
    """``{"training-like (<centre>)": [...], ..., "uniform-random": [...]}``, ``n`` profiles each.

    Example:
        >>> sets = price_sets(evcs_gym.load_scenario("tiny", warm_start=False), 2)
        >>> list(sets), len(sets["uniform-random"])
        (['training-like (mid-bounds)', 'uniform-random'], 2)
    """
    rng = np.random.default_rng(seed)
    bounds = nd.price_bounds
    out = {}
    for label, centre in centres(nd).items():
        out[f"training-like ({label})"] = [
            {
                a: np.clip(centre[a] + rng.normal(0, 0.05 * (hi - lo), nd.n_periods), lo, hi)
                for a, (lo, hi) in bounds.items()
            }
            for _ in range(n)
        ]
    out["uniform-random"] = [
        {a: rng.uniform(lo, hi, nd.n_periods) for a, (lo, hi) in bounds.items()} for _ in range(n)
    ]
    return out


def bench(name: str, n: int, **overrides: object) -> dict:
    """Time ``n`` profiles of each price set on scenario ``name``.

    ``overrides``: scenario settings (``load_scenario`` keywords). Returns ``{label:
    figures}``.
    """
    t0 = time.perf_counter()
    nd = evcs_gym.load_scenario(name, **overrides)
    load_s = time.perf_counter() - t0
    raw = RawSimulation(nd)
    first_raw = statistics.median(raw.seconds() for _ in range(3))
    s = nd.settings
    tol = s.stop_tolerances
    ws = nd.warm_start_info
    print(f"\n== {nd.summary()}")
    print(f"evcs-gym {evcs_gym.__version__}, settings {nd.settings_hash}")
    if overrides:
        print("settings overridden: " + ", ".join(f"{k}={v}" for k, v in overrides.items()))
    computed = nd.timings.get("computed", nd.timings)
    print(
        f"load {load_s:.2f} s"
        + (" (from the on-disk cache; computed in: " if nd.from_cache else " (")
        + f"route sets {nd.route_seconds:.2f} s, warm start "
        f"{computed.get('warm_start', 0.0):.2f} s, {ws.get('iterations', 0)} UE iterations, "
        f"converged {ws.get('converged')})"
    )
    print(
        f"raw simulation (build + exec_simulation + free the World, free-flow routes): "
        f"{first_raw:.3f} s at the start; each ratio divides by the mean of the raw "
        "simulations timed just before and after its evaluation"
    )
    print(
        f"stop rule: mean gap <= {tol['mean_gap']:.2%}, charging mean gap <= "
        f"{tol['charging_mean_gap']:.2%}, charging share above {tol['charging_tail_gap']:.0%} "
        f"<= {tol['charging_tail_share']:.0%}, completed >= {tol['min_completed_ratio']:.0%}, "
        f"{s.ue_convergence_stable_rounds} rounds; stationary stop: revenue SE <= "
        f"{s.ue_payoff_precision:.1%} after >= {s.ue_payoff_min_iterations} iterations, "
        f"window >= {s.ue_payoff_min_window}; cap {s.ue_max_iterations} iterations"
    )
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    return _time_sets(ev, price_sets(nd, n), raw)


def _time_sets(
    ev: evcs_gym.EVCSRewardEvaluator, sets: dict[str, list[dict]], raw: RawSimulation
) -> dict:
    width = max(len(label) for label in sets) + 5
    header = (
        f"{'case':<{width}}{'seconds':>9}{'iters':>7}{'stop':>12}{'ch gap':>8}{'ch >5%':>8}"
        f"{'max SE':>8}{'raw s':>8}{'ratio':>8}"
    )
    summary = {}
    for label, profiles in sets.items():
        print(header)
        print("-" * len(header))
        secs, raws, ratios, iters, conv, stationary = [], [], [], [], [], []
        run_only = []  # ratios to the raw simulation without freeing its World
        before = raw.time()
        for i, prices in enumerate(profiles):
            res = ev.evaluate(prices, seed=i)
            after = raw.time()
            denominator = (sum(before) + sum(after)) / 2
            build_and_run = (before[0] + after[0]) / 2
            before = after
            st = res.ue_stats
            s = res.timings["total"]
            secs.append(s)
            raws.append(denominator)
            ratios.append(s / denominator)
            run_only.append(s / build_and_run)
            iters.append(res.ue_iterations)
            conv.append(res.converged)
            reason = "cap" if st["stop_reason"] == "max_iterations" else st["stop_reason"]
            stationary.append(reason == "stationary")
            se = max_relative_se(res)
            print(
                f"{f'{label} #{i}':<{width}}{s:>9.2f}{res.ue_iterations:>7}{reason:>12}"
                f"{st['charging_relative_gap']:>8.2%}{st['charging_tail_share']:>8.1%}"
                f"{se:>8.1%}{denominator:>8.3f}{ratios[-1]:>8.1f}"
            )
        med = statistics.median(ratios)
        print(
            f"{label}: median {med:.1f} raw simulations (median {statistics.median(secs):.2f} s; "
            f"raw simulation {min(raws):.3f}-{statistics.median(raws):.3f}-{max(raws):.3f} s), "
            f"iterations median {statistics.median(iters):g} (min {min(iters)}, max "
            f"{max(iters)}), converged {sum(conv)}/{len(conv)}, stationary "
            f"{sum(stationary)}/{len(stationary)}, max ratio {max(ratios):.1f}; "
            f"{statistics.median(run_only):.1f} against the raw simulation's build and run "
            "alone\n"
        )
        summary[label] = {
            "median_s": statistics.median(secs),
            "ratio": med,
            "ratios": ratios,
            "ratios_run_only": run_only,
            "raw_s": raws,
            "iterations": iters,
            "conv": conv,
            "stationary": stationary,
        }
    return summary


def max_relative_se(res: evcs_gym.EvalResult) -> float:
    """The largest station revenue standard error relative to that station's size, the
    size as the stationary stop judges it (``ue_payoff_floor``)."""
    rev = np.array(list(res.revenues.values()))
    se = np.array(list(res.ue_stats["revenue_se"].values()))
    size = np.maximum(np.abs(rev), 0.25 * np.abs(rev).mean())
    return float(np.max(np.divide(se, size, out=np.zeros_like(se), where=size > 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=evcs_gym.available_scenarios())
    parser.add_argument("--n", type=int, default=6, help="profiles per price set")
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario setting (repeatable), e.g. ue_payoff_precision=0.02",
    )
    args = parser.parse_args()
    for name in args.scenarios:
        bench(name, args.n, **parse_settings(args.set))


if __name__ == "__main__":
    main()
