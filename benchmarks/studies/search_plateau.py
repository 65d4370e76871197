"""Study: does the verified NashConv plateau as the deviation search's effort grows?

A verified NashConv is the sum of the best unilateral gains a search finds in the
simulator, so it is a lower bound whose strength is the search's. This study measures
it at several efforts, on the same profiles and seeds:

* ``budget32``, ``budget96``: evcs-gym 0.3.0's fixed-budget search at the 32 and 96
  candidates a station its tables and checks used;
* ``converged-0.4``: evcs-gym 0.4.0's default -- global candidates, then one pattern
  search down to 1/96 of the range until a whole pass finds no gain above the noise;
* ``converged``: the default since -- two rounds of pattern search, the second from the
  first's answer down to 1/192 of the range, each pass polling two random directions too;
* ``converged+round``, ``converged+restarts``: the default continued along its own path
  -- a third round down to 1/384, or two pattern searches from uniform-random prices --
  so that on the searched seed they can only find more (does the default stop where its
  own search would go on gaining?);
* ``converged-x2``: twice its effort -- three rounds, the last down to 1/384, four random
  directions a poll (does the default's figure hold against its own doubling?);
* ``converged-x4``: four times its effort -- four rounds down to 1/768, eight random
  directions (does ×2's figure hold against its doubling?);
* ``restarts``: an independent check of the reach -- four more pattern searches from
  uniform-random prices, on 0.4.0's default;
* ``de``: another method -- SciPy's differential evolution (the budget search with no
  candidates of its own) started from 0.4.0's default's deviations, 150 candidates a
  station.

Each (profile, search) is one record in ``OUT/records/`` (``--resume`` keeps those of the
same prices): the NashConv and its standard error over ``--seeds`` seeds, every station's
gain, whether the search converged, its evaluations, its raw simulations (UE iterations)
and its seconds (with the host's seconds per raw simulation). ``report.md`` gives the
table and, per profile, whether the default (and twice its effort) sits on the plateau:
more effort and the independent methods change the figure by at most 0.5 point or 10 %.
Where the search seeds are among the gains' seeds (the default), each cell also gives the
NashConv on the other seeds alone: out of sample, free of the winner's curse
(``--held-out`` searches on other seeds, so that every gain is out of sample).

Profiles: ``nash`` and ``collusive`` (the game's shipped references, ``N`` and ``M``),
``mid`` (every station at mid-bounds), and any grid cell's learned prices
(``cell:PATH`` to its JSON record).

Run (2 cores; ``tiny_market`` a few minutes, ``siouxfalls_market`` 3-10 min per search
and profile)::

    python benchmarks/studies/search_plateau.py --scenario tiny_market \\
        --profiles nash collusive cell:benchmarks/results/marl_tiny_market/cells/X.json ... \\
        --resume --out benchmarks/results/search_plateau_tiny_market
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.cli.common import parse_settings, read_price_file
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import exploitability, search_seed_list
from evcs_gym.scenarios import load_references

SEARCHES = (
    "budget32",
    "budget96",
    "converged-0.4",
    "converged",
    "converged+round",
    "converged+restarts",
    "converged-x2",
    "converged-x4",
    "restarts",
    "de",
)
"""The efforts compared, in the table's order."""
DE_BUDGET = 150
"""Candidates per station of the ``de`` search (differential evolution from 0.4.0's default
search's deviations)."""
NOTHING = "nothing to compare"
"""The verdict of a search no stronger one was run against."""
PLATEAU_POINTS, PLATEAU_SHARE = 0.005, 0.10
"""A figure sits on the plateau when more effort changes it by at most 0.5 point of
NashConv or 10 % of it."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="tiny_market")
    p.add_argument("--profiles", nargs="+", default=["nash", "collusive", "mid"])
    p.add_argument("--searches", nargs="+", default=list(SEARCHES), choices=SEARCHES)
    p.add_argument("--seeds", type=int, default=4, help="seeds of the verified gains")
    p.add_argument("--search-seeds", type=int, default=1, help="seeds a candidate is scored on")
    p.add_argument(
        "--held-out",
        action="store_true",
        help="search on seeds after --seeds: every gain measured out of sample",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--resume", action="store_true", help="keep the records in OUT of the same prices"
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: the report of the records in OUT of the same prices",
    )
    p.add_argument("--out", default="search_plateau_out")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="a scenario setting")
    return p.parse_args(argv)


def profile_prices(spec: str, nd: evcs_gym.NetworkData) -> tuple[str, dict[str, Any]]:
    """``(name, prices)`` of a profile named on the command line."""
    if spec in ("nash", "collusive"):
        references = load_references(nd)
        if references is None:
            raise SystemExit(f"{nd.name} ships no references: cannot use {spec!r}")
        return spec, getattr(references, spec)
    if spec == "mid":
        return spec, {a: [(lo + hi) / 2] * nd.n_periods for a, (lo, hi) in nd.price_bounds.items()}
    if spec.startswith("cell:"):
        path = Path(spec[5:])
        record = json.loads(path.read_text())
        return path.stem.split("__", 1)[-1], record["prices"]
    if spec.startswith("file:"):  # {station: prices}, or a solve/train output
        path = Path(spec[5:])
        return path.stem, read_price_file(str(path), "--profiles")
    raise SystemExit(f"unknown profile {spec!r}: nash, collusive, mid, cell:PATH or file:PATH")


def measure(
    pool: Any, prices: dict[str, Any], search: str, args: argparse.Namespace, out: Path
) -> dict[str, Any]:
    """One record: the certificate of ``prices`` with ``search`` (seeds from ``args``)."""
    evaluator = BatchEvaluator(pool)
    kwargs: dict[str, Any] = {"search": search, "held_out": args.held_out}
    if search == "de":  # DE alone, from 0.4.0's default's deviations
        if not (out / "converged-0.4.json").exists():
            raise SystemExit(f"`de` starts from {out}/converged-0.4.json: run converged-0.4 first")
        start = json.loads((out / "converged-0.4.json").read_text())
        devs = start["certificate"]["deviations"]
        starts = {a: [d["best_prices"]] for a, d in devs.items()}
        kwargs.update(search="budget", budget=DE_BUDGET, grid=0, period_moves=None, starts=starts)
    started = time.perf_counter()
    cert = exploitability(
        evaluator, prices, seeds=args.seeds, search_seeds=args.search_seeds, **kwargs
    )
    seconds = time.perf_counter() - started
    raw = sum(r.ue_iterations for r in evaluator._cache.values())
    return {
        "search": search,
        "relative_nash_conv": cert.relative_nash_conv,
        "relative_nash_conv_se": cert.relative_nash_conv_se,
        "converged": cert.converged,
        "gains": {a: d.relative_gain for a, d in cert.deviations.items()},
        "gains_se": {a: d.relative_gain_se for a, d in cert.deviations.items()},
        "evaluations": cert.evaluations,
        "raw_simulations": raw,
        "seconds": seconds,
        "seconds_per_raw_simulation": seconds * pool.n_workers / max(raw, 1),
        "summary": cert.summary(),
        "certificate": cert.to_dict(),
    }


def seed_plan(args: argparse.Namespace) -> dict[str, list[int]]:
    """The seeds of the gains and of the search that ``args`` ask for."""
    seeds = list(range(args.seeds))
    return {
        "seeds": seeds,
        "search_seeds": list(search_seed_list(seeds, args.search_seeds, args.held_out)),
    }


def is_record_of(path: Path, prices: dict[str, Any], seeds: dict[str, list[int]]) -> bool:
    """Whether ``path`` holds a record of these prices on these seeds (a cell retrained
    since, a profile file edited or other seeds make the record stale: ``--resume``
    measures it again)."""
    if not path.exists():
        return False
    cert = json.loads(path.read_text())["certificate"]
    if any(cert.get(key) != value for key, value in seeds.items()):
        return False
    kept = cert["prices"]
    return kept.keys() == prices.keys() and all(
        np.array_equal(np.asarray(kept[a], dtype=float), np.asarray(prices[a], dtype=float))
        for a in prices
    )


def out_of_sample(certificate: dict[str, Any]) -> tuple[float, float, list[int]] | None:
    """NashConv ± SE (shares of the total revenue) on the gains' seeds that the search did
    not score on, and those seeds; None if there are fewer than two or no others."""
    seeds = certificate["seeds"]
    searched = set(certificate.get("search_seeds", seeds[:1]))
    keep = [i for i, s in enumerate(seeds) if s not in searched]
    if len(keep) < 2 or len(keep) == len(seeds):
        return None
    total = sum(certificate["rewards"].values())
    nash_conv, variance = 0.0, 0.0
    for dev in certificate["deviations"].values():
        gains = np.subtract(dev["best_rewards"], dev["current_rewards"])[keep]
        nash_conv += max(0.0, float(gains.mean()))
        variance += float(gains.var(ddof=1)) / len(keep)
    return nash_conv / total, math.sqrt(variance) / total, [seeds[i] for i in keep]


def judged_figure(record: dict[str, Any]) -> float:
    """The figure a plateau verdict compares: the NashConv out of sample where the record
    has one (more effort also buys more winner's curse on the searched seeds), else the
    certificate's."""
    outside = out_of_sample(record["certificate"]) if "certificate" in record else None
    return record["relative_nash_conv"] if outside is None else outside[0]


def plateau(records: dict[str, dict[str, Any]], base: str = "converged") -> str:
    """Whether ``base``'s figure holds against the searches of more effort, in words."""
    if base not in records:
        return f"no {base} record"
    figure = judged_figure(records[base])
    stronger = SEARCHES[SEARCHES.index(base) + 1 :]
    parts = []
    for name in (s for s in stronger if s in records):
        other = judged_figure(records[name])
        holds = abs(other - figure) <= max(PLATEAU_POINTS, PLATEAU_SHARE * figure)
        parts.append(f"{name} {other - figure:+.2%} ({'holds' if holds else 'MOVES'})")
    return ", ".join(parts) or NOTHING


def cell(record: dict[str, Any]) -> str:
    """One record in the table: NashConv ± SE, out of sample where it has that figure, and
    its cost."""
    se = record["relative_nash_conv_se"]
    se_txt = "" if se is None or math.isnan(se) else f" ± {se:.2%}"
    mark = "" if record["converged"] in (None, True) else " (capped)"
    outside = out_of_sample(record["certificate"])
    held = "" if outside is None else f"<br>out of sample {outside[0]:.2%} ± {outside[1]:.2%}"
    return (
        f"{record['relative_nash_conv']:.2%}{se_txt}{mark}{held}<br>"
        f"{record['evaluations']} ev, {record['raw_simulations']} raw, "
        f"{record['seconds'] / 60:.1f} min"
    )


def report(
    scenario: str,
    rows: dict[str, dict[str, dict[str, Any]]],
    searches: list[str],
    seeds: dict[str, list[int]],
) -> str:
    """The markdown table of every profile and search, and the plateau verdicts."""
    held_out = not set(seeds["seeds"]) & set(seeds["search_seeds"])
    head = "| profile | " + " | ".join(searches) + " | plateau |"
    lines = [
        f"# Search plateau on `{scenario}`",
        "",
        "Verified NashConv ± SE (% of total revenue) by search; under it the evaluations, "
        "raw simulations and minutes. Plateau: the default search's figure, twice its "
        "effort's and 0.4.0's default's, against the searches of more effort and the "
        f"independent methods (holds: within {PLATEAU_POINTS:.1%} point or {PLATEAU_SHARE:.0%}; "
        "judged out of sample where a cell has that figure).",
        f"Gains on seeds {seeds['seeds']}; each candidate scored on the mean of seeds "
        f"{seeds['search_seeds']}{' (held out: no gain is measured on them)' if held_out else ''}"
        f"{'' if held_out else '; out of sample: the NashConv on the other seeds alone'}.",
        "",
        head,
        "|---" * (len(searches) + 2) + "|",
    ]
    for profile, records in rows.items():
        cells = [cell(records[s]) if s in records else "" for s in searches]
        verdicts = [plateau(records)]
        for base, label in (("converged-x2", "x2"), ("converged-0.4", "0.4.0")):
            if base in records and (verdict := plateau(records, base)) != NOTHING:
                verdicts.append(f"{label}: {verdict}")
        lines.append(f"| {profile} | " + " | ".join(cells) + f" | {'<br>'.join(verdicts)} |")
    per_raw = [r["seconds_per_raw_simulation"] for rs in rows.values() for r in rs.values()]
    if per_raw:
        lines += [
            "",
            f"Host: {np.median(per_raw):.3f} worker-seconds per raw simulation (median).",
        ]
    return "\n".join(lines) + "\n"


def record_command(out: Path, argv: Sequence[str]) -> None:
    """Append this run's command and date to ``OUT/run.json`` (a resumed study lists
    every command that wrote to it)."""
    path = out / "run.json"
    run = json.loads(path.read_text()) if path.exists() else {"commands": []}
    command = "python " + shlex.join(["benchmarks/studies/search_plateau.py", *argv])
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    run["commands"].append({"command": command, "date": date})
    run["command"] = command
    path.write_text(json.dumps(run, indent=1))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    (out / "records").mkdir(parents=True, exist_ok=True)
    nd = evcs_gym.load_scenario(args.scenario, **parse_settings(args.set))
    searches = [s for s in SEARCHES if s in args.searches]
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    with evcs_gym.ParallelEvaluatorPool(nd, n_workers=args.workers) as pool:
        for spec in args.profiles:
            name, prices = profile_prices(spec, nd)
            folder = out / "records" / name
            folder.mkdir(exist_ok=True)
            rows[name] = {}
            for search in searches:
                path = folder / f"{search}.json"
                keep = (args.resume or args.report_only) and is_record_of(
                    path, prices, seed_plan(args)
                )
                if args.report_only and not keep:
                    continue
                if not keep:
                    record = measure(pool, prices, search, args, folder)
                    record.update(
                        profile=spec,
                        scenario=args.scenario,
                        settings_hash=nd.settings_hash,
                        date=datetime.datetime.now(datetime.timezone.utc).isoformat(
                            timespec="seconds"
                        ),
                    )
                    path.write_text(json.dumps(record, indent=1))
                    print(
                        f"{name} {search}: {record['relative_nash_conv']:.2%} "
                        f"({record['evaluations']} evaluations, {record['seconds']:.0f} s)",
                        flush=True,
                    )
                rows[name][search] = json.loads(path.read_text())
    record_command(out, sys.argv[1:] if argv is None else argv)
    text = report(args.scenario, rows, searches, seed_plan(args))
    (out / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
