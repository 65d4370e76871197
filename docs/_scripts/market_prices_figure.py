"""Draw ``docs/assets/<scenario>_prices.png``: a market game's Nash and collusive
reference prices per period, one panel per station.

Reads the scenario's ``<name>_references.json`` and settings only (no simulation).

Run from the repository root: ``python docs/_scripts/market_prices_figure.py tiny_market``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main(name: str) -> Path:
    folder = ROOT / "evcs_gym" / "scenarios" / name
    refs = json.loads((folder / f"{name}_references.json").read_text())
    settings = json.loads((folder / f"{name}_settings.json").read_text())
    stations = list(refs["nash"]["prices"])
    fig, axes = plt.subplots(1, len(stations), figsize=(3.2 * len(stations), 2.8), sharey=True)
    for ax, station in zip(axes if len(stations) > 1 else [axes], stations):
        low, high = settings["charging_nodes"][station]
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
    axes_list[0].legend(loc="best", fontsize=8)
    fig.tight_layout()
    out = ROOT / "docs" / "assets" / f"{name}_prices.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else "tiny_market"))
