"""The fixed-budget search of evcs-gym 0.3.0 (evcs_gym.equilibrium.deviation_search, kept
as ``search="budget"``) on ``tiny``: single-period moves, the combined move, the budget as
a hard cap and its priorities."""

from __future__ import annotations

import numpy as np
import pytest

from evcs_gym.equilibrium.deviation_search import best_response
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import exploitability
from tests.helpers import MIXED

ONE_BAD_PERIOD = {"A": [0.5, 2.0, 0.5, 0.5], "B": [0.5] * 4}


def test_single_period_moves_find_a_single_period_deviation(tiny):
    be = BatchEvaluator(tiny)
    # budget 9, no grid: the current prices and the 8 single-period bound moves
    res = exploitability(be, ONE_BAD_PERIOD, stations=["A"], search="budget", budget=9, grid=0)
    dev = res.deviations["A"]
    assert dev.search["period_moves"] == 8 and dev.search["candidates"] == 9
    changed = np.flatnonzero(dev.best_prices != np.array(ONE_BAD_PERIOD["A"]))
    assert changed.tolist() == [1] and dev.best_prices[1] == 0.5
    assert dev.gain > 0.3 * dev.current_reward
    # without single-period moves the same budget finds nothing (no grid, too few for DE)
    none = exploitability(
        be, ONE_BAD_PERIOD, stations=["A"], search="budget", budget=9, grid=0, period_moves=None
    )
    assert none.deviations["A"].gain == 0 and none.deviations["A"].search["period_moves"] == 0
    # a larger search (grid, moves, combined move, DE) finds no materially better deviation
    big = exploitability(be, ONE_BAD_PERIOD, stations=["A"], search="budget", budget=40)
    assert dev.best_reward <= big.deviations["A"].best_reward <= 1.01 * dev.best_reward


def test_combined_single_period_moves_find_a_two_period_deviation(tiny):
    prices = {"A": [0.5, 2.0, 2.0, 0.5], "B": [0.5] * 4}  # A overpriced in periods 1 and 2
    # bound moves only (4 differ from the current prices), then the combined move
    res = exploitability(
        tiny, prices, stations=["A"], search="budget", budget=6, grid=0, period_moves=0
    )
    dev = res.deviations["A"]
    assert dev.search["period_moves"] == 4 and dev.search["combined"]
    assert dev.best_prices.tolist() == [0.5] * 4  # both periods lowered at once
    singles = [[0.5, 0.5, 2.0, 0.5], [0.5, 2.0, 0.5, 0.5]]  # one of the two periods lowered
    single = BatchEvaluator(tiny).rewards([np.array([a, prices["B"]]) for a in singles], 0)
    assert dev.best_reward > single[:, 0].max()  # better than either single-period move


def test_budget_is_a_hard_cap_and_sets_the_priority(tiny):
    be = BatchEvaluator(tiny)
    start = np.array([[1.0, 1.0, 1.5, 1.5]])
    for budget in (44, 20, 9, 1):  # largest first: smaller budgets try a prefix of its list
        fresh = be.evaluations == 0
        info: dict = {}
        x, best, current, runs = best_response(
            be,
            MIXED,
            0,
            seed=0,
            budget=budget,
            grid=7,
            rng=np.random.default_rng(0),
            starts=start,
            stats=info,
        )
        assert info["candidates"] <= budget and best >= current
        assert runs == (info["candidates"] if fresh else 0)  # every simulator run counted
        if budget == 44:  # 33 candidates, the combined move, then DE (2 generations)
            assert info["period_moves"] == 24 and info["de_generations"] >= 1
        if budget == 20:  # the current prices, 8 bound moves, the uniform grid, the start
            assert info["grid"] == 7 and info["starts"] == 1 and info["period_moves"] == 11
        if budget == 9:  # the current prices, then the 8 single-period bound moves
            assert info["period_moves"] == 8 and info["grid"] == 0 and info["starts"] == 0
        if budget == 1:
            assert best == current and x.tolist() == MIXED[0].tolist()
    res = exploitability(tiny, MIXED, search="budget", budget=5, seeds=2)
    assert all(d.evaluations <= 5 for d in res.deviations.values())
    # the profile on the search seed 2 (held out), at most 4 more candidates per
    # station's search, then on seeds 0 and 1 the profile and the 2 deviations
    assert res.evaluations <= 1 + 2 * 4 + 2 * 3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"objective": "joint"}, r"`objective` must be one of \['own', 'total'\], got 'joint'"),
        ({"budget": 0}, "`budget` must be >= 1, got 0"),
        ({"grid": -1}, "`grid` must be >= 0, got -1"),
    ],
)
def test_bad_search_arguments_name_the_argument(kwargs, match):
    from evcs_gym.equilibrium.deviation_search import check_search

    args = {"budget": 4, "grid": 3, "period_moves": 2, "period_step": 0.1, "objective": "own"}
    with pytest.raises(ValueError, match=match):
        check_search(**{**args, **kwargs})


def test_the_total_objective_scores_the_sum_of_the_rewards(tiny):
    be = BatchEvaluator(tiny)
    profile = be.network_prices(1.25)
    rng = np.random.default_rng(0)
    _, own_best, own_now, _ = best_response(be, profile, 0, seed=0, budget=4, grid=2, rng=rng)
    _, tot_best, tot_now, _ = best_response(
        be, profile, 0, seed=0, budget=4, grid=2, rng=np.random.default_rng(0), objective="total"
    )
    rewards = be.rewards([profile], 0)[0]
    assert own_now == rewards[0] and tot_now == pytest.approx(rewards.sum())
    assert own_best >= own_now and tot_best >= tot_now
