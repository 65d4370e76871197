"""What the ``evcs-gym`` commands share: help formatting, options, scenarios and prices.

* :class:`HelpFormatter` and :func:`add_command` -- every command's help shows each
  option's default and keeps its description as written;
* :func:`add_scenario_argument`, :func:`add_seed_arguments`,
  :func:`add_search_arguments` and :func:`add_settings_argument` -- the options several
  commands take (:func:`search_from_args` reads the search's);
* :func:`parse_settings` and :func:`load_scenario` -- ``--set KEY=VALUE`` overrides and the
  scenario they apply to;
* :func:`load_prices` and :func:`read_price_file` -- a uniform ``--price`` or a JSON file;
* :func:`evaluation_backend` -- a process pool or the scenario itself;
* :func:`format_result` and :func:`game_info` -- what ``evaluate`` prints and what every
  result file says it was measured on.

Nothing here imports the simulator's heavy parts at import time: ``evcs-gym --help`` and
``evcs-gym scenarios`` stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from evcs_gym.network.data import NetworkData
    from evcs_gym.ue.result import EvalResult

__all__ = [
    "HelpFormatter",
    "add_command",
    "add_scenario_argument",
    "add_search_arguments",
    "add_seed_arguments",
    "add_settings_argument",
    "evaluation_backend",
    "format_result",
    "game_info",
    "load_prices",
    "load_scenario",
    "package_version",
    "parse_settings",
    "read_price_file",
    "search_from_args",
    "set_help",
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help line; descriptions and epilogs kept as written."""


def package_version() -> str:
    """The installed distribution's version (``evcs_gym.__version__`` if not installed)."""
    try:
        return version("evcs-gym")
    except PackageNotFoundError:  # pragma: no cover - run from a bare source tree
        import evcs_gym

        return evcs_gym.__version__


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    """Add the subparser of command ``name``, its ``help`` also its description."""
    return subparsers.add_parser(name, help=help, description=help, formatter_class=HelpFormatter)


