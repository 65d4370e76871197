"""The switching rule of the UE loop (evcs_gym.ue.switching): who moves to which route between
iterations. Hand-made cost tables, no simulation: the rule moves only completed platoons
that have a cheaper (smoothed) route, the worst first and no more than its budget, each
class within its own budget; unfinished trips move to their cheapest route."""

from __future__ import annotations

import numpy as np
import pytest

from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.ue.switching import SwitchInput, TargetedSwitching, make_switching_rule

SURE = {"ue_switch_sensitivity": 1000.0, "ue_switch_charging_sensitivity": 1000.0}
"""Sensitivities so high that every eligible platoon with a gap above the floor moves."""


def _rule(**settings) -> TargetedSwitching:
    return TargetedSwitching(ScenarioSettings(**settings))


def _costs(gaps) -> np.ndarray:
    """Two routes per platoon: the current one (slot 0) at 100, slot 1 cheaper by ``gap``."""
    gaps = np.asarray(gaps, dtype=float)
    return np.c_[np.full(len(gaps), 100.0), 100.0 * (1 - gaps)]


def _input(cost, *, iteration=0, slot=None, completed=None, charging=None) -> SwitchInput:
    n = len(cost)
    return SwitchInput(
        iteration,
        np.asarray(cost, dtype=float),
        np.zeros(n, dtype=int) if slot is None else np.asarray(slot),
        np.ones(n, dtype=bool) if completed is None else np.asarray(completed),
        None if charging is None else np.asarray(charging),
    )


@pytest.mark.parametrize("budget_min", [1, 2, 4])
def test_only_the_largest_gaps_within_the_budget_move(budget_min):
    """Six platoons with gaps of 50 % down to 0: with a budget of ``budget_min`` movers
    exactly the worst ``budget_min`` switch, however sure each of them is."""
    rule = _rule(ue_switch_budget_min=budget_min, ue_switch_budget=0.01, **SURE)
    cost = _costs([0.1, 0.5, 0.0, 0.3, 0.4, 0.2])
    moved = rule(_input(cost), np.random.default_rng(0))
    worst_first = [1, 4, 3, 5, 0]
    expected = np.zeros(6, dtype=int)
    expected[worst_first[:budget_min]] = 1
    assert moved.tolist() == expected.tolist()


def test_the_budget_is_a_share_of_the_platoons():
    """``ceil(ue_switch_budget · n)`` movers when that exceeds ``ue_switch_budget_min``."""
    n = 200
    rule = _rule(ue_switch_budget=0.1, ue_switch_budget_min=1, **SURE)
    gaps = np.linspace(0.5, 0.01, n)  # platoon i is the i-th worst
    moved = rule(_input(_costs(gaps)), np.random.default_rng(0))
    assert np.flatnonzero(moved).tolist() == list(range(20))


def test_no_cheaper_route_no_move():
    """A platoon already on its cheapest route, or below a tenth of the UE threshold,
    stays; a route slot without a route (+inf) is never a target."""
    rule = _rule(ue_switch_budget_min=10, ue_convergence_threshold=0.01, **SURE)
    cost = np.array(
        [
            [100.0, 120.0, np.inf],  # already on its best route
            [100.0, 99.95, np.inf],  # 0.05 % cheaper: below the floor of 0.1 %
            [100.0, 99.8, np.inf],  # 0.2 %: moves
            [100.0, np.inf, 90.0],  # its cheaper route is in slot 2
        ]
    )
    moved = rule(_input(cost), np.random.default_rng(0))
    assert moved.tolist() == [0, 0, 1, 2]


