"""``evcs-gym convergence``: revenues against UE start, tolerance and iteration cap.

Builds the study's price profiles around a base profile (``--prices``, else mid-bound
prices: single-period spikes, training-like noisy and uniform-random profiles), evaluates
each on ``--seeds`` seeds under the default UE and every ``--conditions`` variant
(:func:`~evcs_gym.studies.convergence.convergence_study`) and prints whether each
station's revenue agrees across them. With ``--check`` it exits 1 unless every station
agrees.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evcs_gym.cli.common import (
    add_command,
    add_scenario_argument,
    add_settings_argument,
    game_info,
    load_prices,
    load_scenario,
    parse_settings,
)

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``convergence`` command and its options to ``subparsers``."""
    p = add_command(
        subparsers,
        "convergence",
        "revenues against UE start, stop-rule tolerance and iteration cap, with seed spread",
    )
    add_scenario_argument(p)
    p.add_argument(
        "--prices",
        help="JSON file of the base profile, e.g. `solve --out` (None: mid-bound prices)",
    )
    p.add_argument("--seeds", type=int, default=6, help="seeds 0..N-1 in every condition")
    p.add_argument("--deviations", type=int, default=2, help="single-period spikes")
    p.add_argument("--training", type=int, default=1, help="training-like noisy profiles")
    p.add_argument("--random", type=int, default=1, help="uniform-random profiles")
    p.add_argument(
        "--profile-seed", type=int, default=0, help="seed of the spikes' and noisy profiles' draws"
    )
    from evcs_gym.studies.convergence import CONDITIONS, STANDARD_CONDITIONS

    p.add_argument(
        "--conditions",
        nargs="+",
        default=list(STANDARD_CONDITIONS),
        choices=list(CONDITIONS),
        help="UE variants compared with the default (default: %(default)s)",
    )
    p.add_argument("--workers", type=int, default=2, help="evaluator processes")
    p.add_argument("--out", help="write the study as JSON")
    p.add_argument("--check", action="store_true", help="exit 1 unless every station agrees")
    add_settings_argument(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the study and print its table; 0, or 1 with ``--check`` on a disagreement."""
    from evcs_gym.studies.convergence import convergence_study, study_profiles

    nd = load_scenario(args)
    base = load_prices(args, nd) if args.prices else None
    profiles = study_profiles(
        nd,
        base,
        deviations=args.deviations,
        training_like=args.training,
        random=args.random,
        seed=args.profile_seed,
    )
    print(f"{nd.summary()}\nprofiles: {', '.join(profiles)}; seeds {args.seeds}", flush=True)
    t0 = time.perf_counter()
    study = convergence_study(
        args.scenario,
        profiles,
        seeds=args.seeds,
        conditions=args.conditions,
        workers=args.workers,
        progress=True,
        **parse_settings(args.set),
    )
    print(study.table())
    print(f"({time.perf_counter() - t0:.0f} s)")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**study.to_dict(), "game": game_info(nd)}, indent=2))
        print(f"written to {args.out}")
    return 0 if study.all_agree or not args.check else 1
