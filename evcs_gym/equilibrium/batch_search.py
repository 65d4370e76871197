"""Run every station's deviation search at once, one pool call per round of candidates.

Each station's converged search (:func:`~evcs_gym.equilibrium.station_search.station_search`)
is a generator that yields the price vectors it wants scored next. :func:`search_stations`
collects what every unfinished station asks for, evaluates the lot as one batch on the
search seeds (so every worker of a pool is busy even when one station asks for two
candidates), and hands each station its scores, until every search has returned.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.equilibrium.evaluation import BatchEvaluator
    >>> from evcs_gym.equilibrium.search_spec import resolve_search
    >>> be = BatchEvaluator(evcs_gym.load_scenario("tiny"))
    >>> spec = resolve_search(resolution=1 / 24, rounds=1)  # the default, coarser
    >>> out = search_stations(be, be.network_prices(2.0), ["A", "B"], spec,
    ...                       seeds=[0], base_seed=0)
    >>> [out[a].score.value > out[a].current.value for a in ("A", "B")]
    [True, True]
    >>> out["A"].converged, out["A"].stats["resolution"] > 0
    (True, True)
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from typing import Any

import numpy as np

from evcs_gym.equilibrium.candidate_memo import Score
from evcs_gym.equilibrium.deviation_search import Objective
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.search_spec import SearchSpec
from evcs_gym.equilibrium.station_search import StationOutcome, station_search
from evcs_gym.ue.result import EvalResult

__all__ = ["score_results", "search_stations"]

SEARCH_STREAM = 0x5EA2C4
"""Mixed into each station's random stream (its restarts), with the seed and its index."""

Search = Generator[np.ndarray, list[Score], StationOutcome]


def score_results(results: Sequence[EvalResult], agent: str, objective: Objective) -> Score:
    """A candidate's :class:`Score` from its results on the search seeds.

    The value is the mean objective (the station's reward, or every station's total),
    the noise the standard error of that mean from the UE's stationary standard errors
    (0 where every loop met its stop rule), the flows the station's mean flows.
    """
    if objective == "own":
        values = [r.rewards[agent] for r in results]
        ses = [r.ue_stats["reward_se"][agent] for r in results]
    else:
        values = [r.total_reward for r in results]
        ses = [math.sqrt(sum(v**2 for v in r.ue_stats["reward_se"].values())) for r in results]
    n = len(results)
    return Score(
        value=float(np.mean(values)),
        noise=math.sqrt(sum(s**2 for s in ses)) / n,
        flows=np.mean([r.flows[agent] for r in results], axis=0),
        values=np.asarray(values, dtype=float),
    )


def search_stations(
    searcher: BatchEvaluator,
    profile: np.ndarray,
    stations: Sequence[str],
    spec: SearchSpec,
    *,
    seeds: Sequence[int],
    base_seed: int,
    objective: Objective = "own",
    starts: Mapping[str, Any] | None = None,
) -> dict[str, StationOutcome]:
    """Every station's converged search against ``profile``, batched across stations.

    Args:
        searcher: scores the candidates (its cache spares what was evaluated before).
        profile: ``(n_agents, n_periods)`` prices; each station varies only its own row.
        stations: the stations to search.
        spec: the search (``method="converged"``).
        seeds: the search seeds; a candidate's value is its mean objective over them.
        base_seed: seeds each station's random stream (with its index).
        objective: ``"own"`` or ``"total"``.
        starts: ``{station: (k, n_periods) prices}`` extra global candidates.

    Returns:
        ``{station: StationOutcome}``.
    """
    nd = searcher.network
    index = {a: nd.agent_names.index(a) for a in stations}
    searches: dict[str, Search] = {}
    for a, i in index.items():
        low, high = (float(v) for v in nd.price_bounds[a])
        rng = np.random.default_rng(np.random.SeedSequence([base_seed, i, SEARCH_STREAM]))
        extra = None if starts is None or a not in starts else np.asarray(starts[a], float)
        searches[a] = station_search(profile[i], low, high, spec, rng=rng, starts=extra)
    outcomes: dict[str, StationOutcome] = {}
    requests = {a: _advance(g, None, a, outcomes) for a, g in searches.items()}
    pending = {a: r for a, r in requests.items() if r is not None}
    while pending:
        flat = [(a, x) for a, xs in pending.items() for x in xs]
        profiles = []
        for a, x in flat:
            p = profile.copy()
            p[index[a]] = x
            profiles.append(p)
        results = searcher.results(profiles, seeds)
        replies: dict[str, list[Score]] = {a: [] for a in pending}
        for (a, _), res in zip(flat, results):
            replies[a].append(score_results(res, a, objective))
        nxt = {a: _advance(searches[a], replies[a], a, outcomes) for a in pending}
        pending = {a: r for a, r in nxt.items() if r is not None}
    return {a: outcomes[a] for a in stations}


def _advance(
    search: Search, reply: list[Score] | None, station: str, outcomes: dict[str, StationOutcome]
) -> np.ndarray | None:
    """The search's next request, or None once it has returned (its outcome stored)."""
    try:
        return next(search) if reply is None else search.send(reply)
    except StopIteration as stop:
        outcomes[station] = stop.value
        return None
