"""When a UE loop stops, and what it answers: the stop rule and the stationary-mean payoff.

A UE loop (:meth:`EVCSRewardEvaluator.evaluate
<evcs_gym.ue.evaluator.EVCSRewardEvaluator.evaluate>`) ends in one of three ways
(``ue_stats["stop_reason"]``):

* ``"converged"`` — the **stop rule** held for ``ue_convergence_stable_rounds``
  iterations in a row (:meth:`GapStats.meets`): the mean relative gap of all completed
  platoons, the mean gap of the completed charging platoons, the share of charging
  platoons above the tail gap and the completed share all within their tolerances.
  The drivers are at an equilibrium to within the tolerances; the payoff is that of
  the **final iteration** (``ue_stats["payoff"] == "final_iteration"``).
* ``"stationary"`` — the rule is out of reach (at many price profiles the
  deterministic-choice UE has no point equilibrium: drivers race between periods and
  the loop wanders in a stationary orbit), and the **stationary mean** of the loop's
  revenues is known to the precision asked: after at least
  ``ue_payoff_min_iterations`` iterations (``ue_payoff_min_iterations_near`` for a loop
  near its rule, :class:`StopRule`), over a window of at least
  ``ue_payoff_min_window`` iterations after the transient (MSER truncation), every
  station's standard error is within ``ue_payoff_precision`` of its revenue
  (:mod:`evcs_gym.ue.stationary`). The payoff is the mean over that window
  (``"stationary_mean"``).
* ``"max_iterations"`` — neither within ``ue_max_iterations``: the payoff is the
  stationary mean over the MSER window of the whole loop, with whatever standard
  error it has.

With ``ue_stop_settled_ratio`` set, neither of the first two may end a loop whose
revenues are still in their transient: ``n`` iterations must hold a settled stretch
(after the MSER truncation ``d``) at least that many times as long as the transient,
``n − d ≥ ratio · d``. A loop from a distant start (free-flow routes) meets the gap
tolerances while the stations' shares still drift; one from the warm start is not held.

``converged`` means the rule was met, as always. Nothing here feeds back into the
switching, so a recorded loop (:class:`~evcs_gym.ue.evaluator.UETrace`) replays any
other cap, precision or window exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import ArrayLike

from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.ue.result import GapSummary, PayoffKind, StopReason
from evcs_gym.ue.stationary import ar1_standard_error, mser_truncation, stationary_estimate

__all__ = ["GapStats", "Payoff", "StopRule", "gap_summary", "settle_payoff"]

FINAL_ITERATION: Final = "final_iteration"
STATIONARY_MEAN: Final = "stationary_mean"


@dataclass(frozen=True)
class GapStats:
    """The stop rule's view of one UE iteration (relative gaps of completed platoons)."""

    mean_gap: float
    """Mean gap over all completed platoons."""
    charging_mean_gap: float
    """Mean gap over the completed charging platoons (0 if the scenario has none)."""
    charging_tail_share: float
    """Share of completed charging platoons whose gap exceeds the tail gap."""
    completed_ratio: float
    """Share of all platoons that completed their trip."""

    @classmethod
    def of(
        cls, gap: np.ndarray, completed: np.ndarray, charging: np.ndarray, tail_gap: float
    ) -> GapStats:
        """The statistics of one iteration's relative ``gap`` per platoon, with the tail
        share above ``tail_gap``.

        Example:
            >>> gap = np.array([0.0, 0.1, 0.02, 0.0])
            >>> done = np.array([True, True, True, False])
            >>> GapStats.of(gap, done, np.array([True, True, False, False]), 0.05)
            GapStats(mean_gap=0.04, charging_mean_gap=0.05, charging_tail_share=0.5, \
completed_ratio=0.75)
        """
        n = len(gap)
        done_ch = completed & charging
        if charging.any() and not done_ch.any():  # every charging trip stuck
            ch_mean, tail = 1.0, 1.0
        elif done_ch.any():
            ch_mean = float(gap[done_ch].mean())
            tail = float((gap[done_ch] > tail_gap).mean())
        else:
            ch_mean, tail = 0.0, 0.0
        return cls(
            mean_gap=float(gap[completed].mean()) if completed.any() else 1.0,
            charging_mean_gap=ch_mean,
            charging_tail_share=tail,
            completed_ratio=float(completed.mean()) if n else 1.0,
        )

    def excess(self, tol: Mapping[str, float]) -> float:
        """The largest ratio of a stop-rule criterion to its tolerance (≤ 1 when all hold).

        The completed criterion counts as the uncompleted share over the allowed one.
        A zero tolerance makes any positive value infinitely far.

        Example:
            >>> tol = {"mean_gap": 0.01, "charging_mean_gap": 0.01,
            ...        "charging_tail_share": 0.02, "min_completed_ratio": 0.95}
            >>> GapStats(0.005, 0.02, 0.01, 1.0).excess(tol)
            2.0
        """
        pairs = (
            (self.mean_gap, tol["mean_gap"]),
            (self.charging_mean_gap, tol["charging_mean_gap"]),
            (self.charging_tail_share, tol["charging_tail_share"]),
            (1.0 - self.completed_ratio, 1.0 - tol["min_completed_ratio"]),
        )
        return max(
            value / limit if limit > 0 else (0.0 if value <= 0 else float("inf"))
            for value, limit in pairs
        )

    def meets(self, tol: Mapping[str, float]) -> bool:
        """Whether this iteration satisfies the stop rule (``settings.stop_tolerances``)."""
        return (
            self.mean_gap <= tol["mean_gap"]
            and self.charging_mean_gap <= tol["charging_mean_gap"]
            and self.charging_tail_share <= tol["charging_tail_share"]
            and self.completed_ratio >= tol["min_completed_ratio"]
        )


