"""Verify learned prices in the simulator and print the report every trainer prints.

Every example that trains with an outside library (RLlib, TorchRL, BenchMARL, AgileRL,
…) ends the same way as ``evcs-gym train``: the learned pure prices, their
simulator-verified exploitability over several seeds (:func:`exploitability`), and the
evaluations and time it took. :func:`verify_prices` is that ending, once.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.equilibrium import verify_prices
    >>> nd = evcs_gym.load_scenario("tiny")
    >>> cert = verify_prices(nd, {"A": [0.5] * 4, "B": [0.5] * 4}, seeds=2,
    ...                      out=lambda *_: None)
    >>> cert.seeds, cert.converged, cert.relative_nash_conv >= 0
    ((0, 1), True, True)
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from evcs_gym.equilibrium.exploitability import ExploitabilityResult, exploitability
from evcs_gym.equilibrium.search_spec import SEARCHES, SearchSpec, resolve_search

__all__ = [
    "add_verification_arguments",
    "add_verify_seed_arguments",
    "format_prices",
    "verify_from_args",
    "verify_prices",
]


def format_prices(prices: Mapping[str, Any], digits: int = 3) -> list[str]:
    """One line per station: ``"       A: 0.500 0.500 0.500 1.907"``."""
    return [
        f"  {a:>6}: " + " ".join(f"{v:.{digits}f}" for v in np.asarray(p, dtype=float).ravel())
        for a, p in prices.items()
    ]


def verify_prices(
    data: Any,
    prices: Mapping[str, Any],
    *,
    seeds: int | Sequence[int],
    budget: int | None = None,
    search: SearchSpec | str = "converged",
    seed: int = 0,
    search_seeds: int = 1,
    held_out: bool = True,
    workers: int = 1,
    title: str = "learned pure prices",
    out: Callable[[str], Any] = print,
) -> ExploitabilityResult:
    """Print ``prices``, verify them with :func:`exploitability`, print the certificate.

    Args:
        data: ``NetworkData`` (or anything :func:`exploitability` takes).
        prices: ``{station: (n_periods,) prices}``.
        budget: the deviation search's distinct candidates per station at most (None:
            the search's default).
        search: the deviation search (:func:`exploitability`'s ``search``).
        seeds: seeds every gain is re-evaluated on (``n``: ``seed .. seed + n - 1``).
        seed: the first seed when ``seeds`` is a count (``evcs-gym train`` uses the
            training seed).
        search_seeds: the search scores each candidate on the mean of the first this many
            of ``seeds`` (:func:`exploitability`'s ``search_seeds``; ``evcs-gym train``
            uses 1).
        held_out: search on seeds after ``seeds`` (:func:`exploitability`'s ``held_out``).
        workers: ``> 1`` verifies in a :class:`~evcs_gym.ParallelEvaluatorPool` of that
            many processes (``data`` must then be ``NetworkData``).
        title: heading of the price lines.
        out: where the lines go (``print``; a no-op to stay quiet).

    Returns:
        The :class:`ExploitabilityResult` (``relative_nash_conv`` ± ``relative_nash_conv_se``,
        per-station gains, ``evaluations``).
    """
    n_seeds = seeds if isinstance(seeds, int) else len(seeds)
    spec = resolve_search(search, budget=budget)
    out(f"\n{title}:")
    for line in format_prices(prices):
        out(line)
    out(f"verifying in the simulator ({spec.describe()}; gains on {n_seeds} seeds)...")
    evaluator: contextlib.AbstractContextManager[Any]  # yields the backend
    if workers > 1:
        from evcs_gym.parallel import ParallelEvaluatorPool

        evaluator = ParallelEvaluatorPool(data, n_workers=workers)
    else:
        evaluator = contextlib.nullcontext(data)
    with evaluator as backend:
        cert = exploitability(
            backend,
            dict(prices),
            seed,
            seeds=seeds,
            search_seeds=search_seeds,
            held_out=held_out,
            search=spec,
        )
    out(cert.summary())
    out(
        f"verified NashConv: {cert.relative_nash_conv:.2%} ± {cert.relative_nash_conv_se:.2%} "
        f"of total revenue, max relative gain {cert.max_relative_gain:.2%}"
    )
    return cert


def add_verification_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the verification flags every library example takes to ``parser``:
    ``--verify-search`` (converged), ``--verify-budget`` (None: the search's),
    ``--verify-seeds`` (4), ``--verify-search-seeds`` (1), ``--verify-held-out`` and
    ``--workers`` (2);
    :func:`verify_from_args` reads them (and ``--seed``).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_verification_arguments(parser)
        >>> args = parser.parse_args(["--verify-search-seeds", "2"])
        >>> args.verify_search, args.verify_budget, args.verify_seeds, args.verify_search_seeds
        ('converged', None, 4, 2)
    """
    add = parser.add_argument
    add(
        "--verify-search",
        choices=list(SEARCHES),
        default="converged",
        help="the deviation search (evcs_gym.equilibrium.search_spec.SEARCHES)",
    )
    add(
        "--verify-budget",
        type=int,
        default=None,
        help="deviation candidates per station at most (None: the search's default)",
    )
    add_verify_seed_arguments(parser)
    add("--workers", type=int, default=2, help="evaluator processes to verify")


def add_verify_seed_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the seeds of a verification to ``parser``: ``--verify-seeds`` (4),
    ``--verify-search-seeds`` (1) and ``--verify-held-out`` (on); shared by the library
    examples (:func:`add_verification_arguments`) and ``evcs-gym train``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_verify_seed_arguments(parser)
        >>> args = parser.parse_args(["--no-verify-held-out"])
        >>> args.verify_seeds, args.verify_search_seeds, args.verify_held_out
        (4, 1, False)
    """
    parser.add_argument(
        "--verify-seeds",
        type=int,
        default=4,
        help="seeds the verified gains are averaged over (their standard errors: >= 2)",
    )
    parser.add_argument(
        "--verify-search-seeds",
        type=int,
        default=1,
        help="seeds each candidate of the deviation search is scored on (the search "
        "maximises their mean revenue; at most --verify-seeds)",
    )
    parser.add_argument(
        "--verify-held-out",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the search scores on seeds after the --verify-seeds ones, so that every "
        "gain is measured out of sample (--no-verify-held-out: on the first of them)",
    )


def verify_from_args(
    data: Any, prices: Mapping[str, Any], args: argparse.Namespace, title: str
) -> ExploitabilityResult:
    """:func:`verify_prices` with the flags of :func:`add_verification_arguments`, from
    ``args.seed``."""
    return verify_prices(
        data,
        prices,
        budget=args.verify_budget,
        search=args.verify_search,
        seeds=args.verify_seeds,
        seed=args.seed,
        search_seeds=args.verify_search_seeds,
        held_out=args.verify_held_out,
        workers=args.workers,
        title=title,
    )
