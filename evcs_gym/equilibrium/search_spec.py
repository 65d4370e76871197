"""What a deviation search tries: one value naming the method, its reach and its resolution.

Two methods find a station's best unilateral deviation in the simulator:

* ``"converged"`` (the default, :mod:`~evcs_gym.equilibrium.station_search`): the global
  candidates (each period alone at either bound, ``grid`` uniform levels, the combined
  move), then pattern searches from the best of them whose per-period step halves from
  ``period_step`` of the price range down to ``resolution`` (two rounds, the second from
  the first's answer; each pass also polls two random directions); it stops when a whole
  pass at the finest step finds no move that gains more than the search seeds' noise
  (*converged at resolution h*), or when ``budget`` distinct price vectors are spent
  (*capped*). Its answer is the certificate every table of the package uses.
* ``"budget"`` (:func:`~evcs_gym.equilibrium.deviation_search.best_response`): the
  fixed-budget search of evcs-gym 0.3.0 and earlier, which stops after ``budget``
  candidates whatever it has found. Kept so that older figures can be reproduced.

:data:`SEARCHES` names the presets the plateau study compares
(``benchmarks/studies/search_plateau.py``): the default, twice its effort (a third
round, down to half the resolution, twice the random directions), four times its effort
(four rounds, down to a quarter), evcs-gym 0.4.0's default (one round to 1/96 of the
range, no random directions), random restarts as an independent check, and 0.3.0's 32-
and 96-candidate budgets.

Example:
    >>> spec = resolve_search("converged")
    >>> spec.method, spec.cap, spec.resolution == 1 / 192, spec.rounds
    ('converged', 600, True, 2)
    >>> resolve_search("budget", budget=32).cap
    32
    >>> print(resolve_search("converged").describe())
    converged search: bounds, 7 levels, combined move, then pattern searches from 1/12 to
    1/192 of the range (2 rounds), 2 random directions a poll
    >>> print(resolve_search("converged-0.4").describe())
    converged search: bounds, 7 levels, combined move, then pattern searches from 1/12 to
    1/96 of the range
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

__all__ = [
    "METHODS",
    "PERIOD_STEP",
    "SEARCHES",
    "Method",
    "SearchSpec",
    "resolve_search",
]

Method = Literal["converged", "budget"]
"""A search method: run to convergence at a resolution, or stop at a fixed budget."""
METHODS: tuple[Method, ...] = ("converged", "budget")

PERIOD_STEP = 1 / 12
"""Default first step of the single-period moves, as a share of the price range."""

DEFAULT_CAP = {"converged": 600, "budget": 64}
"""Distinct price vectors per station at most, by method, when ``budget`` is not given."""
CONVERGED_PERIOD_MOVES = 0
"""Nearby single-period moves among the converged search's global candidates when
``period_moves`` is None: none, since its pattern search's first pass is the ±1 step.
(The budget presets try ±1 and ±2 steps, as evcs-gym 0.3.0 did.)"""


@dataclass(frozen=True)
class SearchSpec:
    """How one station's best deviation is searched (see the module docstring).

    Every field has a default; :func:`resolve_search` fills ``budget`` and
    ``period_moves`` from the method when they are None.
    """

    method: Method = "converged"
    """``"converged"`` or ``"budget"``."""
    budget: int | None = None
    """Distinct price vectors tried per station at most (the current one included): a
    hard cap for either method (None: :data:`DEFAULT_CAP`)."""
    grid: int = 7
    """Uniform price levels across the station's bounds among the global candidates."""
    period_moves: int | None = None
    """Nearby single-period moves ±1..k steps among the global candidates (``0``: bound
    moves only; ``None`` with ``method="budget"``: no single-period moves at all)."""
    period_step: float = PERIOD_STEP
    """The nearby moves' step and the pattern search's first step, as a share of the
    station's price range."""
    resolution: float = 1 / 192
    """The pattern search's last step, as a share of the price range: converged means no
    single-period move of this size (or of any larger step it tried) gains. (1/96 in
    evcs-gym 0.4.0: the plateau study found its figure moving at 2 of 7 profiles.)"""
    from_current: bool = True
    """Run the pattern search from the current prices too, not only from the best global
    candidate (free where they are the same): on a revenue surface of sawtooth teeth the
    two climb different hills, and on ``tiny_market``'s Nash reference the one from the
    current prices found 1.3 points more NashConv."""
    shifts: bool = False
    """The pattern search also polls shifts between adjacent periods (one up, one down)."""
    random_directions: int = 2
    """Random directions the pattern search polls each pass, besides the fixed ones."""
    rounds: int = 2
    """Pattern searches one after another, each from the best point so far at
    ``period_step`` again; the last ends at ``resolution``, each earlier one at twice the
    resolution of the next."""
    restarts: int = 0
    """Further pattern searches from uniform-random prices (an independent check of the
    search's reach); the best of all answers is kept."""
    restart_step: float = 1 / 4
    """The first step of a restart's pattern search, as a share of the price range."""
    tolerance_z: float = 1.0
    """A move must gain more than this many standard errors of the paired difference
    (the UE's stationary standard errors of both revenues, over the search seeds)."""
    min_gain: float = 1e-4
    """... and more than this share of the current objective (for loops that meet their
    stop rule, whose standard error is 0)."""

    def __post_init__(self) -> None:
        _check(self)

    @property
    def cap(self) -> int:
        """The budget, or the method's default cap."""
        return DEFAULT_CAP[self.method] if self.budget is None else self.budget

    @property
    def moves(self) -> int | None:
        """The nearby single-period moves, or the method's default."""
        if self.period_moves is None and self.method == "converged":
            return CONVERGED_PERIOD_MOVES
        return self.period_moves

    def round_resolutions(self) -> list[float]:
        """The resolution each pattern-search round ends at (the last is ``resolution``)."""
        return [self.resolution * 2 ** (self.rounds - 1 - k) for k in range(self.rounds)]

    def describe(self) -> str:
        """One line: what the search tries."""
        if self.method == "budget":
            moves = self.moves
            near = "" if moves is None else f", bound and ±1..{moves} step single-period moves"
            return f"fixed budget of {self.cap} candidates: {self.grid} levels{near}, then DE"
        line = (
            f"converged search: bounds, {self.grid} levels, combined move, then pattern "
            f"searches from {_share(self.period_step)} to\n{_share(self.resolution)} of "
            "the range"
        )
        if self.rounds > 1:
            line += f" ({self.rounds} rounds)"
        if self.random_directions:
            line += f", {self.random_directions} random directions a poll"
        if self.restarts:
            line += f", {self.restarts} random restarts"
        return line

    def to_dict(self) -> dict[str, Any]:
        """The fields, with the method's defaults filled in (JSON-safe)."""
        return {**dataclasses.asdict(self), "budget": self.cap, "period_moves": self.moves}