def gap_summary(gap: np.ndarray) -> GapSummary:
    """Mean, p95, max and shares above 1 / 5 / 10 % of a set of relative gaps.

    Example:
        >>> gap_summary(np.array([0.0, 0.02, 0.2]))["share_above_5pct"]
        0.3333333333333333
    """
    if len(gap) == 0:
        nan = float("nan")
        return GapSummary(
            count=0,
            mean=nan,
            p95=nan,
            max=nan,
            share_above_1pct=nan,
            share_above_5pct=nan,
            share_above_10pct=nan,
        )
    return GapSummary(
        count=int(len(gap)),
        mean=float(gap.mean()),
        p95=float(np.percentile(gap, 95)),
        max=float(gap.max()),
        share_above_1pct=float((gap > 0.01).mean()),
        share_above_5pct=float((gap > 0.05).mean()),
        share_above_10pct=float((gap > 0.10).mean()),
    )


class StopRule:
    """When a UE loop ends: the stop rule, the stationary stop and the cap of ``settings``.

    Call :meth:`update` once per iteration, in order, with that iteration's gap
    statistics and each station's revenue; it returns ``"converged"``,
    ``"stationary"``, ``"max_iterations"`` or ``None`` (go on).

    The stationary stop waits longer for a loop far from its rule. A loop *near* its
    rule — the median over the stationary window of each iteration's
    :meth:`GapStats.excess` at most ``ue_payoff_near_excess`` — is close to an
    equilibrium it cannot quite hold (a spike, a learner's prices): it may stop after
    ``ue_payoff_min_iterations_near``. A loop far from it (on Sioux Falls, 15–30 % of
    the charging platoons above a 5 % gap at uniform-random prices) races between
    periods, and its start leaves a transient of 15–30 iterations that a shorter run
    cannot tell from the orbit: it waits ``ue_payoff_min_iterations``.

    Example:
        >>> s = ScenarioSettings(charging_nodes={"A": (0.5, 2.0)}, ue_max_iterations=40,
        ...                      ue_payoff_min_iterations=12, ue_payoff_min_window=8)
        >>> rule, far = StopRule(s), GapStats(0.05, 0.05, 0.3, 1.0)  # far from the rule
        >>> orbit = 1000.0 + 10.0 * np.sin(np.arange(40))  # a steady orbit, ±1 %
        >>> [rule.update(i, far, [r]) for i, r in enumerate(orbit)].index("stationary")
        11
    """

    def __init__(self, settings: ScenarioSettings) -> None:
        s = settings
        self.settings = s
        self.tol = s.stop_tolerances
        self.stable = 0
        self.revenues: list[np.ndarray] = []
        self.excess: list[float] = []

    def update(self, iteration: int, stats: GapStats, revenues: ArrayLike) -> StopReason | None:
        s = self.settings
        self.revenues.append(np.asarray(revenues, dtype=float))
        self.excess.append(stats.excess(self.tol))
        self.stable = self.stable + 1 if stats.meets(self.tol) else 0
        n = iteration + 1
        if self.stable >= s.ue_convergence_stable_rounds and self._settled(n):
            return "converged"
        shortest = min(s.ue_payoff_min_iterations_near, s.ue_payoff_min_iterations)
        if s.ue_payoff_precision > 0 and n >= shortest:
            est = stationary_estimate(np.array(self.revenues))
            near = float(np.median(self.excess[est.first :])) <= s.ue_payoff_near_excess
            if (
                n >= (s.ue_payoff_min_iterations_near if near else s.ue_payoff_min_iterations)
                and est.length >= s.ue_payoff_min_window
                and est.precise(s.ue_payoff_precision, s.ue_payoff_floor)
                and self._settled(n, est.first)
            ):
                return "stationary"
        if n >= s.ue_max_iterations:
            return "max_iterations"
        return None

    def _settled(self, n: int, transient: int | None = None) -> bool:
        """Whether ``n`` iterations hold a settled stretch long enough to stop on
        (``ue_stop_settled_ratio``): ``n − d ≥ ratio · d`` for the revenues' MSER
        truncation ``d`` (``transient``, when the caller has it); always, below
        ``ue_payoff_min_window`` iterations or with the ratio off."""
        ratio = self.settings.ue_stop_settled_ratio
        if ratio is None or n < self.settings.ue_payoff_min_window:
            return True
        d = mser_truncation(np.array(self.revenues)) if transient is None else transient
        return n - d >= ratio * d


