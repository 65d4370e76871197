"""The certificate of a price profile: each station's best deviation, re-evaluated on seeds.

:class:`StationDeviation` holds one station's best unilateral deviation found by the
search and its paired gain on every verification seed (common random numbers: the
deviation and the profile share each seed); :class:`ExploitabilityResult` holds every
station's, the NashConv (the sum of the mean gains, clipped at 0) and what the search
did, and prints the certificate (:meth:`ExploitabilityResult.summary`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.equilibrium.search_spec import PERIOD_STEP

__all__ = ["ExploitabilityResult", "StationDeviation"]


def _json_float(value: float) -> float | None:
    """``value`` as a float, or ``None`` when it is nan (JSON has no nan)."""
    value = float(value)
    return None if math.isnan(value) else value


@dataclass
class StationDeviation:
    """The best unilateral deviation found for one station, re-evaluated on every seed.

    ``current_reward`` and ``best_reward`` are means over ``seeds``; ``current_rewards``
    and ``best_rewards`` hold the per-seed values (same seed for both: common random
    numbers). Built with only the first five fields it describes a single seed.

    Example:
        >>> d = StationDeviation("A", 100.0, 110.0, np.ones(4), 20,
        ...                      current_rewards=np.array([100.0, 98.0, 102.0]),
        ...                      best_rewards=np.array([110.0, 106.0, 114.0]), seeds=(0, 1, 2))
        >>> d.gain, round(d.gain_se, 3), d.significant
        (10.0, 1.155, True)
    """

    station: str
    current_reward: float
    best_reward: float
    best_prices: np.ndarray
    evaluations: int
    """Simulator runs of the search: the budget method counts them (cached profiles cost
    nothing); the converged search, whose candidates run in batches shared by every
    station, gives its distinct candidates × the search seeds."""
    current_rewards: np.ndarray = field(default_factory=lambda: np.zeros(0))
    best_rewards: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seeds: tuple[int, ...] = ()
    significance_z: float = 2.0
    search: dict[str, Any] = field(default_factory=dict)
    """What the search tried (see :func:`best_response`, ``stats``)."""

    def __post_init__(self) -> None:
        if len(self.current_rewards) == 0:
            self.current_rewards = np.array([self.current_reward], dtype=float)
        if len(self.best_rewards) == 0:
            self.best_rewards = np.array([self.best_reward], dtype=float)
        self.current_rewards = np.asarray(self.current_rewards, dtype=float)
        self.best_rewards = np.asarray(self.best_rewards, dtype=float)
        if self.current_rewards.shape != self.best_rewards.shape:
            raise ValueError("`current_rewards` and `best_rewards` must have the same length")

    @property
    def n_seeds(self) -> int:
        return len(self.current_rewards)

    @property
    def gains(self) -> np.ndarray:
        """Per-seed paired gains ``best_rewards - current_rewards`` (may be negative)."""
        return self.best_rewards - self.current_rewards

    @property
    def mean_gain(self) -> float:
        """Mean paired gain over the seeds, not clipped (negative: the deviation loses)."""
        return float(np.mean(self.gains))

    @property
    def gain(self) -> float:
        """Mean gain clipped at 0: the station's NashConv term."""
        return max(0.0, self.mean_gain)

    @property
    def gain_se(self) -> float:
        """Standard error of the mean gain: sample std (ddof 1) / sqrt(n); nan for 1 seed."""
        n = self.n_seeds
        if n < 2:
            return math.nan
        return float(np.std(self.gains, ddof=1) / math.sqrt(n))

    @property
    def significant(self) -> bool:
        """``mean_gain > significance_z * gain_se``; with a single seed just ``gain > 0``."""
        if self.n_seeds < 2:
            return self.mean_gain > 0
        return self.mean_gain > self.significance_z * self.gain_se

    @property
    def relative_gain(self) -> float:
        """Gain divided by the station's current reward (inf if that is 0 and gain > 0)."""
        if self.current_reward > 0:
            return self.gain / self.current_reward
        return math.inf if self.gain > 0 else 0.0

    @property
    def relative_gain_se(self) -> float:
        """``gain_se`` divided by the current reward (nan if that is not positive)."""
        return self.gain_se / self.current_reward if self.current_reward > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe fields (nan standard errors become ``None``)."""
        return {
            "current_reward": self.current_reward,
            "best_reward": self.best_reward,
            "gain": self.gain,
            "relative_gain": self.relative_gain,
            "best_prices": self.best_prices.tolist(),
            "evaluations": self.evaluations,
            "mean_gain": self.mean_gain,
            "gain_se": _json_float(self.gain_se),
            "relative_gain_se": _json_float(self.relative_gain_se),
            "significant": bool(self.significant),
            "current_rewards": self.current_rewards.tolist(),
            "best_rewards": self.best_rewards.tolist(),
            "search": dict(self.search),
        }


@dataclass
class ExploitabilityResult:
    """Per-station deviations and the NashConv of a profile (simulator-verified).

    ``rewards`` are the stations' mean rewards at the profile over ``seeds`` (per seed in
    ``seed_rewards``); ``seed`` is the search seed ``seeds[0]``; ``evaluations`` counts
    every simulator run (searches and re-evaluations).
    """

    prices: dict[str, np.ndarray]
    rewards: dict[str, float]
    deviations: dict[str, StationDeviation]
    seed: int
    evaluations: int
    meta: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = ()
    significance_z: float = 2.0
    seed_rewards: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.seeds:
            self.seeds = (self.seed,)

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @property
    def nash_conv(self) -> float:
        """Sum over stations of the best deviation gain (currency)."""
        return float(sum(d.gain for d in self.deviations.values()))

    @property
    def nash_conv_se(self) -> float:
        """``sqrt(sum of the stations' gain_se²)``; nan with a single seed.

        Treats the stations' gain estimates as independent. They share the seeds, so
        they may be correlated and this is an approximation; it also ignores the clipping
        of negative mean gains at 0.
        """
        return float(math.sqrt(sum(d.gain_se**2 for d in self.deviations.values())))

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards.values()))

    @property
    def relative_nash_conv(self) -> float:
        """NashConv divided by the total revenue at the profile."""
        total = self.total_reward
        return self.nash_conv / total if total > 0 else (math.inf if self.nash_conv else 0.0)

    @property
    def relative_nash_conv_se(self) -> float:
        """``nash_conv_se`` / total revenue (the noise of the total itself is ignored)."""
        total = self.total_reward
        return self.nash_conv_se / total if total > 0 else math.nan

    @property
    def converged(self) -> bool | None:
        """Whether every station's search converged at its resolution (None: the
        fixed-budget search, which stops at its budget)."""
        if self.meta.get("search_method") != "converged":
            return None
        return all(bool(d.search.get("converged")) for d in self.deviations.values())

    @property
    def max_relative_gain(self) -> float:
        return max((d.relative_gain for d in self.deviations.values()), default=0.0)

    @property
    def significant_stations(self) -> list[str]:
        """Stations whose gain is significant (see :attr:`StationDeviation.significant`)."""
        return [a for a, d in self.deviations.items() if d.significant]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (nan standard errors become ``None``); ``meta`` is merged in."""
        return {
            "prices": {a: v.tolist() for a, v in self.prices.items()},
            "rewards": self.rewards,
            "seed": self.seed,
            "seeds": list(self.seeds),
            "evaluations": self.evaluations,
            "nash_conv": self.nash_conv,
            "nash_conv_se": _json_float(self.nash_conv_se),
            "relative_nash_conv": self.relative_nash_conv,
            "relative_nash_conv_se": _json_float(self.relative_nash_conv_se),
            "max_relative_gain": self.max_relative_gain,
            "significance_z": self.significance_z,
            "significant_stations": self.significant_stations,
            "converged": self.converged,
            "rewards_per_seed": {a: np.asarray(v).tolist() for a, v in self.seed_rewards.items()},
            "deviations": {a: d.to_dict() for a, d in self.deviations.items()},
            **self.meta,
        }

    def summary(self) -> str:
        """NashConv ± SE, the search's reach, and each station's gain ± SE (``*``: significant)."""
        multi = self.n_seeds > 1
        joint = self.meta.get("objective", "own") == "total"
        nc = f"{'joint gain' if joint else 'NashConv'} {self.nash_conv:.1f}"
        rel = f"{self.relative_nash_conv:.2%}"
        if multi:
            nc += f" ± {self.nash_conv_se:.1f}"
            rel += f" ± {self.relative_nash_conv_se:.2%}"
        seeds = ", ".join(str(s) for s in self.seeds)
        lines = [
            f"{nc} = {rel} of total revenue {self.total_reward:.1f} "
            f"({self.evaluations} evaluations; {self.n_seeds} seed{'s' * multi} [{seeds}])",
            f"  search on {_describe_seeds(self.meta.get('search_seeds', [self.seed]))}"
            f"{' (held out)' if self.meta.get('held_out') else ''}: "
            + _describe_search(self.meta, list(self.deviations.values())),
        ]
        for a, d in self.deviations.items():
            se = f" ± {d.gain_se:8.1f}" if multi else ""
            rel_se = f" ± {d.relative_gain_se:.1%}" if multi else ""
            mark = " *" if d.significant else ""
            lines.append(
                f"  {a:>6}: {'total' if joint else 'reward'} {d.current_reward:10.1f} -> "
                f"best {'move' if joint else 'deviation'} "
                f"{d.best_reward:10.1f}  gain {d.gain:9.1f}{se} "
                f"({d.relative_gain:.1%}{rel_se}){mark}"
            )
        if multi:
            lines.append(
                f"  * significant: mean paired gain > {self.significance_z:g} SE over "
                f"{self.n_seeds} seeds (NashConv SE treats stations as independent)"
            )
        else:
            lines.append(
                "  * gain > 0 on the single seed (no noise estimate: pass seeds= for "
                "standard errors)"
            )
        return "\n".join(lines)


