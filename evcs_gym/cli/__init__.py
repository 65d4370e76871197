"""Command-line interface: ``evcs-gym <command> ...``.

Commands:
    evaluate   evaluate one price profile (uniform ``--price`` or a JSON ``--prices`` file)
    train      train MADDPG / IDDPG / MFDDPG through the vector env, verify, write a run folder
    exploit    verify a price profile: each station's best unilateral deviation
    solve      run the reference solver (best-response dynamics) to a verified equilibrium
    convergence  revenues against UE start and tolerance, with seed spread
    scenarios  list the bundled scenarios
    settings   list the scenario settings with their values and meanings
    cache      list or clear the on-disk cache of prepared scenarios

Every command that loads a scenario takes ``--set KEY=VALUE`` (repeatable) to override
one of its settings (:class:`evcs_gym.ScenarioSettings`); the value is read as JSON, else
as a string. ``--budget`` is always a total number of simulator evaluations;
per-station search budgets are ``--budget-per-station``. ``--help`` shows every default.

Each command is a module of this package (``evcs_gym.cli.evaluate``, ``.train``, ...)
with its options (``add_parser``) and its ``run(args) -> int``;
:mod:`~evcs_gym.cli.parser` assembles them and :mod:`~evcs_gym.cli.common` holds what
they share. ``python -m evcs_gym.cli`` is the same as ``evcs-gym``.

Example:
    $ evcs-gym evaluate --scenario siouxfalls --price 1.25
    $ evcs-gym evaluate --scenario tiny --prices prices.json --json
    $ evcs-gym convergence --scenario siouxfalls --set ue_payoff_precision=0.02
    $ evcs-gym settings --scenario tiny
"""

from __future__ import annotations

from evcs_gym.cli.common import parse_settings
from evcs_gym.cli.parser import build_parser, main

__all__ = ["build_parser", "main", "parse_settings"]
