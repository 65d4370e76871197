"""Batch evaluation adapter: one call shape for a pool, an evaluator or bare NetworkData.

The equilibrium tools evaluate many price profiles with common random numbers (one
seed). They accept a :class:`~evcs_gym.ParallelEvaluatorPool` (anything with
``evaluate_batch``), an :class:`~evcs_gym.EVCSRewardEvaluator` (anything with
``evaluate``) or a :class:`~evcs_gym.NetworkData` (a serial evaluator is built).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evcs_gym.network import NetworkData
from evcs_gym.ue.evaluator import EvalResult, EVCSRewardEvaluator

__all__ = ["BatchEvaluator"]


class BatchEvaluator:
    """Evaluates lists of price arrays ``(n_agents, n_periods)`` and caches the results.

    Example:
        >>> import evcs_gym
        >>> be = BatchEvaluator(evcs_gym.load_scenario("tiny"))
        >>> r = be.rewards([be.network_prices(1.0)], seed=0)
        >>> r.shape
        (1, 2)
    """

    def __init__(self, pool_or_data: Any) -> None:
        if isinstance(pool_or_data, NetworkData):
            self.backend: Any = EVCSRewardEvaluator(pool_or_data)
            self.network = pool_or_data
        elif hasattr(pool_or_data, "evaluate_batch") or hasattr(pool_or_data, "evaluate"):
            self.backend = pool_or_data
            self.network = pool_or_data.network
        else:
            raise TypeError(
                "expected a ParallelEvaluatorPool, an EVCSRewardEvaluator or NetworkData, "
                f"got {type(pool_or_data).__name__}"
            )
        self.agents = self.network.agent_names
        self.evaluations = 0
        """Simulator runs so far (cached profiles cost nothing)."""
        self.batches = 0
        """Calls to the backend so far (a pool runs each call's profiles in parallel)."""
        self._cache: dict[tuple[bytes, int], EvalResult] = {}

    def network_prices(self, price: float) -> np.ndarray:
        """A uniform profile as an ``(n_agents, n_periods)`` array."""
        return np.full((self.network.n_agents, self.network.n_periods), float(price))

    def as_mapping(self, prices: np.ndarray) -> dict[str, np.ndarray]:
        return {a: np.asarray(prices[i], dtype=float) for i, a in enumerate(self.agents)}

    def as_array(self, prices: Mapping[str, Any] | np.ndarray) -> np.ndarray:
        if isinstance(prices, np.ndarray):
            return prices.astype(float)
        return np.stack([np.asarray(prices[a], dtype=float) for a in self.agents])

    def evaluate(self, profiles: Sequence[np.ndarray], seed: int) -> list[EvalResult]:
        """Results for every profile (cached per profile and seed), in order."""
        keys = [(np.ascontiguousarray(p, dtype=float).tobytes(), int(seed)) for p in profiles]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        unique: dict[tuple[bytes, int], int] = {}
        for i in todo:
            unique.setdefault(keys[i], i)
        if unique:
            batch = [self.as_mapping(profiles[i]) for i in unique.values()]
            if hasattr(self.backend, "evaluate_batch"):
                results = self.backend.evaluate_batch(batch, seeds=[int(seed)] * len(batch))
            else:
                results = [self.backend.evaluate(p, seed=int(seed)) for p in batch]
            self.evaluations += len(batch)
            self.batches += 1
            for key, res in zip(unique, results):
                self._cache[key] = res
        return [self._cache[k] for k in keys]

    def rewards(self, profiles: Sequence[np.ndarray], seed: int | Sequence[int]) -> np.ndarray:
        """``(len(profiles), n_agents)`` rewards; with several seeds, their mean.

        Several seeds are sent as one batch (so a pool runs them in parallel), each
        profile at every seed: common random numbers per seed.
        """
        if isinstance(seed, (int, np.integer)):
            results = self.evaluate(profiles, int(seed))
            return np.array([[r.rewards[a] for a in self.agents] for r in results])
        seeds = [int(s) for s in seed]
        if len(seeds) == 1:
            return self.rewards(profiles, seeds[0])
        self._prefetch(profiles, seeds)
        return np.mean([self.rewards(profiles, s) for s in seeds], axis=0)

    def results(
        self, profiles: Sequence[np.ndarray], seeds: Sequence[int]
    ) -> list[list[EvalResult]]:
        """Per profile, its result on each seed: every pair not cached yet in one batch.

        Example:
            >>> import evcs_gym
            >>> be = BatchEvaluator(evcs_gym.load_scenario("tiny"))
            >>> out = be.results([be.network_prices(1.0), be.network_prices(1.5)], [0, 1])
            >>> len(out), [r.seed for r in out[1]], be.evaluations
            (2, [0, 1], 4)
        """
        seeds = [int(s) for s in seeds]
        self._prefetch(profiles, seeds)
        per_seed = [self.evaluate(profiles, s) for s in seeds]
        return [[per_seed[j][i] for j in range(len(seeds))] for i in range(len(profiles))]

    def _prefetch(self, profiles: Sequence[np.ndarray], seeds: Sequence[int]) -> None:
        """Evaluate every (profile, seed) pair not cached yet, in one batch."""
        todo: dict[tuple[bytes, int], tuple[np.ndarray, int]] = {}
        for p in profiles:
            raw = np.ascontiguousarray(p, dtype=float).tobytes()
            for s in seeds:
                if (raw, s) not in self._cache:
                    todo.setdefault((raw, s), (p, s))
        if not todo or not hasattr(self.backend, "evaluate_batch"):
            return
        batch = [self.as_mapping(p) for p, _ in todo.values()]
        results = self.backend.evaluate_batch(batch, seeds=[s for _, s in todo.values()])
        self.evaluations += len(batch)
        self.batches += 1
        for key, res in zip(todo, results):
            self._cache[key] = res
