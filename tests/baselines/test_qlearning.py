"""run_qlearning (evcs_gym.baselines.qlearning): Calvano's initial values, determinism,
convergence on games solved by hand, and a short version of Calvano's anchor."""

from __future__ import annotations

import numpy as np
import pytest

import evcs_gym
from evcs_gym.baselines.qlearning import QLearningConfig, initial_q, run_qlearning
from evcs_gym.baselines.strategies import session_outcome
from evcs_gym.tabular import LogitMarket, PayoffTable, PriceGrid, calvano_grid, simulator_table

TWO = PriceGrid(("A", "B"), np.array([[[1.0], [2.0]], [[1.0], [2.0]]]))
FAST = {"window": 300, "beta": 5e-4, "max_rounds": 50_000}


@pytest.fixture(scope="module")
def calvano_table():
    market = LogitMarket()
    return market.table(market.grid())


def test_initial_values_average_over_the_rivals(calvano_table):
    q0 = initial_q(calvano_table.rewards, 15, 0.95)
    dense = calvano_table.dense()
    np.testing.assert_allclose(q0[0], dense[:, :, 0].mean(axis=1) / 0.05, rtol=1e-12)
    np.testing.assert_allclose(q0[1], dense[:, :, 1].mean(axis=0) / 0.05, rtol=1e-12)
    assert q0[0].argmax() == 4  # Calvano's initial greedy price: level 5 of 15, 1.5827


def test_same_seed_same_bits_and_seeds_differ(calvano_table):
    cfg = QLearningConfig(sessions=3, seed=7, max_rounds=20_000, chunk=700)
    a, b = run_qlearning(calvano_table, cfg), run_qlearning(calvano_table, cfg)
    assert np.array_equal(a.strategies, b.strategies) and np.array_equal(a.last_state, b.last_state)
    other = run_qlearning(calvano_table, QLearningConfig(sessions=3, seed=8, max_rounds=20_000))
    assert not np.array_equal(a.strategies, other.strategies)


def test_a_dominant_level_is_learned():
    # level 1 pays each station 1 more whatever the other does; with delta = 0 nothing else counts
    rewards = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 1.0], [2.0, 2.0]])
    result = run_qlearning(
        PayoffTable(TWO, rewards), QLearningConfig(sessions=5, delta=0.0, **FAST)
    )
    assert result.converged.all()
    assert (result.strategies == 1).all()
    assert (result.rounds_to_converge >= 0).all() and result.rounds_to_converge.max() < 50_000


def test_unconverged_sessions_stop_at_the_cap(calvano_table):
    result = run_qlearning(calvano_table, QLearningConfig(sessions=2, max_rounds=3_000))
    assert not result.converged.any() and result.stop_round.tolist() == [3_000, 3_000]
    assert (result.rounds_to_converge == -1).all() and result.rounds_run == 3_000


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"alpha": 0.0}, "`alpha` must be in"),
        ({"delta": 1.0}, "`delta` must be in"),
        ({"beta": -1.0}, "`beta` must be"),
        ({"sessions": 0}, "`sessions` must be a positive integer"),
        ({"window": 2.5}, "`window` must be a positive integer"),
        ({"seed": "a"}, "`seed` must be an integer"),
    ],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        QLearningConfig(**kwargs)


def test_a_short_anchor_colludes(calvano_table):
    """Calvano's market and learners, with exploration decaying 25 times faster (β = 10⁻⁴)
    and a window of 5,000 rounds: 6 sessions converge within 110,000 rounds at Δ 0.69–0.73
    (mean 0.70), well above Nash and below the baseline's 0.85 (less exploration, less
    collusion, as in Calvano's Figure 1). The full anchor: benchmarks/studies/calvano.py."""
    cfg = QLearningConfig(sessions=6, beta=1e-4, window=5_000, max_rounds=200_000, seed=1)
    result = run_qlearning(calvano_table, cfg)
    assert result.converged.all()
    deltas = [
        session_outcome(calvano_table, result.strategies[s], result.last_state[s], 0.95).delta
        for s in range(cfg.sessions)
    ]
    assert np.mean(deltas) > 0.5, deltas


def test_the_simulators_market_learns_like_the_closed_form(tmp_path):
    """The anchor through the simulator, short: Calvano's market as a scenario folder
    (2,000 drivers), its 5-level grid evaluated in the simulator, and 8 sessions learning
    on it and on the closed form's table (β = 10⁻⁴, a 5,000-round window). Both collude,
    and their mean Δ agree within the spread that 8 sessions leave (0.63 and 0.75 at
    seed 1; the full study compares 100 sessions each: benchmarks/studies/calvano.py)."""
    market = LogitMarket()
    nd = evcs_gym.load_scenario(market.write_scenario(tmp_path, drivers=2000))
    sim = simulator_table(nd, calvano_grid(nd, m=5), evaluator=evcs_gym.EVCSRewardEvaluator(nd))
    cfg = QLearningConfig(sessions=8, beta=1e-4, window=5_000, max_rounds=200_000, seed=1)
    means = []
    for table in (sim, market.table(market.grid(m=5))):
        result = run_qlearning(table, cfg)
        assert result.converged.all()
        means.append(
            np.mean(
                [
                    session_outcome(table, result.strategies[s], result.last_state[s], 0.95).delta
                    for s in range(cfg.sessions)
                ]
            )
        )
    assert min(means) > 0.4 and abs(means[0] - means[1]) < 0.25, means
