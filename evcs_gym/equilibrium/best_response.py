"""Reference equilibrium solver: damped best-response dynamics verified in the simulator.

:class:`BestResponseDynamics` iterates Jacobi best responses: at the current profile it
runs :func:`~evcs_gym.equilibrium.exploitability.exploitability` — every station's best
unilateral deviation, searched in the simulator with common random numbers — which is
at the same time the profile's exploitability certificate and the next Jacobi step. If
the relative NashConv is at or below ``target`` the profile is returned with that
certificate; otherwise each station moves a fraction of the way to its best response
(only stations whose deviation gain is material move) and the loop repeats until
``max_rounds`` or the evaluation ``budget`` is spent. The best-certified profile seen is
returned in any case.

Steps: each station moves ``damping`` of the way (default 1, a plain best response,
which walks a Bertrand-like undercutting race down quickly). For games whose best
responses cycle, set ``min_damping`` below ``damping``: a station's step is then halved,
down to ``min_damping``, whenever it reverses direction (cosine between its step and its
previous one below -0.5). Off by default, because periods nobody charges in have
arbitrary best responses that make reversals look more common than they are. Each
search also starts from the station's previous best response, which in a slowly moving
profile is usually close to the new one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evcs_gym.equilibrium.deviation_search import Objective, check_objective
from evcs_gym.equilibrium.evaluation import BatchEvaluator
from evcs_gym.equilibrium.exploitability import ExploitabilityResult, exploitability
from evcs_gym.equilibrium.search_spec import SearchSpec, resolve_search

__all__ = ["BestResponseDynamics", "SolverResult"]


@dataclass
class SolverResult:
    """The solver's answer: prices, their verified certificate and the path taken."""

    prices: dict[str, np.ndarray]
    certificate: ExploitabilityResult
    converged: bool
    rounds: int
    evaluations: int
    seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)
    method: str = "best-response dynamics"
    """Which solver answered (its summary's first words)."""

    @property
    def relative_nash_conv(self) -> float:
        return self.certificate.relative_nash_conv

    def summary(self) -> str:
        head = (
            f"{self.method}: {self.rounds} rounds, {self.evaluations} evaluations, "
            f"{self.seconds:.0f} s, converged={self.converged}"
        )
        prices = "\n".join(
            f"  {a:>6}: " + " ".join(f"{v:.3f}" for v in p) for a, p in self.prices.items()
        )
        return f"{head}\n{prices}\n{self.certificate.summary()}"


class CertifiedSolver:
    """What the reference solvers share: the evaluator, the target and the certificate
    (its deviation search and seeds) that judges every profile they visit."""

    def __init__(
        self,
        pool_or_data: Any,
        *,
        target: float,
        search: SearchSpec,
        budget: int | None,
        seed: int,
        seeds: int | Sequence[int] | None,
        search_seeds: int,
        held_out: bool,
        verbose: bool,
    ) -> None:
        if target < 0:
            raise ValueError(f"`target` must be >= 0, got {target}")
        self.evaluator = BatchEvaluator(pool_or_data)
        self.target = target
        self.search = search
        self.budget = budget
        self.seed = seed
        self.seeds = seeds
        self.search_seeds = search_seeds
        self.held_out = held_out
        self.verbose = verbose

    def _certificate(
        self, profile: np.ndarray, starts: dict[str, Any], objective: Objective = "own"
    ) -> ExploitabilityResult:
        """The profile's certificate, each station's search also started from ``starts``."""
        return exploitability(
            self.evaluator,
            profile,
            seed=self.seed,
            seeds=self.seeds,
            search_seeds=self.search_seeds,
            held_out=self.held_out,
            search=self.search,
            starts=starts,
            objective=objective,
        )


