"""Simulator-verified exploitability and the best-response-dynamics solver, on tiny."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import evcs_gym
from evcs_gym.equilibrium.best_response import BestResponseDynamics
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import StationDeviation, best_response, exploitability
from evcs_gym.network.settings import FAST_STOP_SETTINGS


def test_overpriced_station_has_a_large_verified_gain(tiny):
    prices = {"A": [2.0] * 4, "B": [1.0] * 4}
    res = exploitability(tiny, prices, seed=0, budget=12, grid=5)
    dev = res.deviations["A"]
    assert dev.gain > 0.5 * res.total_reward
    # the gain is verified: re-evaluating the deviation gives its reward
    check = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(
        {"A": dev.best_prices, "B": prices["B"]}, seed=0
    )
    assert check.rewards["A"] == pytest.approx(dev.best_reward)
    assert res.nash_conv == pytest.approx(sum(d.gain for d in res.deviations.values()))
    assert res.relative_nash_conv == pytest.approx(res.nash_conv / res.total_reward)
    assert all(0.5 <= v <= 2.0 for v in dev.best_prices)


# a profile with every price strictly inside [0.75, 1.75] for A: its 8 single-period bound
# moves and 16 nearby moves (±1, ±2 steps of 0.125) are all distinct (B's evaluate fast)
MIXED = np.array([[0.9, 1.1, 0.8, 1.3], [0.6, 0.6, 0.6, 0.6]])


def test_exploitability_is_deterministic_for_a_seed(tiny):
    # budget 31 without a grid: 25 candidates, the combined move, a DE generation
    a = exploitability(tiny, MIXED, stations=["A"], seed=3, budget=31, grid=0, seeds=[3, 5])
    b = exploitability(tiny, MIXED, stations=["A"], seed=3, budget=31, grid=0, seeds=[3, 5])
    assert a.to_dict() == b.to_dict()
    assert a.deviations["A"].search["de_generations"] >= 1


# A at the all-0.5 profile of tiny, but overpriced in period 1 (the busiest one): measured,
# A's best deviation is to lower just that period back to 0.5 (+60-75 % on seeds 0-2), and a
# 40-evaluation search with differential evolution finds nothing better.
ONE_BAD_PERIOD = {"A": [0.5, 2.0, 0.5, 0.5], "B": [0.5] * 4}


def test_single_period_moves_find_a_single_period_deviation(tiny):
    be = BatchEvaluator(tiny)
    # budget 9, no grid: the current prices and the 8 single-period bound moves
    res = exploitability(be, ONE_BAD_PERIOD, stations=["A"], budget=9, grid=0)
    dev = res.deviations["A"]
    assert dev.search["period_moves"] == 8 and dev.search["candidates"] == 9
    changed = np.flatnonzero(dev.best_prices != np.array(ONE_BAD_PERIOD["A"]))
    assert changed.tolist() == [1] and dev.best_prices[1] == 0.5
    assert dev.gain > 0.3 * dev.current_reward
    # without single-period moves the same budget finds nothing (no grid, too few for DE)
    none = exploitability(be, ONE_BAD_PERIOD, stations=["A"], budget=9, grid=0, period_moves=None)
    assert none.deviations["A"].gain == 0 and none.deviations["A"].search["period_moves"] == 0
    # a larger search (grid, moves, combined move, DE) finds no materially better deviation
    big = exploitability(be, ONE_BAD_PERIOD, stations=["A"], budget=40)
    assert dev.best_reward <= big.deviations["A"].best_reward <= 1.01 * dev.best_reward


def test_combined_single_period_moves_find_a_two_period_deviation(tiny):
    prices = {"A": [0.5, 2.0, 2.0, 0.5], "B": [0.5] * 4}  # A overpriced in periods 1 and 2
    # bound moves only (4 differ from the current prices), then the combined move
    res = exploitability(tiny, prices, stations=["A"], budget=6, grid=0, period_moves=0)
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
    res = exploitability(tiny, MIXED, budget=5, seeds=2)
    assert all(d.evaluations <= 5 for d in res.deviations.values())
    # the profile on seed 0, at most 4 more candidates per station's search, then on seed 1
    # the profile and the 2 deviations
    assert res.evaluations <= 1 + 2 * 4 + 3


def test_seeds_give_standard_errors_and_significance(tiny):
    be = BatchEvaluator(tiny)
    prices = {"A": [2.0] * 4, "B": [2.0] * 4}  # both undercut profitably (measured: +13 %, +122 %)
    res = exploitability(be, prices, budget=12, grid=3, seeds=3)
    assert res.seeds == (0, 1, 2) and res.seed == 0
    for a, dev in res.deviations.items():
        assert dev.n_seeds == 3 and dev.current_rewards.tolist() == res.seed_rewards[a].tolist()
        gains = dev.best_rewards - dev.current_rewards
        assert dev.gain == pytest.approx(max(0.0, gains.mean()))
        assert dev.current_reward == pytest.approx(dev.current_rewards.mean())
        assert dev.best_reward == pytest.approx(dev.best_rewards.mean())
        assert math.isfinite(dev.gain_se) and dev.gain_se >= 0
        assert dev.gain_se == pytest.approx(np.std(gains, ddof=1) / math.sqrt(3))
        assert dev.significant  # both gains are large compared with the seed noise
        assert dev.significant == (dev.mean_gain > 2.0 * dev.gain_se)
    # common random numbers per seed: the deviation re-evaluated on seed 2 matches
    check = evcs_gym.EVCSRewardEvaluator(tiny).evaluate(
        {"A": res.deviations["A"].best_prices, "B": prices["B"]}, seed=2
    )
    assert check.rewards["A"] == pytest.approx(res.deviations["A"].best_rewards[2])
    se = math.sqrt(sum(d.gain_se**2 for d in res.deviations.values()))
    assert res.nash_conv_se == pytest.approx(se)
    assert res.relative_nash_conv_se == pytest.approx(se / res.total_reward)
    out = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert out["seeds"] == [0, 1, 2] and out["deviations"]["B"]["significant"] is True
    text = res.summary()
    assert "±" in text and "3 seeds" in text and "single-period moves" in text
    # a single seed: no standard error (nan, None in JSON), significant = positive gain
    one = exploitability(be, prices, budget=12, grid=3)
    assert one.seeds == (0,) and math.isnan(one.nash_conv_se)
    assert one.to_dict()["deviations"]["A"]["gain_se"] is None
    assert all(d.significant == (d.gain > 0) for d in one.deviations.values())


def test_a_cheaper_search_pool_chooses_and_the_game_measures(tiny):
    """With ``search_pool`` the candidates are scored on its payoffs; the profile and
    the deviations found are re-evaluated on the game's, on every seed."""
    fast = tiny.with_stop_settings(**FAST_STOP_SETTINGS)
    prices = {"A": [2.0] * 4, "B": [2.0] * 4}
    res = exploitability(tiny, prices, budget=8, grid=3, seeds=2, search_pool=fast)
    assert res.meta["search_settings_hash"] == fast.settings_hash
    assert f"scored on the payoffs of settings {fast.settings_hash}" in res.summary()
    game = evcs_gym.EVCSRewardEvaluator(tiny)
    for seed_index, seed in enumerate(res.seeds):
        base = game.evaluate(prices, seed=seed).rewards
        for a, dev in res.deviations.items():
            assert dev.current_rewards[seed_index] == base[a]
            deviating = {**prices, a: dev.best_prices}
            assert dev.best_rewards[seed_index] == game.evaluate(deviating, seed=seed).rewards[a]
    # the same search on the game's own payoffs says nothing of another pool
    assert exploitability(tiny, prices, budget=8, grid=3).meta["search_settings_hash"] is None
    other = evcs_gym.load_scenario("tiny", charging_periods=2)
    with pytest.raises(ValueError, match="`search_pool` must evaluate the same stations"):
        exploitability(tiny, prices, budget=8, search_pool=other)


