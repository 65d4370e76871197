"""The converged search's local half (evcs_gym.equilibrium.pattern_search) and its station
search (evcs_gym.equilibrium.station_search), driven by objectives computed by hand: it
reaches a known optimum within its resolution, says when its cap stopped it, does not
chase noise that the search seeds show, and the continued presets replay the default's
path before they go on."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import pytest

from evcs_gym.equilibrium.candidate_memo import CandidateMemo, Score
from evcs_gym.equilibrium.pattern_search import Tolerance, pattern_search
from evcs_gym.equilibrium.search_spec import resolve_search
from evcs_gym.equilibrium.station_search import station_search

TARGET = np.array([0.30, 0.71, 0.55, 0.93])


def concave(x: np.ndarray) -> float:
    """A separable concave objective on [0, 1]^4 with its maximum at TARGET."""
    return float(100 - 50 * np.sum((x - TARGET) ** 2))


def drive(search: Generator[np.ndarray, list[Score], Any], score: Callable[[np.ndarray], Score]):
    """Answer every batch the search yields with ``score``; return what it returns."""
    batch = next(search)
    while True:
        try:
            batch = search.send([score(x) for x in batch])
        except StopIteration as stop:
            return stop.value


def exact(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], Score]:
    return lambda x: Score(f(x), 0.0, np.ones(len(x)), np.array([f(x)]))


def test_the_pattern_search_converges_to_the_optimum_within_its_resolution():
    memo = CandidateMemo(0.0, 1.0, cap=1000)
    start = np.full(4, 0.5)
    out = drive(
        pattern_search(
            memo,
            start,
            exact(concave)(start),
            np.ones(4, dtype=bool),
            step=1 / 12,
            resolution=1 / 96,
            tolerance=Tolerance(z=1.0, min_gain=0.0),
        ),
        exact(concave),
    )
    assert out.converged and out.moves >= 3
    assert np.abs(out.prices - TARGET).max() <= 1 / 96 + 1e-12
    assert out.score.value == concave(out.prices)


def test_the_cap_stops_the_search_and_says_so():
    memo = CandidateMemo(0.0, 1.0, cap=12)
    start = np.full(4, 0.5)
    memo_start = exact(concave)(start)
    out = drive(
        pattern_search(
            memo,
            start,
            memo_start,
            np.ones(4, dtype=bool),
            step=1 / 12,
            resolution=1 / 96,
            tolerance=Tolerance(),
        ),
        exact(concave),
    )
    assert not out.converged and memo.used <= 12


def test_dead_periods_are_left_alone():
    memo = CandidateMemo(0.0, 1.0, cap=1000)
    start = np.full(4, 0.5)
    live = np.array([True, False, True, False])
    out = drive(
        pattern_search(
            memo,
            start,
            exact(concave)(start),
            live,
            step=1 / 12,
            resolution=1 / 96,
            tolerance=Tolerance(),
        ),
        exact(concave),
    )
    assert out.converged and out.prices[1] == 0.5 and out.prices[3] == 0.5
    assert abs(out.prices[0] - TARGET[0]) <= 1 / 96 + 1e-12


@pytest.mark.parametrize("noise, moves", [(3.0, False), (0.0, True)])
def test_noise_is_not_chased(noise, moves):
    """Small gains (a poll's at most 0.3): where every evaluation's standard error is 3
    (a UE orbiting instead of settling), no gain beats the noise and no move is made;
    where the loops settle (standard error 0), the same gains are taken."""

    def seen(x: np.ndarray) -> Score:
        v = 50.0 + 0.5 * float(np.sin(7 * x).sum())
        return Score(v, noise, np.ones(len(x)), np.array([v]))

    memo = CandidateMemo(0.0, 1.0, cap=1000)
    start = np.full(4, 0.5)
    out = drive(
        pattern_search(
            memo,
            start,
            seen(start),
            np.ones(4, dtype=bool),
            step=1 / 12,
            resolution=1 / 96,
            tolerance=Tolerance(z=1.0, min_gain=0.0),
        ),
        seen,
    )
    assert out.converged and (out.moves > 0) == moves
    if not moves:
        assert out.passes == 4 and out.tolerance == pytest.approx(3 * np.sqrt(2))


def test_the_station_search_reaches_far_with_its_global_candidates():
    """The optimum lies at the lower bound in every period: the uniform levels reach it in
    one step, and the pattern search confirms it."""
    spec = resolve_search("converged", grid=5)

    def at_floor(x: np.ndarray) -> float:
        return float(-np.sum(x))

    out = drive(
        station_search(np.full(4, 0.8), 0.0, 1.0, spec, rng=np.random.default_rng(0)),
        exact(at_floor),
    )
    assert out.converged and out.prices.tolist() == [0.0] * 4
    # the current prices, 8 bound moves, 5 levels; the combined move is the level 0.0
    assert out.stats["global_candidates"] == 1 + 8 + 5
    assert out.stats["live_periods"] == 4


def test_a_period_that_charges_nobody_at_the_floor_is_dead():
    spec = resolve_search("converged")
    flows = np.array([1.0, 0.0, 1.0, 1.0])  # nobody charges in period 1 at any price

    def score(x: np.ndarray) -> Score:
        v = concave(x) - 100 * abs(x[1] - 0.5)  # ... though a price there would "matter"
        return Score(v, 0.0, flows, np.array([v]))

    out = drive(
        station_search(np.full(4, 0.5), 0.0, 1.0, spec, rng=np.random.default_rng(0)), score
    )
    assert out.stats["live_periods"] == 3 and out.prices[1] == 0.5


def test_restarts_are_deterministic_for_a_generator_and_find_the_better_peak():
    """Two peaks: the start climbs the near, lower one; random restarts find the other."""

    def two_peaks(x: np.ndarray) -> float:
        near = 10 - 40 * np.sum((x - 0.45) ** 2)
        far = 12 - 40 * np.sum((x - 0.9) ** 2)
        return float(max(near, far))

    plain = drive(
        station_search(np.full(2, 0.5), 0.0, 1.0, resolve_search("converged", grid=0),
                       rng=np.random.default_rng(1)),
        exact(two_peaks),
    )  # fmt: skip
    outs = [
        drive(
            station_search(
                np.full(2, 0.5),
                0.0,
                1.0,
                resolve_search("restarts", grid=0),
                rng=np.random.default_rng(1),
            ),
            exact(two_peaks),
        )  # fmt: skip
        for _ in range(2)
    ]
    assert plain.score.value < 11 < outs[0].score.value
    assert outs[0].prices.tolist() == outs[1].prices.tolist()
    assert outs[0].stats["pattern_searches"] == 2 + 4  # the best candidate, the current, 4


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "exact"}, r"`method` must be one of \['converged', 'budget'\]"),
        ({"resolution": 0.0}, r"`resolution` must be in \(0, 1\], got 0.0"),
        ({"resolution": 0.5}, r"`resolution` \(0.5\) must not exceed `period_step`"),
        ({"rounds": 0}, "`rounds` must be >= 1, got 0"),
        ({"budget": 0}, "`budget` must be >= 1, got 0"),
        ({"restarts": -1}, "`restarts` must be >= 0, got -1"),
    ],
)
def test_bad_search_settings_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        resolve_search("converged", **kwargs)


def test_unknown_presets_and_settings_are_named():
    with pytest.raises(ValueError, match="`search` must be one of .*got 'exact'"):
        resolve_search("exact")
    with pytest.raises(ValueError, match=r"unknown search setting\(s\) \['steps'\]"):
        resolve_search("converged", steps=3)


@pytest.mark.parametrize("name", ["converged+round", "converged+restarts"])
def test_the_continued_presets_replay_the_defaults_path_then_only_add(name):
    """``converged+round`` and ``converged+restarts`` ask the default's candidates first,
    in its order (the same random directions), so they never end below its answer."""

    def sawtooth(x: np.ndarray) -> float:  # teeth on a concave envelope, as the market's
        return concave(x) - float(np.sum(np.mod(7 * x, 0.35)))

    def run(search: str) -> tuple[Any, list[list[float]]]:
        asked: list[list[float]] = []

        def score(x: np.ndarray) -> Score:
            asked.append(x.tolist())
            return exact(sawtooth)(x)

        spec = resolve_search(search)
        out = drive(
            station_search(np.full(4, 0.5), 0.0, 1.0, spec, rng=np.random.default_rng(3)), score
        )
        return out, asked

    default, default_asked = run("converged")
    more, more_asked = run(name)
    assert more_asked[: len(default_asked)] == default_asked
    assert len(more_asked) > len(default_asked)
    assert more.score.value >= default.score.value
