"""Convergence study: do the revenues depend on where the UE starts or how long it runs?

A payoff is only as good as the equilibrium under it. This module evaluates price
profiles at several seeds under the default UE and under variants that must not change
the answer beyond seed noise (the docs' concepts page, "The payoff"):

* ``free_flow``: the UE starts from free-flow routes instead of the reference warm start;
* ``doubled_cap``: the evaluations' iteration cap doubled (``ue_max_iterations`` × 2)
  and no stationary stop (``ue_payoff_precision=0``): every loop that does not meet its
  rule runs twice the default's cap and answers the stationary mean of that long run,
  from the default's very start (the warm start is not re-solved). An evaluation that
  converged is repeated bit for bit, so its paired difference is exactly zero;

and, on request only (not in :data:`STANDARD_CONDITIONS`):

* ``halved``: every stop-rule tolerance halved (``ue_tolerance_scale=0.5``).

Each station's mean revenue is compared with the default's, seed by seed (the same
seeds in every condition). A station *agrees* when ``|mean difference| ≤ max(z · SE,
rel_tol · default revenue)`` (:func:`agreement_tolerance`) with the standard error of
the paired per-seed differences (``z = 3``, ``rel_tol = 3 %``, the model's measured
ε-width on Sioux Falls). ``evcs-gym convergence`` and
``benchmarks/bench_convergence.py`` print it as a table.

Example:
    >>> study = convergence_study("tiny", {"uniform": uniform_profile("tiny", 1.0)}, seeds=2)
    >>> study.conditions
    ['default', 'free_flow', 'doubled_cap']
    >>> isinstance(study.all_agree, bool)
    True
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.network import NetworkData
from evcs_gym.scenarios.loader import load_scenario
from evcs_gym.seeds import check_seeds
from evcs_gym.ue.averaging import SeedAverage
from evcs_gym.ue.evaluator import EVCSRewardEvaluator
from evcs_gym.utils import to_jsonable

__all__ = [
    "AGREEMENT_REL_TOL",
    "CONDITIONS",
    "EVALUATION_ONLY_SETTINGS",
    "SCALED_SETTINGS",
    "STANDARD_CONDITIONS",
    "ConvergenceStudy",
    "agreement_tolerance",
    "convergence_study",
    "study_profiles",
    "uniform_profile",
]

CONDITIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "free_flow": {"warm_start": False},
    "doubled_cap": {"ue_max_iterations": 2, "ue_payoff_precision": 0.0},
    "halved": {"ue_tolerance_scale": 0.5},
}
"""Study conditions: ``load_scenario`` keyword arguments on top of the caller's overrides;
the values of :data:`SCALED_SETTINGS` multiply the caller's setting (else the scenario's),
and :data:`EVALUATION_ONLY_SETTINGS` change the evaluations but not the warm start."""

STANDARD_CONDITIONS = ("default", "free_flow", "doubled_cap")
"""The conditions a study runs unless told otherwise: the properties the package claims."""

SCALED_SETTINGS = ("ue_tolerance_scale", "ue_max_iterations")
"""Settings a condition gives as a factor of the caller's (or the scenario's) value."""

EVALUATION_ONLY_SETTINGS = ("ue_max_iterations", "ue_payoff_precision")
"""Settings a condition applies after loading: the warm start stays the caller's."""

AGREEMENT_REL_TOL = 0.03
"""The relative arm of the agreement band: 3 % of a station's revenue, the ε-width of the
UE measured on Sioux Falls (12 seeds: differences between starts and tolerances of
2.1–4.4 % where the loop had no point equilibrium to find)."""


def agreement_tolerance(
    se: Any, revenue: Any, z: float = 3.0, rel_tol: float = AGREEMENT_REL_TOL
) -> Any:
    """The band a paired mean difference must stay within to *agree*:
    ``max(z · SE, rel_tol · |revenue|)``, elementwise for arrays.

    Example:
        >>> float(agreement_tolerance(150.0, 10_000.0))
        450.0
        >>> agreement_tolerance(np.array([10.0, 100.0]), np.array([10_000.0, -1_000.0])).tolist()
        [300.0, 300.0]
    """
    return np.maximum(z * np.asarray(se), rel_tol * np.abs(revenue))


def uniform_profile(scenario: str | NetworkData, price: float) -> dict[str, np.ndarray]:
    """Every station at ``price`` in every period."""
    nd = scenario if isinstance(scenario, NetworkData) else load_scenario(scenario)
    return {a: np.full(nd.n_periods, float(price)) for a in nd.agent_names}


