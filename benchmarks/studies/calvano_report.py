"""The report and plots of the Calvano study (``calvano.py``): summaries over sessions,
the deep learners' repeated-game records beside them, ``delta.png``, ``impulse_<part>.png``
and ``report.md``."""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import evcs_gym
from evcs_gym.tabular import PayoffTable

__all__ = ["deep_learners", "summarize", "write"]

REPO = Path(__file__).resolve().parents[2]
CALVANO = {"delta": 0.849, "delta_sd": 0.112, "one_shot_equilibria": 0.505}
"""Calvano et al. (2020), Table I, their baseline (1,000 sessions)."""
TITLES = {
    "anchor": "Calvano's logit market, closed form",
    "simulator": "Calvano's logit market, through the simulator",
    "tiny_market": "`tiny_market`",
    "siouxfalls_market": "`siouxfalls_market`",
}


# ---------------------------------------------------------------------- summaries
def summarize(sessions: list[dict[str, Any]], table: PayoffTable) -> dict[str, Any]:
    """Figures over sessions: Δ, convergence, cycles, equilibrium checks, limit prices,
    punishments."""
    deltas = np.array([s["delta"] for s in sessions])
    converged = np.array([s["converged"] for s in sessions])
    rounds = np.array([s["rounds_to_converge"] for s in sessions if s["converged"]])
    cycles = np.bincount([len(s["cycle"]) for s in sessions])
    return {
        "sessions": len(sessions),
        "converged": float(converged.mean()),
        "rounds_to_converge": _spread(rounds),
        "delta": _delta(deltas),
        "cycle_lengths": {int(k): int(v) for k, v in enumerate(cycles) if v},
        "one_shot_equilibria": float(np.mean([s["one_shot_gain"] == 0 for s in sessions])),
        "best_reply_equilibria": float(np.mean([s["best_reply_gain"] == 0 for s in sessions])),
        "one_shot_gain": float(np.mean([s["one_shot_gain"] for s in sessions])),
        "best_reply_gain": float(np.mean([s["best_reply_gain"] for s in sessions])),
        "stage_nash_conv": float(np.mean([s["nash_conv"] for s in sessions])),
        "limit": _limit(sessions, table),
        "impulse": [_impulse(sessions, i, table) for i in range(table.n_agents)],
    }


def _spread(values: np.ndarray) -> dict[str, float] | None:
    if len(values) == 0:
        return None
    return {"mean": float(values.mean()), "median": float(np.median(values)),
            "max": float(values.max())}  # fmt: skip


def _delta(deltas: np.ndarray) -> dict[str, float]:
    """Mean with its 95 % confidence interval, and the 2.5–97.5 % range of sessions."""
    from scipy.stats import t as student

    n = len(deltas)
    sd = float(deltas.std(ddof=1)) if n > 1 else float("nan")
    half = float(student.ppf(0.975, n - 1) * sd / math.sqrt(n)) if n > 1 else float("nan")
    low, mid, high = np.percentile(deltas, [2.5, 50, 97.5])
    return {"mean": float(deltas.mean()), "sd": sd, "ci_low": float(deltas.mean() - half),
            "ci_high": float(deltas.mean() + half), "p2_5": float(low), "median": float(mid),
            "p97_5": float(high)}  # fmt: skip


def _position(table: PayoffTable, levels: np.ndarray) -> np.ndarray:
    """Levels (possibly fractional means) as positions on the N→M path (0: N, 1: M)."""
    t = table.grid.t
    return np.interp(levels, np.arange(table.m), t) if t is not None else np.asarray(levels)


def _limit(sessions: list[dict[str, Any]], table: PayoffTable) -> dict[str, Any]:
    """Each station's limit prices (mean over periods and sessions) and path position."""
    agents = table.agents
    levels = np.array([np.mean(s["cycle_levels"], axis=0) for s in sessions])  # (S, n)
    prices = np.array([[np.mean(s["mean_prices"][a]) for a in agents] for s in sessions])
    return {
        a: {
            "mean_price": float(prices[:, i].mean()),
            "price_p2_5": float(np.percentile(prices[:, i], 2.5)),
            "price_p97_5": float(np.percentile(prices[:, i], 97.5)),
            "position": float(_position(table, levels[:, i]).mean()),
        }
        for i, a in enumerate(agents)
    }


