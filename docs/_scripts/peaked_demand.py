"""Write a game's ``<name>_demand.csv``: another scenario's demand with a peak.

Each row ``orig,dest,start_t,end_t,q`` of the source becomes one row per window, whose
rate is ``q`` times that window's multiplier. The bundled ``siouxfalls_market`` demand is

    python docs/_scripts/peaked_demand.py siouxfalls siouxfalls_market

from Sioux Falls' constant demand over 0-4800 s: three windows of 2400 s at 0.4, 1.2
and 0.4 times the rate (a rush hour in the middle, with Sioux Falls' trips in all).
``--check`` compares instead of writing (a test runs it).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "evcs_gym" / "scenarios"
WINDOW = 2400.0
"""Length of each window, in s."""
MULTIPLIERS = (0.4, 1.2, 0.4)
"""Rate of each window as a multiple of the source row's rate."""


def peaked_rows(
    rows: list[dict[str, str]], window: float = WINDOW, multipliers: tuple[float, ...] = MULTIPLIERS
) -> list[tuple[str, str, float, float, float]]:
    """One row per source row and window, the windows back to back from time 0.

    Example:
        >>> row = {"orig": "1", "dest": "2", "start_t": "0", "end_t": "4800", "q": "0.01"}
        >>> [(t0, t1, q) for _, _, t0, t1, q in peaked_rows([row])]
        [(0.0, 2400.0, 0.004), (2400.0, 4800.0, 0.012), (4800.0, 7200.0, 0.004)]
    """
    out = []
    for row in rows:
        q = float(row["q"])
        for k, m in enumerate(multipliers):
            out.append((row["orig"], row["dest"], k * window, (k + 1) * window, round(q * m, 9)))
    return out


def render(source: str) -> str:
    with open(SCENARIOS / source / f"{source}_demand.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["orig", "dest", "start_t", "end_t", "q"])
    for o, d, t0, t1, q in peaked_rows(rows):
        writer.writerow([o, d, f"{t0:g}", f"{t1:g}", f"{q:.9g}"])
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="scenario whose demand is peaked, e.g. siouxfalls")
    parser.add_argument("game", help="scenario folder that receives <game>_demand.csv")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    target = SCENARIOS / args.game / f"{args.game}_demand.csv"
    text = render(args.source)
    if args.check:
        same = target.is_file() and target.read_text(encoding="utf-8") == text
        print(f"{target.relative_to(ROOT)}: {'up to date' if same else 'differs'}")
        return 0 if same else 1
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
