"""Benchmark: is a UE that meets the charging stop rule reachable at a price profile?

When the UE loop ends at its cap with ``converged=False`` there are two readings: the
switching rule is too weak, or no assignment meets the stop rule (no pure platoon-level
equilibrium near where the loop runs). This benchmark tells them apart at a profile by
measuring the game, not the rule:

1. **Default loop.** ``--warmup`` iterations of the default UE loop, exactly as
   :meth:`EVCSRewardEvaluator.evaluate` runs them for ``--seed``: the charging gap
   statistics (mean, share above the tail gap) per iteration.
2. **Unilateral moves.** ``--movers`` charging platoons with a gap above 1 % at that
   state, each moved *alone* to its cheapest route and re-simulated: is the predicted
   saving realised (the cost model is right), and how many *other* charging platoons
   cross the tail gap because of that one move, net of those it brings back under it
   (the move's externality)?
3. **Slow best response.** ``--iterations`` more simulations in which only the ``--k``
   charging platoons with the largest gaps move (each then rests ``--tabu``
   iterations): the smallest tail share reached.

If single moves realise their savings yet each creates about as many mis-assigned
platoons as it fixes, and the slow best response stalls at the same tail share as the
default rule, the stop rule is out of reach of any better-response dynamics at that
profile: the charging platoons race for the last places before period boundaries in
queues that every move reshuffles. The profiles are those of the convergence study
(:func:`evcs_gym.studies.convergence.study_profiles`: ``base`` = the middle of the bounds,
``training_0``, ``random_0``, ``random_1``, ...).

Run: ``python benchmarks/studies/bench_ue_reachability.py [--scenario siouxfalls]
[--profiles training_0 random_0 random_1] [--movers 40] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

import numpy as np

import evcs_gym
from evcs_gym.studies.convergence import study_profiles
from evcs_gym.ue.costs import relative_gap
from evcs_gym.ue.evaluator import EVCSRewardEvaluator, GapStats, ue_streams
from evcs_gym.ue.switching import SwitchInput, make_switching_rule


@dataclass
class State:
    """One simulated assignment and its route costs."""

    slot: np.ndarray
    cost: np.ndarray
    gap: np.ndarray
    best: np.ndarray
    completed: np.ndarray


class Probe:
    """Runs assignments of one evaluator at one price profile (the UE loop's own parts)."""

    def __init__(self, ev: EVCSRewardEvaluator, prices: dict, seed: int) -> None:
        self.ev = ev
        self.prices = ev.check_prices(prices)
        self.rng, self.engine_seed = ue_streams(seed)  # the evaluator's own streams
        self.routes = ev._coster.routes
        self.rows = np.arange(len(self.routes))
        self.charging = ev.network.veh_charging
        self.tol = ev.network.settings.stop_tolerances

    def simulate(self, slot: np.ndarray) -> State:
        sim = self.ev._builder.run(self.routes[self.rows, slot], self.engine_seed)
        pc = self.ev._coster.compute(sim.traveltime, self.prices, sim.network_entry)
        best = np.argmin(pc.cost, axis=1)
        return State(
            slot, pc.cost, relative_gap(pc.cost, slot, best), best, ~np.isnan(sim.arrival_time)
        )

    def stats(self, st: State) -> GapStats:
        return GapStats.of(st.gap, st.completed, self.charging, self.tol["charging_tail_gap"])

    def mis_assigned(self, st: State) -> np.ndarray:
        return self.charging & st.completed & (st.gap > self.tol["charging_tail_gap"])


def default_loop(probe: Probe, iterations: int) -> tuple[State, list[GapStats]]:
    """``iterations`` of the default switching rule from the price-aware start (no stop)."""
    rule = make_switching_rule(probe.ev.network.settings)
    slot = probe.ev._start(probe.prices)
    history = []
    for it in range(iterations):
        st = probe.simulate(slot)
        history.append(probe.stats(st))
        inp = SwitchInput(it, st.cost, slot, st.completed, probe.charging)
        slot = rule(inp, probe.rng)
    return probe.simulate(slot), history


def unilateral_moves(probe: Probe, st: State, n: int, rng: np.random.Generator) -> dict:
    """Move ``n`` charging platoons (gap > 1 %) one at a time; predicted vs realised savings."""
    candidates = np.flatnonzero(probe.charging & st.completed & (st.gap > 0.01))
    if len(candidates) == 0:  # already at an equilibrium to within 1 %: nothing to probe
        return {"movers": 0}
    picked = rng.choice(candidates, min(n, len(candidates)), replace=False)
    bad_before = probe.mis_assigned(st)
    predicted, realised, net_new = [], [], []
    for v in picked:
        slot = st.slot.copy()
        slot[v] = st.best[v]
        after = probe.simulate(slot)
        own = st.cost[v, st.slot[v]]
        predicted.append((own - st.cost[v, st.best[v]]) / own)
        realised.append((own - after.cost[v, st.best[v]]) / own)
        others = np.ones(len(slot), dtype=bool)
        others[v] = False
        bad_after = probe.mis_assigned(after)
        net_new.append(int((bad_after & others).sum() - (bad_before & others).sum()))
    predicted, realised, net_new = map(np.asarray, (predicted, realised, net_new))
    return {
        "movers": len(picked),
        "predicted_saving_mean": float(predicted.mean()),
        "realised_saving_mean": float(realised.mean()),
        "share_realising_half": float((realised >= predicted / 2).mean()),
        "net_new_mis_assigned_mean": float(net_new.mean()),
        "net_new_mis_assigned_median": float(np.median(net_new)),
        "net_new_mis_assigned_max": int(net_new.max()),
        "share_of_moves_adding_mis_assigned": float((net_new > 0).mean()),
    }


def slow_best_response(probe: Probe, st: State, iterations: int, k: int, tabu: int) -> dict:
    """The ``k`` worst charging platoons move per simulation, then rest ``tabu`` iterations."""
    rested = np.full(len(st.slot), -(10**9))
    tails = []
    for it in range(iterations):
        tails.append(probe.stats(st).charging_tail_share)
        eligible = probe.charging & st.completed & (it - rested > tabu)
        gap = np.where(eligible, st.gap, 0.0)
        movers = np.argsort(-gap, kind="stable")[:k]
        movers = movers[gap[movers] > 0.01]
        slot = st.slot.copy()
        slot[movers] = st.best[movers]
        rested[movers] = it
        st = probe.simulate(slot)
    tails.append(probe.stats(st).charging_tail_share)
    return {"min_tail": float(min(tails)), "final_tail": tails[-1], "first_tail": tails[0]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="siouxfalls")
    parser.add_argument(
        "--profiles",
        nargs="+",
        default=["training_0", "random_0", "random_1"],
        help="names from evcs_gym.studies.convergence.study_profiles (base, "
        "deviation_<station>_p<k>, "
        "training_<i>, random_<i>)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=30, help="default-loop iterations")
    parser.add_argument("--movers", type=int, default=40, help="unilateral moves probed")
    parser.add_argument("--iterations", type=int, default=150, help="slow best-response steps")
    parser.add_argument("--k", type=int, default=2, help="movers per slow best-response step")
    parser.add_argument("--tabu", type=int, default=20, help="rest after a move, iterations")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)

    nd = evcs_gym.load_scenario(args.scenario)
    ev = EVCSRewardEvaluator(nd)
    sets = study_profiles(nd, deviations=len(nd.agent_names), training_like=6, random=6)
    tail = nd.settings.stop_tolerances
    print(
        f"== {args.scenario}: stop rule charging mean gap <= {tail['charging_mean_gap']:.2%}, "
        f"at most {tail['charging_tail_share']:.0%} of charging platoons above "
        f"{tail['charging_tail_gap']:.0%}; seed {args.seed}"
    )
    out = {}
    for spec in args.profiles:
        if spec not in sets:
            parser.error(f"--profiles: unknown profile {spec!r}; known: {sorted(sets)}")
        t0 = time.perf_counter()
        probe = Probe(ev, sets[spec], args.seed)
        st, history = default_loop(probe, args.warmup)
        tails = [h.charging_tail_share for h in history] + [probe.stats(st).charging_tail_share]
        moves = unilateral_moves(probe, st, args.movers, np.random.default_rng(args.seed))
        slow = slow_best_response(probe, st, args.iterations, args.k, args.tabu)
        row = {
            "default_loop": {
                "iterations": args.warmup,
                "tail_first": tails[0],
                "tail_last": tails[-1],
                "tail_min": min(tails),
            },
            "unilateral": moves,
            "slow_best_response": {"iterations": args.iterations, "k": args.k, **slow},
            "seconds": time.perf_counter() - t0,
        }
        out[spec] = row
        d = row["default_loop"]
        print(f"\n[{spec}] ({row['seconds']:.0f} s)")
        print(
            f"  default loop, {args.warmup} iterations: tail share {d['tail_first']:.1%} -> "
            f"{d['tail_last']:.1%} (min {d['tail_min']:.1%})"
        )
        if moves["movers"] == 0:
            print("  no charging platoon has a gap above 1 %: no unilateral move to probe")
        else:
            print(
                f"  {moves['movers']} unilateral moves: predicted saving "
                f"{moves['predicted_saving_mean']:.1%}, "
                f"realised {moves['realised_saving_mean']:.1%}; "
                f"{moves['share_realising_half']:.0%} realise at least half of it"
            )
            print(
                f"  each move's net new mis-assigned charging platoons: "
                f"{moves['net_new_mis_assigned_mean']:+.2f} on average (median "
                f"{moves['net_new_mis_assigned_median']:+g}, "
                f"max {moves['net_new_mis_assigned_max']:+d}); "
                f"{moves['share_of_moves_adding_mis_assigned']:.0%} of moves add some"
            )
        print(
            f"  slow best response ({args.k} movers, rest {args.tabu}), {args.iterations} "
            f"iterations: tail share {slow['first_tail']:.1%} -> {slow['final_tail']:.1%} "
            f"(min {slow['min_tail']:.1%})"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return out


if __name__ == "__main__":
    main()
