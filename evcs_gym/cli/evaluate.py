"""``evcs-gym evaluate``: evaluate one price profile in the simulator.

The profile is a uniform ``--price`` or a JSON ``--prices`` file; the command prints a
table of prices, flows and revenues per station and period, or with ``--json`` the
result's dict with the scenario, the game it was measured on and the load time. Prices
outside the scenario's bounds exit with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from evcs_gym.cli.common import (
    add_command,
    add_scenario_argument,
    add_settings_argument,
    format_result,
    game_info,
    load_prices,
    load_scenario,
)

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``evaluate`` command and its options to ``subparsers``."""
    p = add_command(subparsers, "evaluate", "evaluate one price profile in the simulator")
    add_scenario_argument(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--price", type=float, default=1.25, help="uniform price per kWh")
    group.add_argument(
        "--prices", help='JSON file {"station": [price per period, ...], ...} (replaces --price)'
    )
    p.add_argument(
        "--seed", type=int, default=None, help="evaluation seed (None: the scenario's default_seed)"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    add_settings_argument(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Evaluate the profile and print it; 0, or 2 on invalid prices."""
    import evcs_gym

    t0 = time.perf_counter()
    nd = load_scenario(args)
    load_s = time.perf_counter() - t0
    ev = evcs_gym.EVCSRewardEvaluator(nd)
    prices = load_prices(args, nd)
    try:
        res = ev.evaluate(prices, seed=args.seed)
    except evcs_gym.PriceError as e:
        print(f"evcs-gym: invalid prices: {e}", file=sys.stderr)
        return 2
    if args.json:
        out: dict[str, Any] = res.to_dict()
        out["scenario"] = nd.name
        out["game"] = game_info(nd)
        out["load_seconds"] = load_s
        print(json.dumps(out, indent=2))
    else:
        print(f"loaded {nd.summary()} in {load_s:.1f} s")
        print(format_result(nd, res, res.timings["total"]))
    return 0