def _describe_search(meta: dict[str, Any], devs: list[StationDeviation]) -> str:
    """One line: what the search tried and, for the converged search, where it stopped."""
    if not devs:
        return "no stations checked"
    stats = [d.search for d in devs]
    line = (
        _describe_converged(meta, stats)
        if meta.get("search_method") == "converged"
        else _describe_budget(meta, stats)
    )
    if meta.get("search_settings_hash"):
        line += f", scored on the payoffs of settings {meta['search_settings_hash']}"
    return line


def _span(stats: list[dict[str, Any]], key: str) -> str:
    """``"5"`` or ``"3-7"``: the range of an integer statistic over the stations."""
    values = sorted({int(s.get(key, 0)) for s in stats})
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def _describe_converged(meta: dict[str, Any], stats: list[dict[str, Any]]) -> str:
    """The converged search: its reach, its resolution, and whether every station's
    pattern search converged or some hit the cap."""
    spec = meta.get("search", {})
    converged = sum(bool(s.get("converged")) for s in stats)
    resolutions = sorted({round(float(s.get("resolution", 0.0)), 4) for s in stats})
    res = "/".join(f"{r:.3g}" for r in resolutions)
    state = (
        f"converged for {converged} of {len(stats)} station(s) at resolution {res} "
        f"({_share(spec.get('resolution', 0.0))} of the range)"
    )
    if converged < len(stats):
        state += f"; {len(stats) - converged} capped at {meta.get('budget_per_station')}"
    parts = [
        f"bounds, {spec.get('grid', '?')} levels, combined move, pattern searches from "
        f"{_share(spec.get('period_step', PERIOD_STEP))} of the range"
        + (
            " (from the best of those and from the current prices)"
            if spec.get("from_current")
            else ""
        ),
        state,
        f"{_span(stats, 'candidates')} candidates and {_span(stats, 'passes')} passes per "
        f"station, {_span(stats, 'live_periods')} live periods",
    ]
    if spec.get("rounds", 1) > 1:
        parts.append(f"{spec['rounds']} rounds")
    if spec.get("restarts"):
        parts.append(f"{spec['restarts']} random restarts")
    return ", ".join(parts)


