"""simulator_table (evcs_gym.tabular.tabulate): every row is the simulator's evaluation to
the bit, serial or on a pool; the disk cache, its key and lazy filling."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.scenarios import References, load_references
from evcs_gym.scenarios.cache import PreparationCache
from evcs_gym.tabular import PriceGrid, calvano_grid, save_table, simulator_table, table_key


@pytest.fixture(scope="module")
def evaluator(market):
    return evcs_gym.EVCSRewardEvaluator(market)


@pytest.fixture(scope="module")
def full(market, small_grid, evaluator, tmp_path_factory):
    store = PreparationCache(tmp_path_factory.mktemp("tables"))
    return simulator_table(market, small_grid, seed=0, evaluator=evaluator, cache=store), store


def test_every_row_is_the_simulators_evaluation(market, small_grid, evaluator, full):
    table, _ = full
    assert table.complete and table.meta["evaluations"] == 9
    for index in range(small_grid.n_profiles):
        res = evaluator.evaluate(small_grid.profile(index), seed=0)
        assert table.rewards[index].tolist() == [res.rewards[a] for a in market.agent_names]
        for i, a in enumerate(market.agent_names):
            assert np.array_equal(table.flows[index, i], res.flows[a])
    refs = load_references(market)
    res = evaluator.evaluate(refs.nash, seed=0)
    assert table.reference_rewards["nash"].tolist() == [res.rewards[a] for a in market.agent_names]
    assert table.reward_scale == market.settings.reward_scale


def test_a_pool_fills_the_same_bits(market, small_grid, full):
    with evcs_gym.ParallelEvaluatorPool(market, n_workers=2) as pool:
        again = simulator_table(market, small_grid, seed=0, evaluator=pool, cache=False)
    assert np.array_equal(again.rewards, full[0].rewards)
    assert np.array_equal(again.flows, full[0].flows)


def test_the_cache_returns_the_table_without_evaluating(market, small_grid, full):
    table, store = full

    class Refuses:
        def evaluate(self, prices, seed=None):
            raise AssertionError("a cached table evaluated")

    again = simulator_table(market, small_grid, seed=0, evaluator=Refuses(), cache=store)
    assert again.meta["from_cache"] and np.array_equal(again.rewards, table.rewards)
    assert np.array_equal(
        again.reference_rewards["collusive"], table.reference_rewards["collusive"]
    )
    labels = [e.label for e in store.entries()]
    assert any("payoff table tiny_market 3^2 seed 0" in label for label in labels)


def test_the_key_names_seed_grid_references_and_settings(market, small_grid):
    refs = load_references(market)
    key = table_key(market, small_grid, 0, refs)
    assert key == table_key(market, small_grid, 0, refs)
    assert key != table_key(market, small_grid, 1, refs)
    assert key != table_key(market, calvano_grid(market, m=4), 0, refs)
    moved = References(
        {a: p + 0.01 for a, p in refs.nash.items()}, refs.collusive, refs.settings_hash
    )
    assert key != table_key(market, small_grid, 0, moved)
    other = evcs_gym.load_scenario("tiny_market", ue_max_iterations=59)
    assert key != table_key(other, small_grid, 0, None)


def test_lazy_tables_evaluate_what_is_read_and_keep_it(market, small_grid, tmp_path):
    store = PreparationCache(tmp_path)
    lazy = simulator_table(market, small_grid, seed=1, fill=False, cache=store)
    assert lazy.filled.sum() == 0 and lazy.reference_rewards is not None
    lazy.nash_conv([1, 1])  # the profile and each station's two other levels
    assert lazy.filled.sum() == 5
    again = simulator_table(market, small_grid, seed=1, fill=False, cache=store)
    assert np.array_equal(again.filled, lazy.filled)
    assert np.array_equal(again.rewards[again.filled], lazy.rewards[lazy.filled])


def test_grids_of_other_games_are_refused(market):
    grid = PriceGrid(("A", "B"), np.full((2, 2, 4), 3.0))
    with pytest.raises(ValueError, match="outside the station's bounds"):
        simulator_table(market, grid, cache=False)
    with pytest.raises(ValueError, match="`n_workers` must be a positive integer"):
        simulator_table(market, calvano_grid(market, m=2), n_workers=0, cache=False)


def test_a_shipped_table_is_read_when_its_key_holds(market, small_grid, full, tmp_path):
    table, _ = full
    path = save_table(table, tmp_path / "tiny_market.npz")

    class Refuses:
        def evaluate(self, prices, seed=None):
            raise AssertionError("a shipped table evaluated")

    store = PreparationCache(tmp_path / "cache")
    again = simulator_table(
        market, small_grid, seed=0, evaluator=Refuses(), cache=store, shipped=path
    )
    assert np.array_equal(again.rewards, table.rewards) and len(store.entries()) == 1
    stale = simulator_table(market, small_grid, seed=5, fill=False, cache=False, shipped=path)
    assert stale.filled.sum() == 0  # another seed: another key, the file is ignored
