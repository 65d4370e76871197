"""The seed rules (evcs_gym.seeds): what counts as a seed and as a list of seeds, checked
directly and where the evaluator takes them; every error names its argument."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.seeds import broadcast_seeds, check_seed, check_seeds
from tests.helpers import UNEVEN


@pytest.mark.parametrize(
    "seeds, match",
    [
        (0, "must be >= 1"),
        ([], "must not be empty"),
        ([1, 1], "distinct"),
        ([-1], "non-negative"),
        ([0.5], "non-negative integers"),
        ("ab", "sequence of ints"),
    ],
)
def test_bad_seeds_raise(seeds, match):
    with pytest.raises(ValueError, match=match):
        check_seeds(seeds)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_bad_seed(tiny, seed):
    with pytest.raises(ValueError, match="`seed` must be a non-negative integer"):
        evcs_gym.EVCSRewardEvaluator(tiny).evaluate(UNEVEN, seed=seed)


# ------------------------------------------------------------------ check_seed
@pytest.mark.parametrize("seed", [0, 3, 2**40, np.int64(7), np.uint8(2)])
def test_check_seed_accepts_python_and_numpy_integers(seed):
    out = check_seed(seed)
    assert out == int(seed) and type(out) is int


@pytest.mark.parametrize("seed", [-1, 1.0, 1.5, "0", True, np.bool_(False), None, [1]])
@pytest.mark.parametrize("name", ["seed", "eval_seed"])
def test_check_seed_refuses_anything_else_naming_the_argument(seed, name):
    with pytest.raises(ValueError, match=rf"^`{name}` must be a non-negative integer or None"):
        check_seed(seed, name)


# ------------------------------------------------------------------ check_seeds
@pytest.mark.parametrize(
    ("seeds", "start", "expected"),
    [
        (3, 0, [0, 1, 2]),
        (2, 10, [10, 11]),
        (np.int32(1), 4, [4]),
        ([5, 7], 0, [5, 7]),
        ((9, np.int64(2)), 100, [9, 2]),  # a sequence ignores `start`
        (range(3, 5), 0, [3, 4]),
    ],
)
def test_check_seeds_counts_from_start_or_keeps_a_sequence(seeds, start, expected):
    out = check_seeds(seeds, start=start)
    assert out == expected and all(type(s) is int for s in out)


@pytest.mark.parametrize(
    ("seeds", "match"),
    [
        (0, r"as a count must be >= 1, got 0"),
        (-2, r"as a count must be >= 1, got -2"),
        (True, r"must be an int or a sequence of ints, got True"),
        (1.5, r"must be an int or a sequence of ints, got 1.5"),
        ("01", r"must be an int or a sequence of ints, got '01'"),
        ([], r"must not be empty"),
        ([1, 1], r"must be distinct, got \[1, 1\]"),
        ([0, -1], r"must hold non-negative integers, got -1 in \[0, -1\]"),
        ([0, 1.0], r"must hold non-negative integers, got 1.0"),
        ([False], r"must hold non-negative integers, got False"),
    ],
)
def test_check_seeds_refuses_naming_the_argument(seeds, match):
    with pytest.raises(ValueError, match="^`search_seeds` " + match):
        check_seeds(seeds, name="search_seeds")


# ------------------------------------------------------------------ broadcast_seeds
@pytest.mark.parametrize(
    ("seeds", "expected"),
    [
        (None, [None, None, None]),
        (4, [4, 4, 4]),
        (np.int64(4), [4, 4, 4]),
        ([1, 2, 3], [1, 2, 3]),
        ([-1, "x", None], [-1, "x", None]),  # entries are checked where each is used
    ],
)
def test_broadcast_seeds_gives_one_seed_per_item(seeds, expected):
    assert broadcast_seeds(seeds, 3) == expected


@pytest.mark.parametrize(
    ("seeds", "match"),
    [
        ([1, 2], r"^`seeds` has 2 entries for 3 price profiles"),
        ("123", r"^`seeds` must be None, an integer or a sequence of seeds, got '123'"),
        (2.0, r"^`seeds` must be None, an integer or a sequence of seeds, got 2.0"),
        (-1, r"^`seed` must be a non-negative integer or None, got -1"),
    ],
)
def test_broadcast_seeds_refuses_naming_the_argument(seeds, match):
    with pytest.raises(ValueError, match=match):
        broadcast_seeds(seeds, 3)