def test_significance_rule():
    def dev(gains, z=2.0):
        cur = np.full(len(gains), 100.0)
        return StationDeviation(
            "A",
            100.0,
            100.0 + float(np.mean(gains)),
            np.ones(4),
            1,
            current_rewards=cur,
            best_rewards=cur + gains,
            significance_z=z,
        )

    assert dev(np.array([10.0, 8.0, 12.0])).significant  # 10 > 2 x 1.15
    assert not dev(np.array([10.0, 8.0, 12.0]), z=10).significant
    assert not dev(np.array([30.0, -20.0, -4.0])).significant  # mean 2 within the noise
    assert dev(np.array([5.0])).significant and math.isnan(dev(np.array([5.0])).gain_se)
    assert not dev(np.array([-5.0])).significant and dev(np.array([-5.0])).gain == 0


def test_exploitability_rejects_bad_input(tiny):
    with pytest.raises(ValueError, match="must cover 2 stations x 4 periods"):
        exploitability(tiny, np.ones((2, 3)))
    with pytest.raises(ValueError, match="`budget` must be >= 1"):
        exploitability(tiny, {"A": [1.0] * 4, "B": [1.0] * 4}, budget=0)
    with pytest.raises(TypeError, match="expected a ParallelEvaluatorPool"):
        BatchEvaluator(object())
    ok = {"A": [1.0] * 4, "B": [1.0] * 4}
    for kwargs, name in [
        ({"seeds": []}, "`seeds`"),
        ({"seeds": 0}, "`seeds`"),
        ({"seeds": [0, 0]}, "`seeds`"),
        ({"seeds": [0, -2]}, "`seeds`"),
        ({"seed": -1}, "`seed`"),
        ({"seed": 1, "seeds": [2, 3]}, "`seed`"),
        ({"significance_z": -1.0}, "`significance_z`"),
        ({"period_moves": -1}, "`period_moves`"),
        ({"period_step": 0.0}, "`period_step`"),
    ]:
        with pytest.raises(ValueError, match=name):
            exploitability(tiny, ok, **kwargs)