class BestResponseDynamics(CertifiedSolver):
    """Damped Jacobi best-response dynamics with a simulator-verified stopping certificate.

    Args:
        pool_or_data: a ParallelEvaluatorPool, an EVCSRewardEvaluator or NetworkData.
        target: stop when the verified NashConv / total revenue is at or below this.
        damping: initial step towards the best responses (1 = Jacobi best response).
        min_damping: smallest step after halvings on direction reversals (default:
            ``damping``, i.e. fixed steps).
        budget_per_station: each best-response search's cap on distinct price vectors
            (None: the search's default).
        grid: uniform price levels among each search's global candidates (None: 7).
        search: each round's best-response search and certificate: a
            :class:`~evcs_gym.equilibrium.search_spec.SearchSpec` or a preset's name
            (default ``"converged"``; ``"budget"`` is evcs-gym 0.3.0's solver).
        resolution: the converged search's last step as a share of the price range.
        max_rounds: Jacobi rounds at most.
        budget: total evaluations at most (checked between rounds).
        seed: evaluation seed (common random numbers) and search seed.
        seeds: seeds of each round's certificate (``exploitability``'s ``seeds``: an
            int ``n`` for ``seed .. seed + n - 1``); ``None``: ``seed`` alone.
        search_seeds: how many of ``seeds`` the best-response searches average over
            (each candidate then costs that many simulations). The game is noisy — on
            ``tiny`` a station's revenue moves ±15 % from seed to seed — and single-seed
            best responses chase that noise.
        held_out: ``True`` (default): the searches score on seeds after ``seeds`` and
            every certificate's gains are out of sample (``exploitability``'s).
        objective: ``"own"`` (default): best responses, whose fixed point is a Nash
            equilibrium. ``"total"``: each station's step maximises the stations' total
            reward instead (coordinate ascent on the joint reward), whose fixed point is
            the collusive reference; ``target`` then bounds the joint gain that any one
            station's prices could still add.

    Example:
        >>> import evcs_gym
        >>> nd = evcs_gym.load_scenario("tiny")
        >>> brd = BestResponseDynamics(nd, target=0.5, max_rounds=1, resolution=1 / 24)
        >>> res = brd.solve({"A": [1.25] * 4, "B": [1.25] * 4})
        >>> res.rounds
        1
    """

    def __init__(
        self,
        pool_or_data: Any,
        *,
        target: float = 0.02,
        damping: float = 1.0,
        min_damping: float | None = None,
        budget_per_station: int | None = None,
        grid: int | None = None,
        search: SearchSpec | str = "converged",
        resolution: float | None = None,
        max_rounds: int = 20,
        budget: int | None = None,
        seed: int = 0,
        seeds: int | Sequence[int] | None = None,
        search_seeds: int = 1,
        held_out: bool = True,
        objective: Objective = "own",
        verbose: bool = False,
    ) -> None:
        if not 0 < damping <= 1:
            raise ValueError(f"`damping` must be in (0, 1], got {damping}")
        min_damping = damping if min_damping is None else min_damping
        if not 0 < min_damping <= damping:
            raise ValueError(f"`min_damping` must be in (0, damping], got {min_damping}")
        super().__init__(
            pool_or_data,
            target=target,
            search=resolve_search(
                search, budget=budget_per_station, grid=grid, resolution=resolution
            ),
            budget=budget,
            seed=seed,
            seeds=seeds,
            search_seeds=search_seeds,
            held_out=held_out,
            verbose=verbose,
        )
        self.damping = damping
        self.min_damping = min_damping
        self.max_rounds = max_rounds
        self.objective = check_objective(objective)

    def solve(self, initial_prices: dict[str, Any] | None = None) -> SolverResult:
        """Run the dynamics from ``initial_prices`` (default: each station's mid-bound)."""
        t0 = time.perf_counter()
        start_evals = self.evaluator.evaluations
        profile = start_profile(self.evaluator, initial_prices)
        best: ExploitabilityResult | None = None
        history: list[dict[str, Any]] = []
        converged = False
        steps = np.full(self.evaluator.network.n_agents, self.damping)
        last_step = np.zeros_like(profile)
        last_best: dict[str, np.ndarray] = {}
        for rounds in range(1, self.max_rounds + 1):
            cert = self._certificate(profile, last_best, self.objective)
            history.append(self._record(cert, rounds, start_evals, steps))
            if best is None or certificate_key(cert) < certificate_key(best):
                best = cert
            if cert.relative_nash_conv <= self.target:
                converged = True
                break
            spent = self.evaluator.evaluations - start_evals
            if self.budget is not None and spent >= self.budget:
                break
            step = self._step(cert, profile, steps, last_step, last_best)
            last_step = np.where(np.any(step != 0, axis=1, keepdims=True), step, last_step)
            profile = profile + step
        assert best is not None
        return SolverResult(
            prices=best.prices,
            certificate=best,
            converged=converged,
            rounds=len(history),
            evaluations=self.evaluator.evaluations - start_evals,
            seconds=time.perf_counter() - t0,
            history=history,
        )

    def _step(
        self,
        cert: ExploitabilityResult,
        profile: np.ndarray,
        steps: np.ndarray,
        last_step: np.ndarray,
        last_best: dict[str, np.ndarray],
    ) -> np.ndarray:
        """Each station's damped move towards its best response (zero where its gain is
        immaterial); halves ``steps`` of stations that reverse, records ``last_best``."""
        step = np.zeros_like(profile)
        total = max(cert.total_reward, 1e-12)
        for i, a in enumerate(self.evaluator.network.agent_names):
            dev = cert.deviations[a]
            last_best[a] = dev.best_prices[None, :]
            if dev.gain / total > self.target / (2 * len(steps)):
                step[i] = dev.best_prices - profile[i]
                if _cosine(step[i], last_step[i]) < -0.5:  # reversal: damp this station
                    steps[i] = max(self.min_damping, steps[i] / 2)
        return step * steps[:, None]

    def _record(
        self, cert: ExploitabilityResult, rounds: int, start_evals: int, steps: np.ndarray
    ) -> dict[str, Any]:
        """The round's history entry (printed when ``verbose``)."""
        if self.verbose:
            print(
                f"round {rounds}: relative NashConv {cert.relative_nash_conv:.2%}, "
                f"total revenue {cert.total_reward:.0f}",
                flush=True,
            )
        return {
            "round": rounds,
            "prices": {a: v.tolist() for a, v in cert.prices.items()},
            "total_reward": cert.total_reward,
            "relative_nash_conv": cert.relative_nash_conv,
            "evaluations": self.evaluator.evaluations - start_evals,
            "damping": steps.tolist(),
        }


def start_profile(evaluator: BatchEvaluator, initial_prices: dict[str, Any] | None) -> np.ndarray:
    """``initial_prices`` as an ``(n_agents, n_periods)`` array, or each station's
    mid-bound price in every period."""
    if initial_prices is not None:
        return evaluator.as_array(initial_prices)
    nd = evaluator.network
    mids = [[(lo + hi) / 2] * nd.n_periods for lo, hi in nd.price_bounds.values()]
    return np.array(mids, dtype=float)


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
    norm = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(u @ v) / norm if norm > 0 else 0.0


def certificate_key(cert: ExploitabilityResult) -> float:
    """A certificate's relative NashConv for ordering, ``inf`` where it is undefined."""
    value = cert.relative_nash_conv
    return value if math.isfinite(value) else math.inf
