"""PayoffTable (evcs_gym.tabular.table): the grid game solved by hand on small games,
lazy filling, validation."""

from __future__ import annotations

import numpy as np
import pytest

from evcs_gym.tabular import PayoffTable, PriceGrid

TWO = PriceGrid(("A", "B"), np.array([[[1.0], [2.0]], [[1.0], [2.0]]]))
DILEMMA = np.array([[1.0, 1.0], [3.0, 0.0], [0.0, 3.0], [2.0, 2.0]])
"""A prisoner's dilemma: (low, low) its Nash equilibrium, (high, high) its joint optimum."""


def dilemma(**kwargs) -> PayoffTable:
    refs = {"nash": [1.0, 1.0], "collusive": [2.0, 2.0]}
    return PayoffTable(TWO, DILEMMA, reference_rewards=refs, **kwargs)


def test_the_dilemma_solved_by_hand():
    table = dilemma()
    assert table.pure_nash() == [(0, 0)]
    assert table.joint_optimum() == (1, 1)
    # at (high, high) each gains 3 - 2 = 1 by cutting: NashConv (1 + 1) / 4
    assert table.gains([1, 1]).tolist() == [1.0, 1.0] and table.nash_conv([1, 1]) == 0.5
    assert table.gains([0, 0]).tolist() == [0.0, 0.0]
    assert table.best_response(0, [1, 1]) == 0 and table.best_response(1, [0, 1]) == 0
    assert table.delta(table.total([1, 1])) == 1.0 and table.delta(2.0) == 0.0
    assert table.best_response_dynamics([1, 1]).tolist() == [[1, 1], [0, 0], [0, 0]]


def test_matching_pennies_has_no_pure_equilibrium_and_a_tolerance_admits_near_ones():
    pennies = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]) + 10.0
    table = PayoffTable(TWO, pennies)
    assert table.pure_nash() == []
    assert len(table.pure_nash(tol=1 / 21)) == 4  # a gain of 1 on a total of 21
    assert np.isnan(table.delta(20.0)) and np.isnan(table.nash_total)


def test_three_stations():
    grid = PriceGrid(("A", "B", "C"), np.zeros((3, 2, 1)))
    levels = grid.levels(np.arange(8))
    rewards = 1.0 + levels * 1.0  # each station earns more at its high level: (1,1,1) dominant
    table = PayoffTable(grid, rewards)
    assert table.pure_nash() == [(1, 1, 1)] and table.joint_optimum() == (1, 1, 1)
    assert table.unilateral(2, [0, 1, 0]).tolist() == [1.0, 2.0]


def test_lazy_rows_are_filled_once_by_the_filler():
    calls = []

    def filler(table, indices):
        calls.append(sorted(indices.tolist()))
        for i in indices:
            table.store(int(i), DILEMMA[i])

    table = dilemma(filler=filler)
    table.rewards[:] = np.nan
    assert table.nash_conv([1, 1]) == 0.5  # reads (1,1), (0,1) and (1,0)
    assert calls == [[3], [1], [2]]  # the profile, then each station's deviation
    assert table.filled.tolist() == [False, True, True, True]
    assert table.fill() == 1 and table.complete and table.fill() == 0


def test_missing_rows_without_a_filler_raise():
    table = dilemma()
    table.rewards[0] = np.nan
    with pytest.raises(RuntimeError, match="not evaluated and it has no filler"):
        table.lookup(0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rewards": np.zeros((3, 2))}, r"shape \(m\^n=4, n=2\)"),
        ({"flows": np.zeros((4, 2))}, r"`flows` must have shape \(4, 2, 1\)"),
        ({"reference_rewards": {"nash": [1.0, 1.0]}}, "'nash' and 'collusive'"),
        ({"reference_rewards": {"nash": [1.0], "collusive": [1.0]}}, "must hold 2 rewards"),
        ({"reward_scale": 0.0}, "`reward_scale` must be positive"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {"rewards": DILEMMA, **kwargs}
    with pytest.raises(ValueError, match=match):
        PayoffTable(TWO, args.pop("rewards"), **args)