def study_profiles(
    nd: NetworkData,
    base: Mapping[str, Any] | None = None,
    *,
    deviations: int = 2,
    training_like: int = 1,
    random: int = 2,
    seed: int = 0,
) -> dict[str, dict[str, np.ndarray]]:
    """The profiles a study checks, by name.

    * ``base``: the given profile (e.g. a solver's equilibrium), else the middle of the
      bounds;
    * ``deviation_<station>_p<period>``: ``base`` with one station's one period at its
      upper bound (the phantom-deviation case), for the first ``deviations`` stations;
    * ``training_<i>``: ``base`` plus Gaussian noise of 5 % of the price range, clipped;
    * ``random_<i>``: uniform over the whole bounds, per station and period.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xC0DE]))
    bounds = nd.price_bounds
    if base is None:
        base = {a: np.full(nd.n_periods, (lo + hi) / 2) for a, (lo, hi) in bounds.items()}
    base = {a: np.asarray(base[a], dtype=float).copy() for a in nd.agent_names}
    out = {"base": base}
    mid = nd.n_periods // 2
    for a in nd.agent_names[:deviations]:
        dev = {k: v.copy() for k, v in base.items()}
        dev[a][mid] = bounds[a][1]
        out[f"deviation_{a}_p{mid}"] = dev
    for i in range(training_like):
        out[f"training_{i}"] = {
            a: np.clip(base[a] + rng.normal(0, 0.05 * (hi - lo), nd.n_periods), lo, hi)
            for a, (lo, hi) in bounds.items()
        }
    for i in range(random):
        out[f"random_{i}"] = {
            a: rng.uniform(lo, hi, nd.n_periods) for a, (lo, hi) in bounds.items()
        }
    return out


@dataclass
class ConvergenceStudy:
    """Results of :func:`convergence_study`: ``results[condition][profile]`` averages."""

    scenario: str
    seeds: list[int]
    results: dict[str, dict[str, SeedAverage]]
    z: float = 3.0
    rel_tol: float = AGREEMENT_REL_TOL
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def conditions(self) -> list[str]:
        return list(self.results)

    @property
    def profiles(self) -> list[str]:
        return list(self.results["default"])

    def comparison(self, condition: str, profile: str) -> dict[str, dict[str, float]]:
        """Per station: default and condition means, paired difference, its SE, agreement."""
        ref = self.results["default"][profile]
        other = self.results[condition][profile]
        diff, se = other.paired_difference(ref)
        out = {}
        for a in ref.agents:
            se_a = 0.0 if np.isnan(se[a]) else se[a]
            tol = float(agreement_tolerance(se_a, ref.revenues[a], self.z, self.rel_tol))
            out[a] = {
                "default": ref.revenues[a],
                "default_se": ref.revenues_se[a],
                "value": other.revenues[a],
                "value_se": other.revenues_se[a],
                "difference": diff[a],
                "difference_se": se[a],
                "tolerance": tol,
                "agrees": bool(abs(diff[a]) <= tol),
            }
        return out

    @property
    def all_agree(self) -> bool:
        """Every station of every profile agrees with the default in every condition."""
        return all(
            row["agrees"]
            for c in self.conditions
            if c != "default"
            for p in self.profiles
            for row in self.comparison(c, p).values()
        )

    def iteration_stats(self, condition: str, profile: str) -> dict[str, Any]:
        avg = self.results[condition][profile]
        gaps = [r.ue_stats["charging_gap"] for r in avg.results]
        return {
            "iterations": avg.ue_iterations,
            "converged_share": avg.converged_share,
            "charging_mean_gap_max": max(g["mean"] for g in gaps),
            "charging_share_above_5pct_max": max(g["share_above_5pct"] for g in gaps),
        }

    def table(self) -> str:
        """The study as text: revenues ± SE per condition, differences, agreement."""
        lines = [
            f"convergence study: {self.scenario}, seeds {self.seeds}; a station agrees when "
            f"|difference| <= max({self.z:g} SE, {self.rel_tol:.0%} of its default revenue)"
        ]
        width = max(12, *(len(c) + 1 for c in self.conditions))  # 12: the standard tables
        for p in self.profiles:
            lines.append(f"\n[{p}]")
            agents = self.results["default"][p].agents
            head = f"  {'condition':<{width}}{'iterations':>16}{'conv':>6}{'ch gap':>8}{'>5%':>7}"
            head += "".join(f"{a:>22}" for a in agents)
            lines.append(head)
            for c in self.conditions:
                st = self.iteration_stats(c, p)
                it = st["iterations"]
                cells = f"  {c:<{width}}{f'{min(it)}-{np.median(it):g}-{max(it)}':>16}"
                cells += f"{st['converged_share']:>6.0%}{st['charging_mean_gap_max']:>8.2%}"
                cells += f"{st['charging_share_above_5pct_max']:>7.1%}"
                avg = self.results[c][p]
                if c == "default":
                    cells += "".join(
                        f"{avg.revenues[a]:>13.0f} ± {avg.revenues_se[a]:>6.0f}" for a in agents
                    )
                else:
                    comp = self.comparison(c, p)
                    cells += "".join(
                        f"{comp[a]['difference']:>+10.0f} ± {comp[a]['difference_se']:>5.0f} "
                        f"{'ok' if comp[a]['agrees'] else 'NO':>4}"
                        for a in agents
                    )
                lines.append(cells)
        lines.append(
            "\n(iterations: min-median-max over seeds; ch gap / >5%: worst seed's charging "
            "mean gap and share of charging platoons above a 5 % gap; default row: mean "
            "revenue ± SE; other rows: paired difference to the default ± SE)"
        )
        lines.append(f"all agree: {self.all_agree}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(
            {
                "scenario": self.scenario,
                "seeds": self.seeds,
                "z": self.z,
                "rel_tol": self.rel_tol,
                "all_agree": self.all_agree,
                "seconds": self.seconds,
                "profiles": {
                    p: {
                        "prices": self.results["default"][p].results[0].prices,
                        "conditions": {
                            c: {
                                **self.iteration_stats(c, p),
                                "revenues": self.results[c][p].revenues,
                                "revenues_se": self.results[c][p].revenues_se,
                                **({"comparison": self.comparison(c, p)} if c != "default" else {}),
                            }
                            for c in self.conditions
                        },
                    }
                    for p in self.profiles
                },
            }
        )


def convergence_study(
    scenario: str,
    profiles: Mapping[str, Mapping[str, Any]],
    seeds: int | Sequence[int] = 6,
    conditions: Sequence[str] = STANDARD_CONDITIONS,
    *,
    workers: int = 1,
    z: float = 3.0,
    rel_tol: float = AGREEMENT_REL_TOL,
    progress: bool = False,
    **overrides: Any,
) -> ConvergenceStudy:
    """Evaluate ``profiles`` at ``seeds`` under each condition and compare to the default.

    Args:
        scenario: bundled scenario name or folder.
        profiles: ``{name: {station: prices}}`` (see :func:`study_profiles`).
        seeds: distinct seeds, or a count ``n`` for ``0..n-1`` (6 or more for a claim).
        conditions: names from :data:`CONDITIONS` (default :data:`STANDARD_CONDITIONS`);
            ``"default"`` is always included.
        workers: worker processes (1 = serial in this process).
        z, rel_tol: the agreement rule (see the module docstring).
        progress: print one line per condition.
        **overrides: settings for every condition (e.g. ``ue_max_iterations``).
    """
    seed_list = check_seeds(seeds)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"`conditions` has unknown {unknown}; known: {sorted(CONDITIONS)}")
    if not profiles:
        raise ValueError("`profiles` must not be empty")
    names = ["default", *[c for c in conditions if c != "default"]]
    results: dict[str, dict[str, SeedAverage]] = {}
    seconds: dict[str, float] = {}
    default = load_scenario(scenario, **overrides)
    for cond in names:
        t0 = time.perf_counter()
        nd = _condition_network(scenario, cond, default, overrides)
        tasks = [(p, s) for p in profiles for s in seed_list]
        if workers > 1:
            from evcs_gym.parallel.pool import ParallelEvaluatorPool

            with ParallelEvaluatorPool(nd, n_workers=workers) as pool:
                flat = pool.evaluate_batch([profiles[p] for p, _ in tasks], [s for _, s in tasks])
        else:
            ev = EVCSRewardEvaluator(nd)
            flat = [ev.evaluate(profiles[p], seed=s) for p, s in tasks]
        k = len(seed_list)
        results[cond] = {p: SeedAverage(flat[i * k : (i + 1) * k]) for i, p in enumerate(profiles)}
        seconds[cond] = time.perf_counter() - t0
        if progress:
            print(f"  {cond}: {len(tasks)} evaluations in {seconds[cond]:.0f} s", flush=True)
    name = scenario if isinstance(scenario, str) else str(scenario)
    return ConvergenceStudy(name, seed_list, results, z=z, rel_tol=rel_tol, seconds=seconds)


def _condition_network(
    scenario: str, condition: str, default: NetworkData, overrides: Mapping[str, Any]
) -> NetworkData:
    """The scenario as ``condition`` evaluates it (see :data:`CONDITIONS`).

    ``default`` is the caller's scenario (``load_scenario(scenario, **overrides)``): the
    base of :data:`SCALED_SETTINGS` and, for :data:`EVALUATION_ONLY_SETTINGS`, the start.
    """
    spec = dict(CONDITIONS[condition])
    for key in SCALED_SETTINGS:
        if key in spec:
            spec[key] = spec[key] * getattr(default.settings, key)
    late = {k: spec.pop(k) for k in EVALUATION_ONLY_SETTINGS if k in spec}
    nd = load_scenario(scenario, **{**overrides, **spec}) if spec else default
    if late:
        nd = dataclasses.replace(nd, settings=dataclasses.replace(nd.settings, **late))
    return nd
