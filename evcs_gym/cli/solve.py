"""``evcs-gym solve``: a reference equilibrium by best-response dynamics.

Runs :class:`~evcs_gym.equilibrium.best_response.BestResponseDynamics` (or with
``--method descent``, :class:`~evcs_gym.equilibrium.certificate_descent.CertificateDescent`,
which keeps a station's step only if the certificate falls) from mid-bound
prices or a ``--start`` file, each round certified by the simulator with the converged
deviation search (``--search`` names another), until the relative
NashConv reaches ``--target`` or ``--rounds`` / ``--budget`` run out. With
``--objective total`` each station's step maximises the stations' total revenue, and the
fixed point is the collusive reference (the joint optimum) instead of a Nash equilibrium.
It prints the solver's summary, or with ``--json`` the prices, certificate and history, which
``--out`` also writes (the file ``exploit --prices`` and ``convergence --prices`` read).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evcs_gym.cli.common import (
    add_command,
    add_scenario_argument,
    add_search_arguments,
    add_seed_arguments,
    add_settings_argument,
    evaluation_backend,
    game_info,
    load_scenario,
    read_price_file,
    search_from_args,
)
from evcs_gym.equilibrium.deviation_search import OBJECTIVES

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``solve`` command and its options to ``subparsers``."""
    p = add_command(
        subparsers, "solve", "reference equilibrium by best-response dynamics, each round verified"
    )
    add_scenario_argument(p)
    p.add_argument("--target", type=float, default=0.02, help="relative NashConv to reach")
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="own",
        help="what each station's step maximises: its own revenue (a Nash equilibrium) "
        "or the stations' total (the collusive reference)",
    )
    p.add_argument(
        "--method",
        choices=("dynamics", "descent"),
        default="dynamics",
        help="best-response dynamics, or a descent on the certificate (--step, --min-step)",
    )
    p.add_argument(
        "--step",
        type=float,
        default=0.5,
        help="descent: a station's first step, a share of the way to its best response",
    )
    p.add_argument(
        "--min-step", type=float, default=1 / 16, help="descent: the smallest step tried"
    )
    p.add_argument("--damping", type=float, default=1.0, help="step towards the best responses")
    p.add_argument(
        "--min-damping",
        type=float,
        default=None,
        help="halve a station's step on reversals, down to this (None: never halve)",
    )
    add_search_arguments(p)
    p.add_argument(
        "--rounds", type=int, default=20, help="rounds at most (descent: certificates at most)"
    )
    p.add_argument(
        "--budget", type=int, default=None, help="total evaluations at most (None: no limit)"
    )
    p.add_argument(
        "--start",
        help="JSON file {station: [prices per period]} to start from (None: mid-bound prices)",
    )
    p.add_argument("--workers", type=int, default=1, help="evaluator processes")
    add_seed_arguments(p)
    p.add_argument("--out", help="write prices and certificate to this JSON file")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_settings_argument(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Solve, print and (``--out``) write the answer; 0."""
    if args.method == "descent" and args.objective != "own":
        raise SystemExit(
            f"--method descent solves for a Nash equilibrium; got --objective {args.objective}"
        )
    nd = load_scenario(args)
    with evaluation_backend(nd, args.workers) as backend:
        solver = _solver(args, backend)
        res = solver.solve(read_price_file(args.start, "--start") if args.start else None)
    out = {
        "scenario": nd.name,
        "method": args.method,
        "game": game_info(nd),
        "prices": {a: v.tolist() for a, v in res.prices.items()},
        "objective": args.objective,
        "converged": res.converged,
        "rounds": res.rounds,
        "evaluations": res.evaluations,
        "seconds": res.seconds,
        "certificate": res.certificate.to_dict(),
        "history": res.history,
    }
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(res.summary())
        if args.out:
            print(f"written to {args.out}")
    return 0


def _solver(args: argparse.Namespace, backend: Any) -> Any:
    """The solver ``--method`` names, set from the command's arguments."""
    from evcs_gym.equilibrium.best_response import BestResponseDynamics
    from evcs_gym.equilibrium.certificate_descent import CertificateDescent

    common = dict(
        target=args.target,
        search=search_from_args(args),
        budget=args.budget,
        seed=args.seed,
        seeds=args.seeds,
        search_seeds=args.search_seeds,
        held_out=args.held_out,
        verbose=not args.json,
    )
    if args.method == "descent":
        return CertificateDescent(
            backend, step=args.step, min_step=args.min_step, max_steps=args.rounds, **common
        )
    return BestResponseDynamics(
        backend,
        damping=args.damping,
        min_damping=args.min_damping,
        max_rounds=args.rounds,
        objective=args.objective,
        **common,
    )