def parse_settings(pairs: Sequence[str] | None, flag: str = "--set") -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` as settings overrides; each value is JSON, else a string.

    Args:
        pairs: the ``--set`` arguments (None: none given).
        flag: the option they came from, for the error message.

    Raises:
        SystemExit: a pair is not ``KEY=VALUE``.

    Example:
        >>> parse_settings(["ue_max_iterations=20", "warm_start_price=null", "network_name=x"])
        {'ue_max_iterations': 20, 'warm_start_price': None, 'network_name': 'x'}
    """
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"evcs-gym: {flag} wants KEY=VALUE, got {pair!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def load_scenario(args: argparse.Namespace) -> NetworkData:
    """``load_scenario(args.scenario, **--set overrides)``; a bad setting exits with its message."""
    import evcs_gym

    try:
        return evcs_gym.load_scenario(args.scenario, **parse_settings(args.set))
    except evcs_gym.ScenarioError as e:
        raise SystemExit(f"evcs-gym: {e}") from None


def game_info(nd: NetworkData) -> dict[str, str]:
    """The game a result was measured on: the package version and the settings' hash."""
    import evcs_gym

    return {"version": evcs_gym.__version__, "settings_hash": nd.settings_hash}


def load_prices(args: argparse.Namespace, nd: NetworkData) -> dict[str, np.ndarray]:
    """The ``--prices`` file if given, else the uniform ``--price`` in every period."""
    from evcs_gym.ue.prices import uniform_prices

    if args.prices is not None:
        return read_price_file(args.prices, "--prices")
    return uniform_prices(nd.agent_names, nd.n_periods, args.price)


def read_price_file(path: str, option: str) -> dict[str, np.ndarray]:
    """``{station: [price per period]}`` from a JSON file, or from the ``"prices"`` entry
    of one (the output of ``solve --out`` or ``train``).

    Args:
        path: the JSON file.
        option: the option that named it, for the error messages.

    Raises:
        SystemExit: the file cannot be read or holds no ``{station: [prices]}``.
    """
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"evcs-gym: cannot read {option} {path!r}: {e}") from None
    if isinstance(raw, dict) and "prices" in raw and isinstance(raw["prices"], dict):
        raw = raw["prices"]
    if not isinstance(raw, dict):
        raise SystemExit(f"evcs-gym: {option} {path!r} must hold {{station: [prices]}}")
    return {str(k): np.asarray(v, dtype=float) for k, v in raw.items()}


@contextlib.contextmanager
def evaluation_backend(nd: NetworkData, workers: int) -> Iterator[Any]:
    """A process pool for ``workers > 1``, else the scenario itself (serial evaluation)."""
    if workers > 1:
        from evcs_gym.parallel.pool import ParallelEvaluatorPool

        with ParallelEvaluatorPool(nd, n_workers=workers) as pool:
            yield pool
    else:
        yield nd


def format_result(nd: NetworkData, res: EvalResult, seconds: float) -> str:
    """Human-readable table of prices, flows and revenues per station and period."""
    periods = nd.n_periods
    width = max(8, max(len(a) for a in nd.agent_names) + 2)
    plen = nd.settings.period_length
    lines = [
        f"scenario {nd.name}: {nd.n_agents} stations, {periods} periods of {plen:.0f} s, "
        f"seed {res.seed}",
        "",
    ]
    head = f"{'station':<{width}}{'':<8}" + "".join(f"{'p' + str(p):>9}" for p in range(periods))
    head += f"{'total':>11}"
    lines.append(head)
    lines.append("-" * len(head))
    for a in nd.agent_names:
        price = "".join(f"{v:>9.3f}" for v in res.prices[a])
        flow = "".join(f"{v:>9.0f}" for v in res.flows[a])
        lines.append(f"{a:<{width}}{'price':<8}{price}")
        lines.append(f"{'':<{width}}{'flow':<8}{flow}{res.flows[a].sum():>11.0f}")
        lines.append(f"{'':<{width}}{'revenue':<8}{'':>{9 * periods}}{res.revenues[a]:>11.1f}")
    total_flow = sum(f.sum() for f in res.flows.values())
    lines += [
        "-" * len(head),
        f"total revenue {sum(res.revenues.values()):.1f}, vehicles charged {total_flow:.0f} "
        f"of {res.ue_stats['simulated_charging_vehicles']} charging trips",
        f"UE: {res.ue_iterations} iterations, converged={res.converged}, "
        f"relative gap {res.ue_stats['relative_gap']:.4f}, "
        f"completed {res.ue_stats['completed_ratio']:.3f}, {seconds:.2f} s",
    ]
    return "\n".join(lines)


def add_seed_arguments(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--seeds``, ``--search-seeds`` and ``--held-out`` of the commands that
    verify prices."""
    p.add_argument("--seed", type=int, default=0, help="search seed")
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="verify gains on seeds seed..seed+N-1, with standard errors (None: seed alone)",
    )
    p.add_argument("--search-seeds", type=int, default=1, help="seeds the searches average over")
    p.add_argument(
        "--held-out",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="search on seeds after --seeds, so that every gain is measured out of sample "
        "(--no-held-out: on --seed, the first of them)",
    )


SEARCH_NAMES = (
    "converged",
    "converged+round",
    "converged+restarts",
    "converged-x2",
    "converged-x4",
    "converged-0.4",
    "restarts",
    "budget",
    "budget32",
    "budget96",
)
"""The presets of :data:`evcs_gym.equilibrium.search_spec.SEARCHES` (named here so that
building the parser imports no simulator code; a test checks that they agree)."""


def add_search_arguments(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The deviation search's options: ``--{prefix}search``, ``--{prefix}resolution``,
    ``--{prefix}budget`` (or ``--budget-per-station`` without a prefix) and
    ``--{prefix}grid``; :func:`search_from_args` reads them.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_search_arguments(p, prefix="verify-")
        >>> spec = search_from_args(p.parse_args(["--verify-resolution", "0.005"]), "verify_")
        >>> spec.method, spec.resolution, spec.budget
        ('converged', 0.005, None)
    """
    budget = f"--{prefix}budget" if prefix else "--budget-per-station"
    p.add_argument(
        f"--{prefix}search",
        choices=SEARCH_NAMES,
        default="converged",
        help="the deviation search: 'converged' (global candidates, then two rounds of "
        "pattern search down to --resolution until a whole pass finds no gain above the "
        "noise: the certificate), 'converged+round' and 'converged+restarts' (it, then a "
        "third round or two random restarts), 'converged-x2' and 'converged-x4' (twice and "
        "four times its effort on paths of their own), 'converged-0.4' (evcs-gym 0.4.0's "
        "default: one round to 1/96), "
        "'restarts' (4 random restarts on 0.4.0's default), or evcs-gym 0.3.0's fixed "
        "budgets 'budget' (64), 'budget32', 'budget96'",
    )
    p.add_argument(
        f"--{prefix}resolution",
        type=float,
        default=None,
        help="the converged search's last step, as a share of each station's price range "
        "(None: 1/192)",
    )
    p.add_argument(
        budget,
        dest=f"{prefix.replace('-', '_')}budget" if prefix else "budget_per_station",
        type=int,
        default=None,
        help="price vectors tried per station at most: the converged search's cap (None: "
        "600) or the fixed budget (None: the preset's)",
    )
    p.add_argument(
        f"--{prefix}grid",
        type=int,
        default=None,
        help="uniform price levels among the global candidates (None: 7)",
    )


def search_from_args(args: argparse.Namespace, prefix: str = "") -> Any:
    """The :class:`~evcs_gym.equilibrium.search_spec.SearchSpec` of
    :func:`add_search_arguments`' options (``prefix`` with ``_`` for ``-``)."""
    from evcs_gym.equilibrium.search_spec import resolve_search

    try:
        return resolve_search(
            getattr(args, f"{prefix}search"),
            budget=getattr(args, f"{prefix}budget" if prefix else "budget_per_station"),
            grid=getattr(args, f"{prefix}grid"),
            resolution=getattr(args, f"{prefix}resolution"),
        )
    except ValueError as e:
        raise SystemExit(f"evcs-gym: {e}") from None


def add_scenario_argument(p: argparse.ArgumentParser) -> None:
    """``--scenario``: a bundled name or a scenario folder (default: Sioux Falls)."""
    p.add_argument(
        "--scenario",
        default="siouxfalls",
        help="bundled scenario name (`evcs-gym scenarios`) or a scenario folder's path",
    )


@functools.lru_cache(maxsize=1)
def set_help() -> str:
    """The ``--set`` help: its syntax and every setting it accepts."""
    from evcs_gym.scenarios.setting_docs import setting_names

    return (
        "override a scenario setting (repeatable); VALUE is read as JSON, else as a string, "
        "e.g. ue_max_iterations=50. Settings (`evcs-gym settings` shows their values and "
        "meanings): " + ", ".join(setting_names())
    )


def add_settings_argument(p: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (repeatable), every command's last option when it takes one."""
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help=set_help())
