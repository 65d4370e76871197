"""The switching rule of the UE loop: which platoons move to which route between iterations.

The rule sees the route costs of every (platoon, route) pair from the latest simulation
and returns the next route slot of every platoon. It never touches the stop rule.
:class:`TargetedSwitching`, per iteration n:

1. *Smoothed costs.* ``c̄ ← (1 − m)·c + m·c̄`` over all (platoon, route) pairs, with
   memory ``m = ue_switch_memory`` (``ue_switch_charging_memory`` for charging platoons;
   ``c̄ = c`` at the first iteration). A completed platoon's smoothed gap is
   ``ḡ = (c̄_own − min c̄)/c̄_own``; its target is its smoothed-cheapest route.
2. *Budget.* Charging and non-charging platoons are ranked apart. Of the non-charging
   ones only the ``max(ceil(ue_switch_budget · n), ue_switch_budget_min)`` completed
   platoons with the largest ``ḡ`` (and ``ḡ`` ≥ a tenth of the threshold) are
   eligible, of the charging ones the ``max(ceil(ue_switch_charging_budget · n_ch),
   ue_switch_budget_min)`` largest; ties by platoon index. The charging platoons are a
   tenth of the population but their choices are the revenues: a budget of their own
   keeps them from queueing behind thousands of non-charging movers.
3. *Gap-proportional step.* An eligible platoon moves to its target with probability
   ``min(cap, sensitivity · ḡ) / (1 + ue_switch_decay · n)`` (charging platoons:
   ``ue_switch_charging_sensitivity``, cap ``ue_switch_charging_max_prob``; the others
   ``ue_switch_sensitivity``, cap 1).

A platoon that did not finish its trip moves to its cheapest route (latest costs) with
probability ``ue_uncompleted_switch_prob``.

Why: the simulated network reacts chaotically to route changes — a few dozen moved
platoons shift queues enough to change the gaps of hundreds of others by several per
cent — so the mean gap stalls at a noise level set by how many platoons move (with a
plain gap rule on uneven prices, 1–2 % for tens of iterations). Moving only the worst,
persistently mis-routed platoons (smoothing) in small batches (budget) lowers that level
fast. The rule never looks at the stop criteria: the stop rule's consecutive rounds are
confirmed under continued switching, never by freezing. All randomness comes from the
generator passed in; the rule is vectorised numpy (≈ 1 ms for 7,500 platoons × 10
routes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.ue.costs import relative_gap

__all__ = ["SwitchInput", "TargetedSwitching", "make_switching_rule"]


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
    """(n_platoons,) bool: charging platoon (``None``: treat all as one population)."""


def _blend(new: np.ndarray, old: np.ndarray, memory: float | np.ndarray) -> np.ndarray:
    """``(1 − memory)·new + memory·old``, keeping +inf (no route) exactly."""
    with np.errstate(invalid="ignore"):
        mixed = (1.0 - memory) * new + memory * old
    return np.where(np.isfinite(new), mixed, new)


class TargetedSwitching:
    """Smoothed costs, the worst platoons first, a budget of movers per iteration.

    Example:
        >>> rule = TargetedSwitching(ScenarioSettings(ue_switch_budget_min=1))
        >>> cost = np.array([[10.0, 5.0], [10.0, 9.99]])  # gaps of 50 % and 0.1 %
        >>> inp = SwitchInput(0, cost, np.zeros(2, dtype=int), np.ones(2, dtype=bool))
        >>> rule(inp, np.random.default_rng(0)).tolist()  # the worst moves
        [1, 0]
    """

    def __init__(self, settings: ScenarioSettings) -> None:
        self.settings = settings
        self.floor = 0.1 * settings.ue_convergence_threshold
        self._smooth: np.ndarray | None = None

    def _smoothed(self, cost: np.ndarray, memory: np.ndarray) -> np.ndarray:
        """Fold the latest costs into the smoothed ones (``memory``: an (n_platoons, 1)
        column) and return them."""
        if self._smooth is None:
            self._smooth = cost.copy()
        else:
            self._smooth = _blend(cost, self._smooth, memory)
        return self._smooth

    def __call__(self, inp: SwitchInput, rng: np.random.Generator) -> np.ndarray:
        s = self.settings
        n = len(inp.slot)
        charging = inp.charging if inp.charging is not None else np.zeros(n, dtype=bool)
        memory = np.where(charging, s.ue_switch_charging_memory, s.ue_switch_memory)[:, None]
        decision = self._smoothed(inp.cost, memory)  # one blend, each class its own memory
        done = inp.completed
        best_slot = np.argmin(decision, axis=1)
        gap = relative_gap(decision, inp.slot, best_slot)
        gap[~done] = 0.0
        eligible = np.zeros(n, dtype=bool)
        for members, share in (
            (np.flatnonzero(~charging), s.ue_switch_budget),
            (np.flatnonzero(charging), s.ue_switch_charging_budget),
        ):
            budget = max(int(np.ceil(share * len(members))), s.ue_switch_budget_min)
            candidates = members[gap[members] >= self.floor]
            if len(candidates) > budget:
                order = np.argsort(-gap[candidates], kind="stable")
                candidates = candidates[order[:budget]]
            eligible[candidates] = True
        sens = np.where(charging, s.ue_switch_charging_sensitivity, s.ue_switch_sensitivity)
        cap = np.where(charging, s.ue_switch_charging_max_prob, 1.0)
        prob = np.where(eligible, np.minimum(cap, sens * gap), 0.0)
        prob /= 1.0 + s.ue_switch_decay * inp.iteration
        prob[~done] = s.ue_uncompleted_switch_prob
        target = np.where(done, best_slot, np.argmin(inp.cost, axis=1))
        move = (rng.random(n) < prob) & (target != inp.slot)
        return np.where(move, target, inp.slot)


def make_switching_rule(settings: ScenarioSettings) -> TargetedSwitching:
    """A fresh switching rule (its smoothed costs empty) for one UE loop."""
    return TargetedSwitching(settings)