def _impulse(sessions: list[dict[str, Any]], deviator: int, table: PayoffTable) -> dict[str, Any]:
    """One station's deviation over sessions: the mean path and how often it is punished."""
    irs = [s["impulse"][deviator] for s in sessions]
    levels = np.array([ir["levels"] for ir in irs])  # (S, T, n)
    prices = np.array([ir["mean_prices"] for ir in irs])
    others = [i for i in range(table.n_agents) if i != deviator]
    drop = (prices[:, 2, others] - prices[:, 0, others]) / prices[:, 0, others]
    lengths = [ir["punishment_length"] for ir in irs if ir["punishment_length"] is not None]
    return {
        "deviator": table.agents[deviator],
        "position": _position(table, levels.mean(axis=0)).tolist(),
        "mean_prices": prices.mean(axis=0).tolist(),
        "others_round2_change": float(drop.mean()),
        "punished": float(np.mean(drop.mean(axis=1) < -1e-9)),
        "returned": float(np.mean([ir["returned"] for ir in irs])),
        "punishment_length": float(np.mean(lengths)) if lengths else None,
    }


DEEP_FOLDERS = (
    "repeated_tiny_market",
    "repeated_tiny_market_12k",
    "archive/2026-12-03-tiny-market-drivers/repeated_tiny_market",
    "archive/2026-12-03-tiny-market-drivers/repeated_tiny_market_12k",
)
"""Where the repeated-game study's records may be: the current game's, then the 0.3.0
game's archive."""


def deep_learners() -> list[dict[str, Any]]:
    """The repeated-game records of the deep learners on ``tiny_market`` (Benchmarks),
    each row with the settings hash of the game it was played on."""
    rows = []
    for folder in DEEP_FOLDERS:
        by_algorithm: dict[str, list[dict[str, Any]]] = {}
        for path in sorted((REPO / "benchmarks" / "results" / folder).glob("*__seed*.json")):
            record = json.loads(path.read_text())
            by_algorithm.setdefault(record["algorithm"], []).append(record)
        for algorithm, records in by_algorithm.items():
            deltas = [r["collusion_index"]["delta"] for r in records]
            rows.append({
                "learner": algorithm, "evaluations": records[0]["evaluations"],
                "seeds": len(records), "delta": float(np.mean(deltas)), "deltas": deltas,
                "nash_conv": float(np.mean([r["relative_nash_conv"] for r in records])),
                "folder": folder, "settings_hash": records[0].get("settings_hash"),
            })  # fmt: skip
    return rows


