"""Draw ``docs/assets/<scenario>_prices.png``: a market game's Nash and collusive
reference prices per period, one panel per station, over grey bars of the vehicles
that charge there in each period at the Nash reference (one evaluation, seed 0): a
period few drivers charge in has a weakly determined price.

Run from the repository root: ``python docs/_scripts/market_prices_figure.py tiny_market``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

import evcs_gym  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main(name: str) -> Path:
    folder = ROOT / "evcs_gym" / "scenarios" / name
    refs = json.loads((folder / f"{name}_references.json").read_text())
    settings = json.loads((folder / f"{name}_settings.json").read_text())
    stations = list(refs["nash"]["prices"])
    nd = evcs_gym.load_scenario(name)
    flows = evcs_gym.EVCSRewardEvaluator(nd).evaluate(refs["nash"]["prices"], seed=0).flows
    top = max(float(max(f)) for f in flows.values())
    fig, axes = plt.subplots(1, len(stations), figsize=(3.2 * len(stations), 2.8), sharey=True)
    for ax, station in zip(axes if len(stations) > 1 else [axes], stations):
        low, high = settings["charging_nodes"][station]
        bars = ax.twinx()
        n = len(flows[station])
        bars.bar(range(1, n + 1), flows[station], color="0.88", width=0.7, zorder=0)
        bars.set_ylim(0, 1.1 * top)
        bars.set_yticks([])
        ax.set_zorder(bars.get_zorder() + 1)
        ax.patch.set_visible(False)
        for kind, style in (("nash", "o-"), ("collusive", "s--")):
            prices = refs[kind]["prices"][station]
            ax.plot(range(1, len(prices) + 1), prices, style, label=kind)
        ax.axhline(low, color="grey", lw=0.8)
        ax.axhline(high, color="grey", lw=0.8)
        ax.set_title(f"station {station}")
        ax.set_xlabel("period")
        ax.set_xticks(range(1, len(prices) + 1))
    axes_list = axes if len(stations) > 1 else [axes]
    axes_list[0].set_ylabel("price per kWh")
    handles, labels = axes_list[0].get_legend_handles_labels()
    handles.append(Patch(color="0.88"))
    labels.append("vehicles charging at nash")
    axes_list[0].legend(handles, labels, loc="best", fontsize=7)
    fig.tight_layout()
    out = ROOT / "docs" / "assets" / f"{name}_prices.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "tiny_market"))
