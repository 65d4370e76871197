"""The collusion index Δ: where a profile's total revenue lies between Nash and collusion.

Δ = (R − R_N) / (R_M − R_N), with R the profile's total revenue, R_N the Nash
reference's and R_M the collusive reference's (the profit-gain index of Calvano et al.,
AER 2020). Δ = 0 is the revenue of competition, Δ = 1 that of a cartel; below 0 the
stations compete harder than at Nash. It is read beside NashConv: a profile can be near
Nash in revenue and still exploitable, or collusive and an equilibrium of nobody's game.

All three profiles are evaluated on the same seeds (common random numbers) and Δ is the
ratio of the mean differences; its standard error comes from the per-seed differences
(the delta method). Revenues here are rewards: revenue minus energy cost, which is the
revenue itself in every bundled game (no energy cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.scenarios.references import References
from evcs_gym.seeds import check_seeds

__all__ = ["CollusionIndex", "collusion_index"]


@dataclass(frozen=True)
class CollusionIndex:
    """Δ of one profile, with the three total revenues it rests on (means over seeds)."""

    delta: float
    """(R − R_N) / (R_M − R_N)."""
    delta_se: float
    """Its standard error over the seeds (NaN with one seed)."""
    revenue: float
    """R: the profile's total revenue."""
    nash_revenue: float
    """R_N: the Nash reference's."""
    collusive_revenue: float
    """R_M: the collusive reference's."""
    seeds: tuple[int, ...]

    def summary(self) -> str:
        se = "" if math.isnan(self.delta_se) else f" ± {self.delta_se:.2f}"
        return (
            f"collusion index Δ = {self.delta:.2f}{se} (total revenue {self.revenue:.1f}; "
            f"Nash reference {self.nash_revenue:.1f}, collusive {self.collusive_revenue:.1f})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "delta": self.delta,
            "delta_se": None if math.isnan(self.delta_se) else self.delta_se,
            "revenue": self.revenue,
            "nash_revenue": self.nash_revenue,
            "collusive_revenue": self.collusive_revenue,
            "seeds": list(self.seeds),
        }


def collusion_index(
    pool_or_data: Any,
    prices: Mapping[str, Any] | np.ndarray,
    references: References,
    seeds: int | Sequence[int] = 4,
) -> CollusionIndex:
    """Δ of ``prices`` against ``references``, each evaluated on ``seeds``.

    Args:
        pool_or_data: a ParallelEvaluatorPool, an EVCSRewardEvaluator, NetworkData or a
            :class:`BatchEvaluator` (whose cache then spares evaluations already made).
        prices: ``{station: (n_periods,) prices}`` or an ``(n_agents, n_periods)`` array.
        references: the game's references (:func:`evcs_gym.scenarios.load_references`).
        seeds: evaluation seeds (a count ``n`` means ``0 .. n-1``).

    Raises:
        ValueError: the references are of another game, or R_M = R_N on these seeds.
    """
    evaluator = pool_or_data if isinstance(pool_or_data, BatchEvaluator) else None
    evaluator = evaluator or BatchEvaluator(pool_or_data)
    nd = evaluator.network
    if references.settings_hash != nd.settings_hash:
        raise ValueError(
            f"`references` belong to the game {references.settings_hash}, the evaluator "
            f"plays {nd.settings_hash}"
        )
    seed_list = check_seeds(seeds)
    profiles = [
        evaluator.as_array(prices),
        evaluator.as_array(references.nash),
        evaluator.as_array(references.collusive),
    ]
    if len(seed_list) > 1:
        evaluator.rewards(profiles, seed_list)  # every (profile, seed) in one batch
    totals = np.array([evaluator.rewards(profiles, s).sum(axis=1) for s in seed_list])
    r, rn, rm = totals.mean(axis=0)
    if not rm != rn:
        raise ValueError(f"the references earn the same total revenue ({rn}): Δ is undefined")
    delta = float((r - rn) / (rm - rn))
    se = math.nan
    if len(seed_list) > 1:
        # delta method on the ratio of mean differences a / b, a = R - R_N, b = R_M - R_N
        a, b = totals[:, 0] - totals[:, 1], totals[:, 2] - totals[:, 1]
        resid = (a - delta * b) / (rm - rn)
        se = float(resid.std(ddof=1) / math.sqrt(len(seed_list)))
    return CollusionIndex(delta, se, float(r), float(rn), float(rm), tuple(seed_list))
