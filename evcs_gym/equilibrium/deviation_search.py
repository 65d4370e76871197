"""Deviation search: one station's best unilateral deviation, found in the simulator.

:func:`best_response` searches one station's best unilateral deviation — all
``n_periods`` prices, the others held fixed — *in the simulator*, with common random
numbers (every evaluation uses the same seed, or the same few seeds whose mean reward is
the objective). It tries, in this order of priority:

1. the current prices;
2. *single-period bound moves*: the current prices with one period set to the lower or
   the upper price bound;
3. ``grid`` uniform price levels across the station's bounds (and optional ``starts``,
   e.g. a solver's previous best response);
4. *nearby single-period moves*: one period moved by ``±k·step`` for ``k = 1 ..
   period_moves``, ``step = period_step · (high − low)`` (default a twelfth of the
   range, :data:`PERIOD_STEP`), clipped to the bounds;
5. the *combined move*: every period that has an improving single-period move set to
   its best one, all at once — cheap, and often the joint deviation;
6. SciPy's differential evolution (``scipy.optimize.differential_evolution``, seeded,
   vectorised so each generation is one batch for the evaluator pool), started from the
   best points so far, with whatever budget remains (restarted from the best point and
   random points if it stops early on a plateau of equal rewards).

``budget`` is a hard cap on the distinct price vectors tried per station (so on the
simulator runs a search causes); when it is smaller than the candidates of steps 1-5
they are cut in that order. The best profile found is a lower bound on the true best
response. :func:`evcs_gym.equilibrium.exploitability.exploitability` runs this search for
every station of a profile and re-evaluates the deviations found on further seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from scipy.optimize import differential_evolution

from evcs_gym.equilibrium.candidates import single_period_moves
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.search_spec import PERIOD_STEP

__all__ = [
    "OBJECTIVES",
    "PERIOD_STEP",
    "Objective",
    "best_response",
    "check_objective",
    "check_search",
]

Objective = Literal["own", "total"]
"""What a station's search maximises: its own reward (``"own"``: a best response, whose
fixed points are Nash equilibria) or every station's together (``"total"``: coordinate
ascent on the joint reward, whose fixed points are the collusive reference)."""
OBJECTIVES: tuple[Objective, ...] = ("own", "total")


class _Search:
    """The candidates one station's search has tried, and the budget they used.

    Price vectors are clipped to the bounds and identified after rounding to 1e-9 (the
    optimiser's rescaling does not reproduce them bit for bit); a vector tried before
    is looked up, not re-evaluated, and costs no budget.
    """

    def __init__(
        self,
        evaluator: BatchEvaluator,
        profile: np.ndarray,
        agent: int,
        seed: int | Sequence[int],
        bounds: tuple[float, float],
        budget: int,
        objective: Objective = "own",
    ) -> None:
        self.evaluator = evaluator
        self.objective = objective
        self.profile = np.asarray(profile, dtype=float)
        self.agent = agent
        self.seed = seed
        self.low, self.high = bounds
        self.budget = budget
        self.values: dict[bytes, float] = {}
        self.points: list[tuple[float, np.ndarray]] = []  # (reward, prices), in order tried

    @property
    def used(self) -> int:
        return len(self.points)

    @property
    def left(self) -> int:
        return self.budget - self.used

    @staticmethod
    def key(x: np.ndarray) -> bytes:
        return (np.round(x, 9) + 0.0).tobytes()  # + 0.0: -0.0 and 0.0 share a key

    def rewards(self, candidates: np.ndarray) -> np.ndarray:
        """The objective (the station's reward, or with ``objective="total"`` every
        station's) of each candidate; ``-inf`` for those past the budget."""
        xs = np.clip(np.atleast_2d(np.asarray(candidates, dtype=float)), self.low, self.high)
        out = np.full(len(xs), -np.inf)
        new: dict[bytes, list[int]] = {}
        for j, x in enumerate(xs):
            k = self.key(x)
            if k in self.values:
                out[j] = self.values[k]
            elif k in new:
                new[k].append(j)
            elif len(new) < self.left:
                new[k] = [j]
        if new:
            profiles = []
            for rows in new.values():
                p = self.profile.copy()
                p[self.agent] = xs[rows[0]]
                profiles.append(p)
            rewards = self.evaluator.rewards(profiles, self.seed)
            values = rewards[:, self.agent] if self.objective == "own" else rewards.sum(axis=1)
            for (k, rows), v in zip(new.items(), values):
                self.values[k] = float(v)
                self.points.append((float(v), xs[rows[0]].copy()))
                out[rows] = v
        return out

    def tried(self, candidates: Sequence[np.ndarray]) -> int:
        """How many distinct candidates have been tried (evaluated or looked up)."""
        keys = {self.key(np.clip(x, self.low, self.high)) for x in candidates}
        return sum(k in self.values for k in keys)


def check_objective(objective: object) -> Objective:
    """``objective`` if it is one of :data:`OBJECTIVES`.

    Raises:
        ValueError: any other value, named.
    """
    if objective == "own" or objective == "total":
        return objective
    raise ValueError(f"`objective` must be one of {list(OBJECTIVES)}, got {objective!r}")


def check_search(
    budget: int, grid: int, period_moves: int | None, period_step: float, objective: object
) -> Objective:
    """Check a search's arguments (shared with the exploitability); the objective.

    Raises:
        ValueError: the first argument out of range, named with its value.
    """
    if budget < 1:
        raise ValueError(f"`budget` must be >= 1, got {budget}")
    if grid < 0:
        raise ValueError(f"`grid` must be >= 0, got {grid}")
    if period_moves is not None and (
        isinstance(period_moves, bool) or not isinstance(period_moves, int) or period_moves < 0
    ):
        raise ValueError(f"`period_moves` must be None or an int >= 0, got {period_moves!r}")
    if not 0 < period_step <= 1:
        raise ValueError(f"`period_step` must be in (0, 1], got {period_step}")
    return check_objective(objective)


def best_response(
    evaluator: BatchEvaluator,
    profile: np.ndarray,
    agent: int,
    *,
    seed: int | Sequence[int],
    budget: int,
    grid: int,
    rng: np.random.Generator,
    starts: np.ndarray | None = None,
    period_moves: int | None = 2,
    period_step: float = PERIOD_STEP,
    stats: dict[str, Any] | None = None,
    objective: Objective = "own",
) -> tuple[np.ndarray, float, float, int]:
    """Best deviation of one station: ``(prices, best_reward, current_reward, evaluations)``.

    All evaluations use ``seed`` (common random numbers); ``rng`` drives the differential
    evolution, so the result is deterministic for given arguments. Candidates, in order
    of priority (``budget`` is a hard cap on distinct candidates, so cuts the list):
    the current prices; each period moved alone to the lower and the upper bound; ``grid``
    uniform levels; ``starts``; each period moved alone by ``±k · period_step · (high -
    low)`` for ``k = 1 .. period_moves``; the combination of each period's best improving
    single-period move; then differential evolution (population ``max(5, n_periods)``,
    started from the best points) for as many whole generations as the budget allows,
    restarted from the best point and random points whenever it stops early because its
    population's rewards are all equal.

    Args:
        evaluator: the batch evaluator (its cache makes repeated profiles free).
        profile: ``(n_agents, n_periods)`` prices; only row ``agent`` is varied.
        agent: index of the deviating station.
        seed: evaluation seed of every candidate, or several seeds whose mean reward is
            the objective (common random numbers per seed).
        budget: at most this many distinct price vectors are tried (the current one
            included); the simulator runs at most that many times.
        grid: uniform price levels tried.
        rng: random generator of the differential evolution.
        starts: ``(k, n_periods)`` extra candidates, e.g. a previous best response.
        period_moves: nearby steps per side of the single-period moves (``0``: bound
            moves only; ``None``: no single-period moves and no combined move).
        period_step: the nearby step as a fraction of the station's price range.
        objective: ``"own"`` (default): the station's own reward; ``"total"``: the sum of
            every station's reward (the station's prices chosen for the joint revenue).
        stats: if given, filled with what was tried: ``candidates`` (distinct vectors,
            <= budget), ``grid``, ``starts``, ``period_moves`` (single-period moves),
            ``combined`` (whether the combined move was tried), ``de_population``,
            ``de_generations`` (over all runs), ``de_restarts``, ``de_candidates``.

    Returns:
        the best prices found (clipped to the bounds), their reward, the reward at the
        current prices and the simulator runs this search caused (rewards in the sense of
        ``objective``).

    Example:
        >>> import evcs_gym
        >>> be = BatchEvaluator(evcs_gym.load_scenario("tiny"))
        >>> info = {}
        >>> x, best, current, n = best_response(
        ...     be, be.network_prices(2.0), 0, seed=0, budget=10, grid=3,
        ...     rng=np.random.default_rng(0), stats=info)
        >>> best >= current, n, info["candidates"], info["period_moves"]
        (True, 10, 10, 7)
    """
    objective = check_search(budget, grid, period_moves, period_step, objective)
    nd = evaluator.network
    low, high = (float(v) for v in nd.price_bounds[nd.agent_names[agent]])
    start_evals = evaluator.evaluations
    search = _Search(evaluator, profile, agent, seed, (low, high), budget, objective)
    x0 = np.clip(np.asarray(profile[agent], dtype=float), low, high)
    moves = _global_candidates(x0, low, high, grid, starts, period_moves, period_step)
    bound_moves, near_moves, grid_points, start_points = moves
    single = bound_moves + near_moves
    ordered = (
        [x0] + [x for _, x in bound_moves] + grid_points + start_points + [x for _, x in near_moves]
    )
    current = float(search.rewards(x0[None, :])[0])
    search.rewards(np.array(ordered))
    combined = _try_combined_move(search, x0, single, current)
    de_start = search.used
    generations, restarts = _differential_evolution(search, rng, low, high, nd.n_periods)
    if stats is not None:
        stats.update(
            candidates=search.used,
            grid=search.tried(grid_points),
            starts=search.tried(start_points),
            period_moves=search.tried([x for _, x in single]),
            combined=combined,
            de_population=max(5, nd.n_periods) if generations else 0,
            de_generations=generations,
            de_restarts=restarts,
            de_candidates=search.used - de_start,
        )
    best_value, best_x = max(search.points, key=lambda t: t[0])
    return best_x, best_value, current, evaluator.evaluations - start_evals


_Moves = list[tuple[int, np.ndarray]]


def _global_candidates(
    x0: np.ndarray,
    low: float,
    high: float,
    grid: int,
    starts: np.ndarray | None,
    period_moves: int | None,
    period_step: float,
) -> tuple[_Moves, _Moves, list[np.ndarray], list[np.ndarray]]:
    """The budget search's candidates before its differential evolution: each period
    alone at each bound, each period moved by ``±k · period_step`` of the range, the
    uniform levels and the given starts."""
    n = len(x0)
    bound_moves: _Moves = []
    near_moves: _Moves = []
    if period_moves is not None:
        # clipped: each period alone at the lower and the upper bound
        bound_moves = single_period_moves(x0, [-math.inf, math.inf], low, high)
        step = period_step * (high - low)
        for k in range(1, period_moves + 1):
            near_moves += single_period_moves(x0, [-k * step, k * step], low, high)
    levels = np.linspace(low, high, grid) if grid > 0 else np.zeros(0)
    grid_points = list(np.repeat(levels[:, None], n, axis=1))
    start_points: list[np.ndarray] = []
    if starts is not None:
        start_array = np.atleast_2d(np.asarray(starts, dtype=float))
        if start_array.size and start_array.shape[1:] != (n,):
            raise ValueError(
                f"`starts` must have shape (k, {n}) (n_periods), got {start_array.shape}"
            )
        start_points = list(start_array.reshape(-1, n))
    return bound_moves, near_moves, grid_points, start_points


def _try_combined_move(search: _Search, x0: np.ndarray, single: _Moves, current: float) -> bool:
    """Try every period's best improving single-period move at once; whether it was tried."""
    if not single or search.left <= 0:
        return False
    best_move: dict[int, tuple[float, float]] = {}
    for p, x in single:
        v = search.values.get(search.key(x))
        if v is not None and v > current and v > best_move.get(p, (-math.inf, 0.0))[0]:
            best_move[p] = (v, float(x[p]))
    if len(best_move) < 2:  # with one period it is that single move
        return False
    x = x0.copy()
    for p, (_, value) in best_move.items():
        x[p] = value
    return bool(np.isfinite(search.rewards(x[None, :])[0]))


def _differential_evolution(
    search: _Search, rng: np.random.Generator, low: float, high: float, n: int
) -> tuple[int, int]:
    """Differential evolution from the best points so far, for as many whole generations
    as the budget allows; ``(generations, restarts)``. When it stops early (all its
    energies equal, common on plateaus of the discrete revenue) and budget is left, it
    restarts from the best point plus random points."""
    pop = max(5, n)
    generations = restarts = 0
    while high > low and search.left >= pop:
        ranked = sorted(search.points, key=lambda t: -t[0])  # stable: ties in order tried
        keep = pop if generations == 0 and restarts == 0 else 1
        init = np.array([x for _, x in ranked[:keep]])
        init = np.vstack([init, rng.uniform(low, high, size=(pop - len(init), n))])
        maxiter = (search.left - (pop - len(ranked[:keep]))) // pop
        if maxiter < 1:
            break
        used_before = search.used
        res = differential_evolution(
            lambda xs: -search.rewards(np.atleast_2d(xs.T)),  # xs: (n, S) vectorised
            bounds=[(low, high)] * n,
            init=init,
            maxiter=maxiter,
            polish=False,
            tol=0.0,
            atol=0.0,
            updating="deferred",
            vectorized=True,
            rng=rng,
        )
        generations += int(res.nit)
        if res.nit >= maxiter or search.used == used_before:
            break
        restarts += 1
    return generations, restarts