def test_charging_platoons_have_a_budget_of_their_own():
    """Ranked together the four non-charging platoons' large gaps would take the whole
    budget; ranked apart, the worst charging platoon moves too."""
    rule = _rule(
        ue_switch_budget=0.01,
        ue_switch_charging_budget=0.01,
        ue_switch_budget_min=1,
        ue_switch_charging_max_prob=1.0,
        **SURE,
    )
    gaps = [0.5, 0.4, 0.3, 0.2, 0.02, 0.05]
    charging = [False, False, False, False, True, True]
    moved = rule(_input(_costs(gaps), charging=charging), np.random.default_rng(0))
    assert moved.tolist() == [1, 0, 0, 0, 0, 1]


def test_charging_platoons_move_with_at_most_their_cap():
    """``ue_switch_charging_max_prob`` caps a charging platoon's probability however large
    its gap: of 4,000 sure movers about half move at a cap of 0.5."""
    n = 4000
    rule = _rule(ue_switch_charging_budget=1.0, ue_switch_charging_max_prob=0.5, **SURE)
    inp = _input(_costs(np.full(n, 0.3)), charging=np.ones(n, dtype=bool))
    share = rule(inp, np.random.default_rng(1)).mean()
    assert share == pytest.approx(0.5, abs=0.03)


@pytest.mark.parametrize(("sensitivity", "gap"), [(3.0, 0.1), (3.0, 0.2), (10.0, 0.05)])
def test_the_step_is_proportional_to_the_gap(sensitivity, gap):
    """An eligible non-charging platoon moves with probability ``sensitivity · gap``."""
    n = 4000
    rule = _rule(ue_switch_budget=1.0, ue_switch_sensitivity=sensitivity)
    share = rule(_input(_costs(np.full(n, gap))), np.random.default_rng(2)).mean()
    assert share == pytest.approx(sensitivity * gap, abs=0.03)


def test_the_step_decays_with_the_iteration():
    n = 4000
    rule = _rule(ue_switch_budget=1.0, ue_switch_sensitivity=5.0, ue_switch_decay=1.0)
    share = rule(_input(_costs(np.full(n, 0.2)), iteration=3), np.random.default_rng(3)).mean()
    assert share == pytest.approx(1.0 / (1 + 3), abs=0.03)


def test_a_platoon_moves_on_its_smoothed_costs():
    """One iteration's saving of 10 % after an iteration where the own route was far
    cheaper leaves the smoothed costs (memory 0.5: 10 against 14.5) favouring the own
    route: no move. Without memory the same platoon moves."""
    first = np.array([[10.0, 20.0]])
    second = np.array([[10.0, 9.0]])
    rng = np.random.default_rng(0)
    for memory, expected in ((0.5, 0), (0.0, 1)):
        rule = _rule(ue_switch_budget_min=1, ue_switch_memory=memory, **SURE)
        assert rule(_input(first), rng).tolist() == [0]
        assert rule(_input(second, iteration=1), rng).tolist() == [expected]


@pytest.mark.parametrize(("prob", "expected"), [(1.0, [2, 0]), (0.0, [0, 0])])
def test_unfinished_trips_move_to_their_cheapest_route(prob, expected):
    """A platoon that did not finish moves to its cheapest route (latest costs) with
    probability ``ue_uncompleted_switch_prob``, whatever its gap and the budget."""
    rule = _rule(ue_uncompleted_switch_prob=prob, ue_switch_budget_min=1, **SURE)
    cost = np.array([[100.0, 90.0, 80.0], [100.0, 100.0, 100.0]])
    moved = rule(_input(cost, completed=[False, True]), np.random.default_rng(0))
    assert moved.tolist() == expected


def test_all_randomness_comes_from_the_generator():
    cost = _costs(np.linspace(0.0, 0.3, 500))
    settings = {"ue_switch_budget": 1.0}
    a = make_switching_rule(ScenarioSettings(**settings))(_input(cost), np.random.default_rng(7))
    b = make_switching_rule(ScenarioSettings(**settings))(_input(cost), np.random.default_rng(7))
    c = make_switching_rule(ScenarioSettings(**settings))(_input(cost), np.random.default_rng(8))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    assert 0 < a.sum() < len(a)