def test_best_response_dynamics_moves_towards_lower_exploitability(tiny):
    solver = BestResponseDynamics(tiny, target=0.0, max_rounds=3, budget_per_station=10, grid=4)
    res = solver.solve({"A": [2.0] * 4, "B": [1.0] * 4})
    assert res.rounds == 3 and not res.converged
    first = res.history[0]["relative_nash_conv"]
    assert res.certificate.relative_nash_conv <= first
    assert res.evaluations > 0


@pytest.mark.slow
def test_best_response_dynamics_reaches_two_percent_on_tiny(tiny):
    """Searches averaged over 3 seeds (one seed's noise is ±15 % of B's revenue on tiny,
    and single-seed best responses chase it round after round); 9 rounds, ~3 min."""
    solver = BestResponseDynamics(
        tiny, target=0.02, budget_per_station=16, max_rounds=12, seeds=3, search_seeds=3
    )
    res = solver.solve()  # from the mid-bound profile
    assert res.converged and res.relative_nash_conv <= 0.02
    # an independent, larger search on other seeds agrees: no significant gain above 2 %
    check = exploitability(tiny, res.prices, seeds=[10, 11, 12, 13], search_seeds=2, budget=32)
    assert check.relative_nash_conv <= 0.02 + 2 * check.relative_nash_conv_se
    assert [h["round"] for h in res.history] == list(range(1, res.rounds + 1))


def test_best_response_dynamics_rejects_bad_damping(tiny):
    with pytest.raises(ValueError, match="`damping` must be in"):
        BestResponseDynamics(tiny, damping=0.0)
    with pytest.raises(ValueError, match="`min_damping` must be in"):
        BestResponseDynamics(tiny, damping=0.5, min_damping=0.8)
