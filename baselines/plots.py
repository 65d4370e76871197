"""PNG plots of a run (matplotlib, Agg backend): prices, revenues, NashConv, UE iterations."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from evcs_gym.baselines.history import GameHistory  # noqa: E402

__all__ = ["plot_run"]


def plot_run(history: GameHistory, folder: str | Path, title: str = "") -> list[Path]:
    """Write the run's plots into ``folder`` and return their paths.

    Files: ``prices.png`` (pure price per station and period over evaluations),
    ``revenues.png``, ``nashconv.png`` (critic and verified NashConv, strategy change),
    ``ue_iterations.png``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    agents = history.agents
    n_periods = history.n_periods
    prices = history.price_array(pure=True)
    x = np.arange(len(prices))

    fig, axes = plt.subplots(
        len(agents), 1, figsize=(9, 2.2 * len(agents) + 0.6), sharex=True, squeeze=False
    )
    cmap = plt.get_cmap("viridis", max(n_periods, 2))
    for i, a in enumerate(agents):
        ax = axes[i, 0]
        for p in range(n_periods):
            ax.plot(x, prices[:, i, p], color=cmap(p), lw=1, label=f"period {p}")
        ax.set_ylabel(f"station {a}\nprice")
    axes[0, 0].legend(ncol=min(n_periods, 8), fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("evaluation")
    fig.suptitle(f"{title} pure prices".strip())
    fig.tight_layout()
    paths.append(_save(fig, folder / "prices.png"))

    rewards = history.reward_array()
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for i, a in enumerate(agents):
        ax.plot(np.arange(len(rewards)), rewards[:, i], lw=0.8, label=a)
    if len(rewards):
        ax.plot(np.arange(len(rewards)), rewards.sum(axis=1), color="k", lw=1.2, label="total")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("revenue")
    ax.legend(fontsize=7)
    ax.set_title(f"{title} revenues".strip())
    fig.tight_layout()
    paths.append(_save(fig, folder / "revenues.png"))

    ck = history.checkpoints
    fig, ax = plt.subplots(figsize=(9, 3.5))
    if ck:
        ev = [c.evaluations for c in ck]
        ax.plot(ev, [c.critic_nash_conv for c in ck], "o-", label="critic NashConv (relative)")
        verified = [
            (c.evaluations, c.verified_nash_conv) for c in ck if np.isfinite(c.verified_nash_conv)
        ]
        if verified:
            ax.plot(*zip(*verified), "s-", label="verified NashConv (relative)")
        ax.plot(ev, [c.strategy_change for c in ck], "^-", label="strategy change")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.legend(fontsize=7)
    ax.set_xlabel("evaluations")
    ax.set_title(f"{title} exploitability".strip())
    fig.tight_layout()
    paths.append(_save(fig, folder / "nashconv.png"))

    fig, ax = plt.subplots(figsize=(9, 3))
    iters = [r.ue_iterations for r in history.evaluations]
    ax.plot(np.arange(len(iters)), iters, ".", ms=3)
    ax.set_xlabel("evaluation")
    ax.set_ylabel("UE iterations")
    ax.set_title(f"{title} UE iterations per evaluation".strip())
    fig.tight_layout()
    paths.append(_save(fig, folder / "ue_iterations.png"))
    return paths


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
