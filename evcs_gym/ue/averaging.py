"""Evaluation averaged over seeds, with standard errors.

One evaluation's revenues vary by 1–6 % from seed to seed on Sioux Falls (the engine's
random merge and platoon order): a single seed cannot tell a 2 % price effect from
noise. :class:`SeedAverage` holds the results of one price profile at several seeds —
each seed is its own common random number, so two profiles evaluated at the same seeds
can be compared seed by seed (:meth:`SeedAverage.paired_difference`) — and reports the
mean and the standard error of the mean of every station's reward, revenue and flows.

Use it through :meth:`evcs_gym.EVCSRewardEvaluator.evaluate_seeds` or
:meth:`evcs_gym.ParallelEvaluatorPool.evaluate_seeds`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evcs_gym.ue.result import EvalResult
from evcs_gym.utils import to_jsonable

__all__ = ["SeedAverage", "standard_error"]


def standard_error(values: Sequence[float] | np.ndarray) -> float:
    """Standard error of the mean: sample std (ddof 1) / sqrt(n); NaN for fewer than 2.

    Example:
        >>> round(standard_error([1.0, 2.0, 3.0]), 4)
        0.5774
        >>> standard_error([1.0])
        nan
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan
    return float(x.std(ddof=1) / math.sqrt(len(x)))


@dataclass
class SeedAverage:
    """Results of one price profile at several seeds, and their means and standard errors.

    Attributes:
        results: one :class:`~evcs_gym.EvalResult` per seed, in ``seeds`` order.

    Example:
        >>> import evcs_gym
        >>> ev = evcs_gym.EVCSRewardEvaluator(evcs_gym.load_scenario("tiny"))
        >>> avg = ev.evaluate_seeds({"A": [1.0] * 4, "B": [1.5] * 4}, seeds=3)
        >>> avg.seeds, avg.n_seeds
        ([0, 1, 2], 3)
        >>> avg.rewards["A"] == sum(r.rewards["A"] for r in avg.results) / 3
        True
        >>> avg.rewards_se["A"] >= 0
        True
    """

    results: list[EvalResult]

    def __post_init__(self) -> None:
        if not self.results:
            raise ValueError("SeedAverage needs at least one result")
        agents = list(self.results[0].rewards)
        self.agents = agents
        self._reward = np.array([[r.rewards[a] for a in agents] for r in self.results])
        self._revenue = np.array([[r.revenues[a] for a in agents] for r in self.results])

    @property
    def seeds(self) -> list[int]:
        return [r.seed for r in self.results]

    @property
    def n_seeds(self) -> int:
        return len(self.results)

    def _mean(self, m: np.ndarray) -> dict[str, float]:
        return {a: float(m[:, i].mean()) for i, a in enumerate(self.agents)}

    def _se(self, m: np.ndarray) -> dict[str, float]:
        return {a: standard_error(m[:, i]) for i, a in enumerate(self.agents)}

    @property
    def rewards(self) -> dict[str, float]:
        """Mean reward of each station over the seeds."""
        return self._mean(self._reward)

    @property
    def rewards_se(self) -> dict[str, float]:
        """Standard error of each station's mean reward (NaN with one seed)."""
        return self._se(self._reward)

    @property
    def revenues(self) -> dict[str, float]:
        return self._mean(self._revenue)

    @property
    def revenues_se(self) -> dict[str, float]:
        return self._se(self._revenue)

    @property
    def flows(self) -> dict[str, np.ndarray]:
        """Mean vehicles charging per period, per station."""
        return {a: np.mean([r.flows[a] for r in self.results], axis=0) for a in self.agents}

    @property
    def total_reward(self) -> float:
        return float(self._reward.sum(axis=1).mean())

    @property
    def total_reward_se(self) -> float:
        return standard_error(self._reward.sum(axis=1))

    @property
    def converged_share(self) -> float:
        """Share of the seeds whose UE met the stop rule."""
        return float(np.mean([r.converged for r in self.results]))

    @property
    def ue_iterations(self) -> list[int]:
        return [r.ue_iterations for r in self.results]

    def paired_difference(self, other: SeedAverage) -> tuple[dict[str, float], dict[str, float]]:
        """Mean and standard error of ``self − other`` per station, seed by seed.

        Both must hold the same seeds (common random numbers); pairing removes the noise
        the two profiles share.

        Raises:
            ValueError: the seeds differ.
        """
        if self.seeds != other.seeds:
            raise ValueError(
                f"paired_difference needs the same seeds, got {self.seeds} and {other.seeds}"
            )
        d = self._reward - other._reward
        return self._mean(d), self._se(d)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (means, standard errors, per-seed rewards)."""
        return to_jsonable(
            {
                "seeds": self.seeds,
                "rewards": self.rewards,
                "rewards_se": self.rewards_se,
                "revenues": self.revenues,
                "revenues_se": self.revenues_se,
                "total_reward": self.total_reward,
                "total_reward_se": self.total_reward_se,
                "converged_share": self.converged_share,
                "ue_iterations": self.ue_iterations,
                "per_seed_rewards": [r.rewards for r in self.results],
            }
        )

    def summary(self) -> str:
        """One line per station: mean reward ± standard error."""
        lines = [f"mean over {self.n_seeds} seeds {self.seeds} (± standard error):"]
        for a in self.agents:
            lines.append(f"  {a:>6}: {self.rewards[a]:12.1f} ± {self.rewards_se[a]:8.1f}")
        return "\n".join(lines)