def _share(x: float) -> str:
    """``1/12`` for a twelfth, else the number."""
    if x > 0 and abs(1 / x - round(1 / x)) < 1e-6:
        return f"1/{round(1 / x)}"
    return f"{x:.3g}"


def _describe_budget(meta: dict[str, Any], stats: list[dict[str, Any]]) -> str:
    """The fixed-budget search (evcs-gym 0.3.0's): what its budget reached."""
    parts = [
        f"<= {meta.get('budget_per_station', '?')} evaluations per station (used "
        f"{_span(stats, 'candidates')})",
        f"{_span(stats, 'grid')} uniform levels",
    ]
    if any(s.get("starts", 0) for s in stats):
        parts.append(f"{_span(stats, 'starts')} starts")
    moves = meta.get("period_moves")
    if moves is None:
        parts.append("no single-period moves")
    else:
        step = meta.get("period_step", PERIOD_STEP) * 1.0
        parts.append(
            f"{_span(stats, 'period_moves')} single-period moves (bounds"
            + (f", ±1..{moves} x {step:.3g} of the range" if moves else "")
            + ")"
        )
        combined = sum(bool(s.get("combined")) for s in stats)
        parts.append(f"combined move for {combined} of {len(stats)} station(s)")
    if any(s.get("de_generations", 0) for s in stats):
        parts.append(
            f"DE {_span(stats, 'de_generations')} generations of {_span(stats, 'de_population')} "
            f"({_span(stats, 'de_restarts')} restarts)"
        )
    else:
        parts.append("no DE (budget spent)")
    return "fixed budget: " + ", ".join(parts)


def _describe_seeds(seeds: Sequence[int]) -> str:
    """``"seed 0"`` or ``"the mean of seeds [0, 1]"``."""
    seeds = list(seeds)
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"the mean of seeds {seeds}"