@dataclass(frozen=True)
class Payoff:
    """What an evaluation answers: flows and the standard errors of its revenues.

    Attributes:
        kind: ``"final_iteration"`` (the loop met its rule) or ``"stationary_mean"``.
        first: index (0-based) of the first iteration averaged.
        stop: one past the last (the window is iterations ``first .. stop - 1``).
        flows: ``(n_agents, n_periods)`` vehicles that started charging in each period,
            averaged over the window.
        revenue_se: ``(n_agents,)`` standard error of each station's revenue (see
            :func:`settle_payoff`).
        reward_se: the same for the rewards (equal to ``revenue_se`` without an energy
            cost).
        autocorrelation_time: ``τ`` of the stationary estimate (nan for a converged loop).
    """

    kind: PayoffKind
    first: int
    stop: int
    flows: np.ndarray
    revenue_se: np.ndarray
    reward_se: np.ndarray
    autocorrelation_time: float

    @property
    def window(self) -> tuple[int, int]:
        """The iterations averaged, 1-based and inclusive: ``(first + 1, stop)``."""
        return self.first + 1, self.stop


def _earnings(per_kwh: np.ndarray, flows: np.ndarray, energy: float) -> np.ndarray:
    """Σ over periods of ``per_kwh`` × flow × energy, per station (and per iteration of a
    history): the revenue with prices, the reward with margins (price − energy cost)."""
    return (per_kwh * flows * energy).sum(axis=-1)


def settle_payoff(
    flows: np.ndarray, prices: np.ndarray, settings: ScenarioSettings, stop_reason: str
) -> Payoff:
    """The payoff of a loop from its per-iteration ``flows`` and why it stopped.

    * ``"converged"``: the final iteration. Its standard error is the standard
      deviation of each station's revenue over the last ``ue_convergence_stable_rounds``
      iterations, all of which met the rule: how far one settled iteration may sit from
      another (0 when they agree).
    * otherwise: the mean over the stationary window (MSER truncation of the revenue
      history, :func:`~evcs_gym.ue.stationary.stationary_estimate`) and its AR(1) standard
      error.

    Args:
        flows: ``(n_iterations, n_agents, n_periods)`` flows of every iteration.
        prices: ``(n_agents, n_periods)`` prices of the evaluation.
        settings: the scenario's settings (energy per vehicle, energy cost, rounds).
        stop_reason: as :meth:`StopRule.update` returned it.

    Example:
        >>> s = ScenarioSettings(charging_nodes={"A": (0.5, 2.0)}, charging_demand_per_vehicle=1)
        >>> hist = np.array([[[9.0]], [[4.0]], [[6.0]], [[4.0]], [[6.0]]])
        >>> p = settle_payoff(hist, np.ones((1, 1)), s, "max_iterations")
        >>> p.kind, p.window, p.flows.tolist()
        ('stationary_mean', (2, 5), [[5.0]])
        >>> settle_payoff(hist, np.ones((1, 1)), s, "converged").flows.tolist()
        [[6.0]]
    """
    s = settings
    energy = s.charging_demand_per_vehicle
    revenues = _earnings(prices, flows, energy)
    rewards = _earnings(prices - s.energy_cost_per_kwh, flows, energy)
    n = len(flows)
    if stop_reason == "converged":
        rounds = min(s.ue_convergence_stable_rounds, n)

        def spread(x: np.ndarray) -> np.ndarray:
            return x[n - rounds :].std(axis=0, ddof=1) if rounds >= 2 else np.zeros(x.shape[1])

        return Payoff(
            FINAL_ITERATION,
            n - 1,
            n,
            flows[-1].copy(),
            spread(revenues),
            spread(rewards),
            float("nan"),
        )
    first = mser_truncation(revenues)
    est = stationary_estimate(revenues[first:], max_fraction=0.0)
    reward_se, _ = ar1_standard_error(rewards[first:])
    return Payoff(
        STATIONARY_MEAN,
        first,
        n,
        flows[first:].mean(axis=0),
        est.se,
        reward_se,
        est.tau,
    )
