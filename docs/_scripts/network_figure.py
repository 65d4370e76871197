"""Draw ``docs/assets/siouxfalls.png``: the Sioux Falls network and its charging stations.

Reads the scenario's node, link and demand CSVs and its settings file only (no
simulation), so the picture does not depend on the evaluator.

Run from the repository root: ``python docs/_scripts/network_figure.py``
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "evcs_gym" / "scenarios" / "siouxfalls"
OUT = ROOT / "docs" / "assets" / "siouxfalls.png"


def _rows(name: str) -> list[dict[str, str]]:
    with open(SCENARIO / f"siouxfalls_{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def main() -> None:
    xy = {r["name"]: (float(r["x"]), float(r["y"])) for r in _rows("nodes")}
    settings = json.loads((SCENARIO / "siouxfalls_settings.json").read_text())
    stations = list(settings["charging_nodes"])
    departures: dict[str, float] = defaultdict(float)  # vehicles leaving each node
    for r in _rows("demand"):
        departures[r["orig"]] += float(r["q"]) * (float(r["end_t"]) - float(r["start_t"]))

    fig, ax = plt.subplots(figsize=(6.4, 7.2), dpi=110)
    for link in _rows("links"):
        (x0, y0), (x1, y1) = xy[link["start"]], xy[link["end"]]
        ax.plot([x0, x1], [y0, y1], color="0.55", lw=1.6, zorder=1, solid_capstyle="round")
    biggest = max(departures.values())
    for name, (x, y) in xy.items():
        size = 40 + 260 * departures[name] / biggest
        is_station = name in stations
        ax.scatter(
            x,
            y,
            s=size,
            zorder=3,
            color="#e4572e" if is_station else "#29335c",
            edgecolor="white",
            linewidth=1.2,
        )
        ax.annotate(
            f"station {name}" if is_station else name,
            (x, y),
            xytext=(6, 5),
            textcoords="offset points",
            fontsize=10 if is_station else 7,
            fontweight="bold" if is_station else "normal",
            color="#e4572e" if is_station else "#29335c",
            zorder=4,
        )
    total = sum(departures.values())
    charging = total * float(settings["charging_car_rate"])
    ax.set_title(
        "Sioux Falls: 24 nodes, 76 links, 4 charging stations\n"
        f"{round(total, -2):,.0f} trips, {round(charging, -1):,.0f} of them charge once en route",
        fontsize=11,
    )
    ax.set_aspect("equal")
    ax.axis("off")
    ax.text(
        0.0,
        -0.02,
        "dot size: trips starting at the node; red: stations setting 8 prices each",
        transform=ax.transAxes,
        fontsize=8,
        color="0.3",
    )
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT)
    print(f"written to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
