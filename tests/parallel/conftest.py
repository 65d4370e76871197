"""Fixtures of the worker-pool tests: pools on ``tiny`` and on ``slow_tiny`` (a ``tiny``
whose every evaluation runs exactly ``SLOW_ITERATIONS`` UE iterations), and a batch with
its serial results.

``slow_tiny`` turns off both ways a loop can end early: the stop rule (``ue_convergence_
stable_rounds`` unreachable) and the stationary stop (``ue_payoff_precision=0``). With the
stationary stop on, its loops ended after 20-30 iterations in about 0.13 s, and a task
could finish inside a test's 0.1 s timeout on a fast host."""

from __future__ import annotations

import pytest

import evcs_gym
from evcs_gym import ParallelEvaluatorPool
from tests.helpers import SLOW_ITERATIONS, price_vectors, serial


@pytest.fixture(scope="module")
def tiny_batch(tiny) -> tuple[list[dict], list, list]:
    batch = price_vectors(tiny, 6, seed=1)
    seeds = [0, 1, 2, None, 0, 7]
    return batch, seeds, serial(tiny, batch, seeds)


@pytest.fixture(scope="module")
def slow_tiny() -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario(
        "tiny",
        warm_start=False,
        ue_max_iterations=SLOW_ITERATIONS,
        ue_convergence_stable_rounds=10**6,
        ue_payoff_precision=0.0,
    )


@pytest.fixture
def pool(tiny):
    with ParallelEvaluatorPool(tiny, n_workers=2) as p:
        yield p


@pytest.fixture
def slow_pool(slow_tiny):
    with ParallelEvaluatorPool(slow_tiny, n_workers=2) as p:
        yield p