# ---------------------------------------------------------------------- plots
def plot(results: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    parts = list(results)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    data = [[s["delta"] for s in results[p]["qlearning"]["sessions"]] for p in parts]
    ax.boxplot(data, whis=(2.5, 97.5), showmeans=True)
    ax.set_xticks(range(1, len(parts) + 1), [p.replace("_", "\n") for p in parts])
    for y, label in ((0, "Nash N"), (1, "collusive M"), (CALVANO["delta"], "Calvano et al.")):
        ax.axhline(y, ls=":" if y not in (0, 1) else "--", lw=0.8, color="grey")
        ax.text(len(parts) + 0.45, y, label, va="center", fontsize=7)
    ax.set_ylabel("Δ of the limit cycle")
    ax.set_title("Q-learning's collusion index over sessions (whiskers: 2.5–97.5 %)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "delta.png", dpi=120)
    plt.close(fig)
    files.append("delta.png")
    for part in parts:
        files.append(_plot_impulse(results[part], part, out, plt))
    return files


def _plot_impulse(record: dict[str, Any], part: str, out: Path, plt: Any) -> str:
    impulses = record["qlearning"]["summary"]["impulse"]
    agents = record["table"]["agents"]
    fig, axes = plt.subplots(1, len(impulses), figsize=(3.4 * len(impulses), 3.0), squeeze=False)
    for ax, ir in zip(axes[0], impulses):
        position = np.array(ir["position"])
        for i, a in enumerate(agents):
            marker = "o" if a == ir["deviator"] else "s"
            ax.plot(position[:, i], marker=marker, color=f"C{i}", ms=3, lw=1, label=f"station {a}")
        ax.axhline(0, ls="--", lw=0.8, color="grey")
        ax.axhline(1, ls="--", lw=0.8, color="grey")
        ax.set_title(f"{ir['deviator']} deviates in round 1", fontsize=9)
        ax.set_xlabel("round")
    axes[0][0].set_ylabel("position: 0 = N, 1 = M")
    axes[0][-1].legend(fontsize=7)
    title = TITLES[part].replace("`", "")
    fig.suptitle(f"{title}: mean over sessions and the cycle's states", fontsize=9)
    fig.tight_layout()
    name = f"impulse_{part}.png"
    fig.savefig(out / name, dpi=120)
    plt.close(fig)
    return name


# ---------------------------------------------------------------------- report
def write(results: dict[str, Any], args: Any, argv: Sequence[str]) -> str:
    out = Path(args.out)
    plot(results, out)
    lines = [
        "# Calvano's Q-learning on the logit market and the traffic markets",
        "",
        f"`$ python benchmarks/studies/calvano.py {' '.join(_arguments(argv))}`",
        "",
        f"{platform.node() or 'host'}: {platform.processor() or platform.machine()}, "
        "2 cores shared with other simulator runs.",
        "",
        *_overview(results),
    ]
    for part, record in results.items():
        lines += ["", *_part(part, record)]
    lines += ["", *_deep()]
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    return text


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _arguments(argv: Sequence[str]) -> list[str]:
    return list(argv[1:] if argv and str(argv[0]).endswith(".py") else argv)


def _equilibria(found: list[dict[str, Any]]) -> str:
    if not found:
        return "none"
    return ", ".join(f"{e['levels']} (Δ {e['delta']:.2f})" for e in found)


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _overview(results: dict[str, Any]) -> list[str]:
    rows = [
        _row(
            "game",
            "sessions",
            "converged",
            "rounds to converge (mean)",
            "Δ mean [95 % CI]",
            "Δ 2.5–97.5 % of sessions",
            "one-shot equilibria",
            "best-reply equilibria",
            "stage NashConv",
            "Q-learning time",
            "table env step",
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for part, r in results.items():
        s, q = r["qlearning"]["summary"], r["qlearning"]
        d, rounds = s["delta"], s["rounds_to_converge"]
        to_converge = "–" if rounds is None else f"{rounds['mean'] / 1e6:.2f} M"
        rows.append(
            f"| {TITLES[part]} | {s['sessions']} | {s['converged']:.0%} | {to_converge} | "
            f"{d['mean']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}] | "
            f"{d['p2_5']:.2f} – {d['p97_5']:.2f} | {s['one_shot_equilibria']:.0%} | "
            f"{s['best_reply_equilibria']:.0%} | {s['stage_nash_conv']:.1%} | "
            f"{q['seconds'] / 60:.1f} min ({q['rounds_run'] / 1e6:.2f} M rounds; "
            f"{q['seconds'] / q['rounds_run'] * 1e6 / 60:.1f} min a million) | "
            f"{_fmt(r.get('table_env_step_us'), 0)} µs |"
        )
    rows += [
        "",
        "Δ on the grid's own scale, (R − R_e) / (R_o − R_e) with R_e the grid game's least "
        "exploitable profile and R_o its joint optimum (a grid whose equilibrium lies above "
        "N or whose optimum lies below M moves Δ):",
        "",
    ]
    for part, r in results.items():
        g, d = r["grid_game"], r["qlearning"]["summary"]["delta"]
        low, high = g["least_exploitable"]["delta"], g["joint_optimum"]["delta"]
        rows.append(f"- {TITLES[part]}: {(d['mean'] - low) / (high - low):.2f} (the grid's "
                    f"equilibrium at Δ {low:.2f}, its optimum at {high:.2f})")  # fmt: skip
    return ["## Overview", "", *rows, "",
            f"Calvano et al. (2020, Table I): Δ {CALVANO['delta']} (sd {CALVANO['delta_sd']}) "
            f"over 1,000 sessions, {CALVANO['one_shot_equilibria']:.1%} of them equilibria by "
            "their one-shot check."]  # fmt: skip


def _part(part: str, r: dict[str, Any]) -> list[str]:
    s, t, g = r["qlearning"]["summary"], r["table"], r["grid_game"]
    meta = t["meta"]
    lines = [f"## {TITLES[part]}", ""]
    if "fill_seconds" in meta:
        lines.append(
            f"Table: {t['profiles']} profiles of {t['m']} levels, {meta.get('evaluations', 0)} "
            f"evaluations ({meta.get('ue_iterations', 0) / max(meta.get('evaluations', 1), 1):.1f}"
            f" UE iterations each) in {meta['fill_seconds'] / 60:.1f} min; settings "
            f"{meta.get('settings_hash')}, key {str(r.get('table_key'))[:12]}."
        )
    lines += [
        f"Rewards at N {_fmt(sum(t['nash_rewards']), 4)}, "
        f"at M {_fmt(sum(t['collusive_rewards']), 4)}.",
        "",
        f"Grid game: pure equilibria {_equilibria(g['pure_nash'])}; "
        f"within 1 % of one: {g['near_nash_1pct']} profiles; least exploitable "
        f"{g['least_exploitable']['levels']} (NashConv {g['least_exploitable']['nash_conv']:.2%}, "
        f"Δ {g['least_exploitable']['delta']:.2f}); joint optimum {g['joint_optimum']['levels']} "
        f"(Δ {g['joint_optimum']['delta']:.2f}, NashConv {g['joint_optimum']['nash_conv']:.1%}); "
        f"best-response dynamics end at {g['best_response_dynamics']}.",
    ]
    if "closed_form" in r:
        c = r["closed_form"]
        lines.append(
            f"Against the closed form: at most {c['max_drivers_off']:.1f} drivers off "
            f"(mean {c['mean_drivers_off']:.1f}) of {c['drivers']}; profit per driver within "
            f"{c['max_profit_error_per_driver']:.4f}; "
            f"same joint optimum: {c['same_joint_optimum']}, "
            f"same pure equilibria: {c['same_pure_nash']}."
        )
    head = ("station", "limit price (mean over periods)", "2.5–97.5 % of sessions", "N", "M")
    lines += ["", _row(*head, "position (0 N, 1 M)"), "|---|---|---|---|---|---|"]
    for a, x in s["limit"].items():
        spread = f"{x['price_p2_5']:.3f} – {x['price_p97_5']:.3f}"
        ref = r.get("references", {}).get(a, {})
        n, m = (_fmt(float(np.mean(ref[k])), 3) if k in ref else "–" for k in ("nash", "collusive"))
        lines.append(_row(a, f"{x['mean_price']:.3f}", spread, n, m, f"{x['position']:.2f}"))
    lines += ["", f"Cycle lengths: {s['cycle_lengths']}; "
              f"mean one-shot gain {s['one_shot_gain']:.2%}, "
              f"best-reply gain {s['best_reply_gain']:.1%}.", "",
              _row("deviator", "others' price change in round 2", "sessions punished",
                   "back on the cycle", "rounds to return"),
              "|---|---|---|---|---|"]  # fmt: skip
    for ir in s["impulse"]:
        lines.append(
            f"| {ir['deviator']} | {ir['others_round2_change']:+.1%} | {ir['punished']:.0%} | "
            f"{ir['returned']:.0%} | {_fmt(ir['punishment_length'], 1)} |"
        )
    lines += ["", f"![impulse responses](impulse_{part}.png)"]
    return lines


def _deep() -> list[str]:
    current = evcs_gym.load_scenario("tiny_market").settings_hash
    rows = ["## The deep learners on the repeated `tiny_market` (Benchmarks)", "",
            f"The game each row was played on, by settings hash (today's: {current}).", "",
            _row("learner", "evaluations", "seeds", "Δ (mean; per seed)", "NashConv", "game"),
            "|---|---|---|---|---|---|"]  # fmt: skip
    for d in deep_learners():
        per_seed = ", ".join(f"{x:.2f}" for x in d["deltas"])
        game = d["settings_hash"] or "?"
        rows.append(
            _row(
                d["learner"],
                f"{d['evaluations']:,}",
                d["seeds"],
                f"{d['delta']:.2f} ({per_seed})",
                f"{d['nash_conv']:.1%}",
                game if game == current else f"{game} (an earlier game: `{d['folder']}`)",
            )
        )
    return rows
