"""GameHistory: every evaluation of a run, its checkpoints, and the files a run writes.

A run's results folder holds ``evaluations.csv`` (one row per evaluation × station ×
period), ``checkpoints.csv`` (one row per NashConv check), ``summary.json``, the
algorithm's weights and the PNG plots of :mod:`evcs_gym.baselines.plots`.
"""

from __future__ import annotations

import csv
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evcs_gym.utils import to_jsonable

__all__ = ["Checkpoint", "EvaluationRecord", "GameHistory"]


@dataclass
class EvaluationRecord:
    """One simulator evaluation of a joint price profile."""

    eval_id: int
    batch: int
    kind: str
    """``"train"`` (noisy actions, stored and learned from) or ``"eval"`` (pure actions)."""
    prices: dict[str, np.ndarray]
    pure_prices: dict[str, np.ndarray]
    rewards: dict[str, float]
    flows: dict[str, np.ndarray]
    ue_iterations: int = 0
    converged: bool = True
    relative_gap: float = float("nan")


@dataclass
class Checkpoint:
    """A periodic measurement of the pure strategy during training."""

    evaluations: int
    batch: int
    pure_prices: dict[str, np.ndarray]
    total_reward: float
    strategy_change: float
    critic_nash_conv: float = float("nan")
    verified_nash_conv: float = float("nan")
    """Relative NashConv verified in the simulator (NaN where not measured)."""
    extra: dict[str, Any] = field(default_factory=dict)


class GameHistory:
    """Append-only record of a run.

    Example:
        >>> import numpy as np
        >>> h = GameHistory(["A"], n_periods=2)
        >>> _ = h.record(0, "train", {"A": np.array([1.0, 2.0])}, {"A": np.array([1.0, 2.0])},
        ...              {"A": 3.0}, {"A": np.array([1.0, 1.0])})
        >>> len(h.evaluations)
        1
    """

    def __init__(self, agents: list[str] | tuple[str, ...], n_periods: int) -> None:
        self.agents = list(agents)
        self.n_periods = n_periods
        self.evaluations: list[EvaluationRecord] = []
        self.checkpoints: list[Checkpoint] = []

    def record(
        self,
        batch: int,
        kind: str,
        prices: dict[str, np.ndarray],
        pure_prices: dict[str, np.ndarray],
        rewards: dict[str, float],
        flows: dict[str, np.ndarray],
        ue_iterations: int = 0,
        converged: bool = True,
        relative_gap: float = float("nan"),
    ) -> EvaluationRecord:
        rec = EvaluationRecord(
            eval_id=len(self.evaluations),
            batch=batch,
            kind=kind,
            prices={a: np.asarray(v, dtype=float).copy() for a, v in prices.items()},
            pure_prices={a: np.asarray(v, dtype=float).copy() for a, v in pure_prices.items()},
            rewards={a: float(v) for a, v in rewards.items()},
            flows={a: np.asarray(v, dtype=float).copy() for a, v in flows.items()},
            ue_iterations=int(ue_iterations),
            converged=bool(converged),
            relative_gap=float(relative_gap),
        )
        self.evaluations.append(rec)
        return rec

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.checkpoints.append(checkpoint)

    # ------------------------------------------------------------------ arrays
    def price_array(self, pure: bool = True, kind: str | None = None) -> np.ndarray:
        """(n_evaluations, n_agents, n_periods) prices."""
        recs = [r for r in self.evaluations if kind is None or r.kind == kind]
        key = "pure_prices" if pure else "prices"
        if not recs:
            return np.zeros((0, len(self.agents), self.n_periods))
        return np.array([[getattr(r, key)[a] for a in self.agents] for r in recs])

    def reward_array(self, kind: str | None = None) -> np.ndarray:
        recs = [r for r in self.evaluations if kind is None or r.kind == kind]
        return np.array([[r.rewards[a] for a in self.agents] for r in recs]).reshape(
            -1, len(self.agents)
        )

    # ------------------------------------------------------------------ files
    def write_csv(self, folder: str | Path) -> tuple[Path, Path]:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        ev_path = folder / "evaluations.csv"
        with open(ev_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                [
                    "eval_id",
                    "batch",
                    "kind",
                    "station",
                    "period",
                    "price",
                    "pure_price",
                    "flow",
                    "reward",
                    "ue_iterations",
                    "converged",
                    "relative_gap",
                ]
            )
            for r in self.evaluations:
                for a in self.agents:
                    for p in range(self.n_periods):
                        w.writerow(
                            [
                                r.eval_id,
                                r.batch,
                                r.kind,
                                a,
                                p,
                                f"{r.prices[a][p]:.6g}",
                                f"{r.pure_prices[a][p]:.6g}",
                                f"{r.flows[a][p]:.6g}",
                                f"{r.rewards[a]:.6g}",
                                r.ue_iterations,
                                int(r.converged),
                                f"{r.relative_gap:.6g}",
                            ]
                        )
        ck_path = folder / "checkpoints.csv"
        with open(ck_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                [
                    "evaluations",
                    "batch",
                    "total_reward",
                    "strategy_change",
                    "critic_nash_conv",
                    "verified_nash_conv",
                ]
            )
            for c in self.checkpoints:
                w.writerow(
                    [
                        c.evaluations,
                        c.batch,
                        f"{c.total_reward:.6g}",
                        f"{c.strategy_change:.6g}",
                        f"{c.critic_nash_conv:.6g}",
                        f"{c.verified_nash_conv:.6g}",
                    ]
                )
        return ev_path, ck_path

    @staticmethod
    def write_summary(folder: str | Path, summary: dict[str, Any]) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "summary.json"
        path.write_text(json.dumps(to_jsonable(summary), indent=2, sort_keys=False))
        return path


def versions() -> dict[str, str]:
    """Versions of the packages a run depends on (for summary.json)."""
    import gymnasium
    import pettingzoo
    import uxsim

    from evcs_gym._version import __version__

    out = {
        "python": platform.python_version(),
        "evcs_gym": __version__,
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "pettingzoo": pettingzoo.__version__,
        "uxsim": getattr(uxsim, "__version__", "?"),
    }
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover
        pass
    return out