def _share(x: float) -> str:
    """``1/12`` for a twelfth, else the number."""
    f = Fraction(x).limit_denominator(1000)
    if f.numerator == 1 and math.isclose(float(f), x, rel_tol=1e-9):
        return f"1/{f.denominator}"
    return f"{x:.3g}"


def _check(spec: SearchSpec) -> None:
    """Raise ValueError naming the first field out of range."""
    if spec.method not in METHODS:
        raise ValueError(f"`method` must be one of {list(METHODS)}, got {spec.method!r}")
    if spec.budget is not None and (isinstance(spec.budget, bool) or spec.budget < 1):
        raise ValueError(f"`budget` must be >= 1, got {spec.budget}")
    if spec.grid < 0:
        raise ValueError(f"`grid` must be >= 0, got {spec.grid}")
    moves = spec.period_moves
    if moves is not None and (isinstance(moves, bool) or not isinstance(moves, int) or moves < 0):
        raise ValueError(f"`period_moves` must be None or an int >= 0, got {moves!r}")
    for name in ("period_step", "resolution", "restart_step"):
        value = getattr(spec, name)
        if not 0 < value <= 1:
            raise ValueError(f"`{name}` must be in (0, 1], got {value}")
    if spec.resolution > spec.period_step:
        raise ValueError(
            f"`resolution` ({spec.resolution}) must not exceed `period_step` ({spec.period_step})"
        )
    for name in ("rounds",):
        if getattr(spec, name) < 1:
            raise ValueError(f"`{name}` must be >= 1, got {getattr(spec, name)}")
    for name in ("restarts", "random_directions"):
        if getattr(spec, name) < 0:
            raise ValueError(f"`{name}` must be >= 0, got {getattr(spec, name)}")
    if not spec.tolerance_z >= 0 or not spec.min_gain >= 0:
        raise ValueError(
            f"`tolerance_z` and `min_gain` must be >= 0, got {spec.tolerance_z}, {spec.min_gain}"
        )


_DEFAULT_0_4 = SearchSpec(resolution=1 / 96, rounds=1, random_directions=0)
"""evcs-gym 0.4.0's default converged search: one round down to 1/96, no random directions."""

SEARCHES: dict[str, SearchSpec] = {
    "converged": SearchSpec(),
    "converged+round": SearchSpec(resolution=1 / 384, rounds=3),
    "converged+restarts": SearchSpec(restarts=2),
    "converged-x2": SearchSpec(resolution=1 / 384, rounds=3, random_directions=4, budget=1200),
    "converged-x4": SearchSpec(resolution=1 / 768, rounds=4, random_directions=8, budget=2400),
    "converged-0.4": _DEFAULT_0_4,
    "restarts": dataclasses.replace(_DEFAULT_0_4, restarts=4),
    "budget": SearchSpec(method="budget", period_moves=2),
    "budget32": SearchSpec(method="budget", budget=32, period_moves=2),
    "budget96": SearchSpec(method="budget", budget=96, period_moves=2),
}
"""Named searches: the default; the default continued (``+round``: the same path, then a
third round to 1/384 of the range; ``+restarts``: the same path, then two pattern searches
from uniform-random prices), whose answers can only gain on the searched seeds; twice and
four times its effort on paths of their own (more random directions a poll, more rounds,
and a cap of 1,200 and 2,400 candidates a station: at 600, four times the effort hit the
cap unconverged on the Sioux Falls market), evcs-gym 0.4.0's default, four random
restarts on it (an independent check), and the fixed budgets of evcs-gym 0.3.0 (64
candidates, and the 32 and 96 its tables and checks used)."""


def resolve_search(search: SearchSpec | str = "converged", **overrides: Any) -> SearchSpec:
    """A :class:`SearchSpec` from a preset name or a spec, with the non-None overrides.

    Args:
        search: a name of :data:`SEARCHES` or a :class:`SearchSpec`.
        **overrides: fields to replace (``None`` values are ignored, so callers can pass
            their optional arguments through).

    Raises:
        ValueError: an unknown name or field, or a value out of range (named).
    """
    if isinstance(search, str):
        if search not in SEARCHES:
            raise ValueError(f"`search` must be one of {list(SEARCHES)}, got {search!r}")
        spec = SEARCHES[search]
    elif isinstance(search, SearchSpec):
        spec = search
    else:
        raise TypeError(f"`search` must be a name or a SearchSpec, got {type(search).__name__}")
    fields = {f.name for f in dataclasses.fields(SearchSpec)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown search setting(s) {unknown}; known: {sorted(fields)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(spec, **changes) if changes else spec
