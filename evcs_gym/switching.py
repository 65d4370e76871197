"""Switching rules of the UE loop: which platoons move to which route between iterations.

A rule sees the route costs of every (platoon, route) pair from the latest simulation
and returns the next route slot of every platoon. It never touches the stop rule.

* :class:`SmoothedSwitching` (default, ``ue_switch_rule="smoothed"``) — decisions on
  exponentially smoothed route costs: ``c̄ ← (1 − m)·c + m·c̄`` with memory
  ``m = ue_switch_memory``. A completed platoon whose smoothed relative gap is g moves
  to its smoothed-cheapest route with probability
  ``min(1, ue_switch_sensitivity · g) / (1 + ue_switch_decay · n)``; platoons below a
  tenth of the convergence threshold stay. Smoothing stops platoons near a pricing-period
  boundary or a queue from flip-flopping between two routes on one noisy iteration,
  which is what keeps a plain gap rule from settling on uneven prices.
* :class:`LegacySwitching` (``"legacy"``) — the earlier tool's rule on the latest costs,
  ``P = min(1, ue_switch_gamma · g) / (1 + ue_switch_alpha · n)``.

In both, a platoon that did not finish its trip moves to its cheapest route with
probability ``ue_uncompleted_switch_prob``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evcs_gym.costs import PairCosts
from evcs_gym.settings import ScenarioSettings

__all__ = ["LegacySwitching", "SmoothedSwitching", "SwitchInput", "make_switching_rule"]


@dataclass
class SwitchInput:
    """What a rule sees at iteration ``iteration`` (0-based)."""

    iteration: int
    cost: np.ndarray
    """(n_platoons, k) cost of every route of each platoon's set (+inf = no route)."""
    slot: np.ndarray
    """(n_platoons,) current route slot."""
    completed: np.ndarray
    """(n_platoons,) bool: trip completed in this simulation."""
    charging: np.ndarray | None = None
    """(n_platoons,) bool: platoon of the charging class."""
    pair_costs: PairCosts | None = None
    """Cost components of every (platoon, route) pair (travel time, charging entry, price)."""


class _Rule:
    def __init__(self, settings: ScenarioSettings) -> None:
        self.settings = settings
        self.floor = 0.1 * settings.ue_convergence_threshold

    def reset(self) -> None:
        """Forget state; called at the start of every evaluation."""

    def _decide(
        self,
        inp: SwitchInput,
        cost: np.ndarray,
        sensitivity: float,
        decay: float,
        rng: np.random.Generator,
    ) -> np.ndarray:
        rows = np.arange(len(inp.slot))
        best_slot = np.argmin(cost, axis=1)
        own = cost[rows, inp.slot]
        gap = np.zeros(len(own))
        ok = own > 0
        gap[ok] = (own[ok] - cost[rows, best_slot][ok]) / own[ok]
        prob = np.minimum(1.0, sensitivity * gap) / (1.0 + decay * inp.iteration)
        prob[gap < self.floor] = 0.0
        stuck = ~inp.completed
        prob[stuck] = self.settings.ue_uncompleted_switch_prob
        target = np.where(stuck, np.argmin(inp.cost, axis=1), best_slot)
        move = (rng.random(len(prob)) < prob) & (target != inp.slot)
        return np.where(move, target, inp.slot)


class SmoothedSwitching(_Rule):
    """Gap-proportional switching on exponentially smoothed route costs (the default)."""

    def __init__(self, settings: ScenarioSettings) -> None:
        super().__init__(settings)
        self._smooth: np.ndarray | None = None

    def reset(self) -> None:
        self._smooth = None

    def __call__(self, inp: SwitchInput, rng: np.random.Generator) -> np.ndarray:
        s = self.settings
        m = s.ue_switch_memory
        if self._smooth is None:
            self._smooth = inp.cost.copy()
        else:
            self._smooth = (1.0 - m) * inp.cost + m * self._smooth
        return self._decide(inp, self._smooth, s.ue_switch_sensitivity, s.ue_switch_decay, rng)


class LegacySwitching(_Rule):
    """The earlier tool's rule: ``min(1, gamma * gap) / (1 + alpha * n)`` on the latest costs."""

    def __call__(self, inp: SwitchInput, rng: np.random.Generator) -> np.ndarray:
        s = self.settings
        return self._decide(inp, inp.cost, s.ue_switch_gamma, s.ue_switch_alpha, rng)


_RULES = {"smoothed": SmoothedSwitching, "legacy": LegacySwitching}


def make_switching_rule(settings: ScenarioSettings) -> _Rule:
    """The rule named by ``settings.ue_switch_rule``."""
    return _RULES[settings.ue_switch_rule](settings)
