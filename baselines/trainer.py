"""GameTrainer: trains an :class:`~evcs_gym.baselines.Algorithm` through a vector env.

The trainer reaches the game only through the standard API: a multi-agent vector env
(:class:`evcs_gym.wrappers.EVCSVectorEnv` over history-wrapped copies of the pricing
game, or :class:`~evcs_gym.baselines.vec.SerialVecEnv` over any PettingZoo
``ParallelEnv`` with Box spaces). Each iteration steps ``num_envs`` copies with
independent noisy actions, stores the transitions, learns and records every
evaluation. Every ``check_every`` iterations it measures the *pure* (noise-free)
strategy: its change since the last check and the critic-based NashConv
(:class:`~evcs_gym.baselines.nashconv.NashConvChecker`). It stops on the budget of
evaluations or on convergence — pure strategy stable **and** critic NashConv below
threshold; if the strategy stalls while exploitability stays high it calls
``reset_noise()``. Training and evaluation share one rollout function
(:meth:`GameTrainer.rollout`); evaluation uses pure actions and does not learn.

:meth:`GameTrainer.train` returns a :class:`TrainResult`; its :meth:`TrainResult.to_dict`
is the run's ``summary.json`` (which :meth:`GameTrainer.save_outputs` writes, with what
the caller adds).

Nothing here is specific to EV charging: simulator verification enters through the
optional ``verifier`` callable (the CLI passes one that runs
:func:`~evcs_gym.equilibrium.exploitability.exploitability`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from evcs_gym.baselines.algorithm import Algorithm
from evcs_gym.baselines.history import Checkpoint, GameHistory, versions
from evcs_gym.baselines.nashconv import NashConvChecker

__all__ = ["GameTrainer", "RolloutStats", "TrainResult", "TrainerConfig"]


@dataclass
class TrainerConfig:
    """Settings of a training run."""

    budget: int = 2000
    """Evaluations (env steps × copies) to spend at most."""
    check_every: int = 10
    """Iterations between pure-strategy checkpoints."""
    change_tolerance: float = 0.01
    """Pure strategy counts as stable when its largest change between two checkpoints,
    as a share of the action range, is below this."""
    exploitability_tolerance: float = 0.02
    """Critic NashConv (relative to the critics' total value) counted as converged."""
    stable_checks: int = 3
    """Consecutive stable, unexploitable checkpoints needed to stop early."""
    stall_checks: int = 5
    """Stable but exploitable for this many checkpoints -> ``reset_noise()``."""
    nashconv_starts: int = 8
    nashconv_steps: int = 60
    seed: int = 0
    progress: bool = True
    """Show a tqdm progress bar."""
    torch_threads: int = 1
    """``torch.set_num_threads`` for the run (small nets: 1 avoids OpenMP stalls)."""


@dataclass
class RolloutStats:
    """What one rollout call returns."""

    steps: int
    evaluations: int
    mean_reward: dict[str, float]
    last_obs: dict[str, np.ndarray]
    last_pure_actions: dict[str, np.ndarray]
    metrics: list[dict[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class TrainResult:
    """What :meth:`GameTrainer.train` returns: the run's settings, its size and its end.

    :meth:`to_dict` gives the JSON-ready summary (the keys of ``summary.json``, in this
    order); ``dataclasses.asdict`` gives the same with ``None`` for a missing checkpoint.
    """

    algorithm: str
    """The algorithm's ``name`` (its class name if it has none)."""
    config: TrainerConfig
    """The trainer's settings of the run (a copy)."""
    seed: int
    """The run's seed (``config.seed``)."""
    evaluations: int
    """Evaluations the trainer has spent (env steps × copies), at most ``config.budget``."""
    iterations: int
    """Training iterations (one vector-env step and one ``learn()`` each)."""
    converged: bool
    """Whether training stopped early on convergence: ``stable_checks`` consecutive
    checkpoints with a stable pure strategy and a critic NashConv below threshold."""
    noise_resets: int
    """How often the exploration noise was reset because the strategy stalled while still
    exploitable."""
    train_seconds: float
    """Wall-clock seconds of the training loop."""
    versions: dict[str, str]
    """Versions of what the run depends on: Python, evcs-gym, numpy, gymnasium, pettingzoo,
    uxsim, torch."""
    final_pure_prices: dict[str, list[float]] | None = None
    """Each agent's pure (noise-free) action at the last checkpoint (None: no checkpoint
    was taken, as when the budget is below one iteration)."""
    critic_nash_conv: float | None = None
    """The critics' NashConv at the last checkpoint, relative to the critics' total value
    (None: no checkpoint)."""

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-ready values, the checkpoint's entries only if taken.

        These are the keys, values and order of the dict ``train()`` returned before 0.3.0,
        and of ``summary.json`` before the caller's additions.
        """
        out = asdict(self)
        for key in ("final_pure_prices", "critic_nash_conv"):
            if out[key] is None:
                del out[key]
        return out


class GameTrainer:
    """Train ``algorithm`` on ``vec_env``; see the module docstring.

    Args:
        vec_env: a multi-agent vector env (``reset``/``step`` on batched dicts).
        algorithm: an :class:`~evcs_gym.baselines.Algorithm`.
        config: :class:`TrainerConfig`.
        verifier: optional ``callable(pure_prices: dict) -> dict`` run at the end (and
            by :meth:`verify`); must return at least ``relative_nash_conv``.
        history: a :class:`GameHistory` to append to (default: a new one).

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> from evcs_gym.baselines import MADDPG, MADDPGConfig
        >>> from evcs_gym.baselines.vec import SerialVecEnv
        >>> make = lambda: simple_spread_v3.parallel_env(N=2, max_cycles=5,
        ...                                              continuous_actions=True)
        >>> venv = SerialVecEnv([make, make])
        >>> algo = MADDPG.from_env(make(), MADDPGConfig(learning_starts=8, batch_size=8))
        >>> trainer = GameTrainer(venv, algo, TrainerConfig(budget=40, progress=False))
        >>> result = trainer.train()
        >>> result.evaluations
        40
    """

    def __init__(
        self,
        vec_env: Any,
        algorithm: Algorithm,
        config: TrainerConfig | None = None,
        *,
        verifier: Callable[[dict[str, np.ndarray]], dict[str, Any]] | None = None,
        history: GameHistory | None = None,
    ) -> None:
        self.env = vec_env
        self.algo = algorithm
        self.config = config or TrainerConfig()
        if self.config.budget < 1:
            raise ValueError(f"`budget` must be >= 1, got {self.config.budget}")
        if self.config.check_every < 1:
            raise ValueError(f"`check_every` must be >= 1, got {self.config.check_every}")
        self.verifier = verifier
        self.agents = list(vec_env.possible_agents)
        self.action_spaces = {a: vec_env.action_space(a) for a in self.agents}
        act_dim = {a: int(np.prod(self.action_spaces[a].shape)) for a in self.agents}
        self.history = history or GameHistory(self.agents, max(act_dim.values()))
        self.evaluations = 0
        self.iterations = 0
        self._obs: dict[str, np.ndarray] | None = None
        self._prev_pure: dict[str, np.ndarray] | None = None
        self._stable = 0
        self._stalled = 0
        self.noise_resets = 0

    @property
    def observation(self) -> dict[str, np.ndarray] | None:
        """The vector env's current observation per agent (``None`` before the first
        rollout): what the learner's next action, and its critic, are conditioned on."""
        return self._obs

    # ------------------------------------------------------------------ rollout
    def rollout(self, n_steps: int, *, learn: bool, kind: str = "train") -> RolloutStats:
        """Step the vector env ``n_steps`` times.

        ``learn=True``: noisy actions, transitions stored and learned from.
        ``learn=False``: pure actions, nothing stored. Both record every evaluation in
        the history, so training and evaluation figures are comparable.
        """
        if self._obs is None:
            self._obs, _ = self.env.reset(seed=self.config.seed)
        n = self.env.num_envs
        totals = {a: 0.0 for a in self.agents}
        metrics = []
        pure = self.algo.get_pure_actions(self._obs)
        for _ in range(n_steps):
            obs = self._obs
            pure = self.algo.get_pure_actions(obs)
            actions = self.algo.sample_actions_batch(obs) if learn else pure
            next_obs, rewards, terms, truncs, infos = self.env.step(actions)
            final_obs = {a: next_obs[a].copy() for a in self.agents}
            for i, info in enumerate(infos):
                for a in self.agents:
                    fo = info.get(a, {}).get("final_observation")
                    if fo is not None:
                        final_obs[a][i] = fo
            if learn:
                dones = {a: np.asarray(terms[a], dtype=np.float32) for a in self.agents}
                self.algo.store_experience(obs, actions, rewards, final_obs, dones)
                m = self.algo.learn()
                if m:
                    metrics.append(m)
            for i in range(n):
                info = infos[i]
                raw = {
                    a: float(info.get(a, {}).get("reward_raw", rewards[a][i])) for a in self.agents
                }
                flows = {
                    a: np.asarray(info.get(a, {}).get("flows", np.zeros(1))) for a in self.agents
                }
                ue = info.get(self.agents[0], {})
                self.history.record(
                    self.iterations,
                    kind,
                    {
                        a: np.asarray(info.get(a, {}).get("prices", actions[a][i]))
                        for a in self.agents
                    },
                    {a: pure[a][i] for a in self.agents},
                    raw,
                    flows,
                    ue_iterations=ue.get("ue_iterations", 0),
                    converged=ue.get("converged", True),
                    relative_gap=ue.get("ue_stats", {}).get("relative_gap", float("nan")),
                )
                for a in self.agents:
                    totals[a] += raw[a]
            self.evaluations += n
            if learn:
                self.iterations += 1
            self._obs = next_obs
        steps = max(n_steps * n, 1)
        return RolloutStats(
            steps=n_steps,
            evaluations=n_steps * n,
            mean_reward={a: totals[a] / steps for a in self.agents},
            last_obs=self._obs,
            last_pure_actions={a: v[0] for a, v in pure.items()},
            metrics=metrics,
        )

    # ------------------------------------------------------------------ checks
    def checkpoint(self) -> Checkpoint:
        """Measure the pure strategy: change since the last check and critic NashConv."""
        assert self._obs is not None
        obs_one = {a: self._obs[a][:1] for a in self.agents}
        pure = {a: v[0] for a, v in self.algo.get_pure_actions(obs_one).items()}
        change = 0.0
        if self._prev_pure is not None:
            for a in self.agents:
                space = self.action_spaces[a]
                span = np.maximum(space.high - space.low, 1e-12)
                change = max(change, float(np.max(np.abs(pure[a] - self._prev_pure[a]) / span)))
        else:
            change = math.inf
        self._prev_pure = pure
        checker = NashConvChecker(
            self.algo.get_critics(),
            self.action_spaces,
            n_starts=self.config.nashconv_starts,
            steps=self.config.nashconv_steps,
            seed=self.config.seed,
        )
        res = checker.check({a: obs_one[a][0] for a in self.agents}, pure)
        value = sum(abs(v) for v in res.current_value.values())
        critic_rel = res.nash_conv / value if value > 0 else math.inf
        recent = self.history.evaluations[-self.env.num_envs :]
        total = float(np.mean([sum(r.rewards.values()) for r in recent])) if recent else 0.0
        ck = Checkpoint(
            evaluations=self.evaluations,
            batch=self.iterations,
            pure_prices=pure,
            total_reward=total,
            strategy_change=change,
            critic_nash_conv=critic_rel,
        )
        self.history.add_checkpoint(ck)
        return ck

    def _converged(self, ck: Checkpoint) -> bool:
        cfg = self.config
        stable = ck.strategy_change < cfg.change_tolerance
        unexploitable = ck.critic_nash_conv < cfg.exploitability_tolerance
        self._stable = self._stable + 1 if (stable and unexploitable) else 0
        self._stalled = self._stalled + 1 if (stable and not unexploitable) else 0
        if self._stalled >= cfg.stall_checks:
            self.algo.reset_noise()
            self.noise_resets += 1
            self._stalled = 0
        return self._stable >= cfg.stable_checks

    # ------------------------------------------------------------------ main loop
    def train(self) -> TrainResult:
        """Train until the budget is spent or the pure strategy converged.

        Returns:
            The run's :class:`TrainResult` (its ``to_dict()`` is the run's summary).
        """
        cfg = self.config
        previous_threads = torch.get_num_threads()
        torch.set_num_threads(cfg.torch_threads)
        t0 = time.perf_counter()
        bar = tqdm(total=cfg.budget, disable=not cfg.progress, unit="eval", desc="training")
        converged = False
        last: Checkpoint | None = None
        try:
            while self.evaluations + self.env.num_envs <= cfg.budget:
                stats = self.rollout(1, learn=True)
                bar.update(stats.evaluations)
                if self.iterations % cfg.check_every == 0:
                    last = self.checkpoint()
                    bar.set_postfix(
                        revenue=f"{last.total_reward:.4g}",
                        change=f"{last.strategy_change:.3g}",
                        exploit=f"{last.critic_nash_conv:.3g}",
                    )
                    if self._converged(last):
                        converged = True
                        break
        finally:
            bar.close()
            torch.set_num_threads(previous_threads)
        if last is None or last.evaluations != self.evaluations:
            last = self.checkpoint() if self._obs is not None else last
        return TrainResult(
            algorithm=getattr(self.algo, "name", type(self.algo).__name__),
            config=replace(cfg),
            seed=cfg.seed,
            evaluations=self.evaluations,
            iterations=self.iterations,
            converged=converged,
            noise_resets=self.noise_resets,
            train_seconds=time.perf_counter() - t0,
            versions=versions(),
            final_pure_prices=(
                None if last is None else {a: v.tolist() for a, v in last.pure_prices.items()}
            ),
            critic_nash_conv=None if last is None else last.critic_nash_conv,
        )

    def evaluate_pure(self, n_steps: int = 1) -> RolloutStats:
        """An evaluation rollout: pure actions, no learning (recorded as ``"eval"``)."""
        return self.rollout(n_steps, learn=False, kind="eval")

    def verify(self, prices: dict[str, np.ndarray]) -> dict[str, Any] | None:
        """Run the verifier (if any) on a pure price profile and record it."""
        if self.verifier is None:
            return None
        out = self.verifier(prices)
        if self.history.checkpoints:
            self.history.checkpoints[-1].verified_nash_conv = float(out["relative_nash_conv"])
        return out

    def save_outputs(
        self, folder: str | Path, summary: TrainResult | Mapping[str, Any]
    ) -> dict[str, Path]:
        """Write evaluations.csv, checkpoints.csv, summary.json, weights and plots.

        Args:
            folder: the run folder (created if missing).
            summary: what summary.json holds, before the list of files written: a
                :class:`TrainResult` (its :meth:`~TrainResult.to_dict`) or a mapping, e.g.
                that dict with the caller's additions.

        Returns:
            The files written, by role (``summary``, ``evaluations``, ``weights``) and by
            plot name.
        """
        from evcs_gym.baselines.plots import plot_run

        if isinstance(summary, TrainResult):
            summary = summary.to_dict()
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        ev_csv, ck_csv = self.history.write_csv(folder)
        weights = folder / "weights.pt"
        self.algo.save(weights)
        plots = plot_run(self.history, folder, title=str(summary.get("algorithm", "")))
        summary = dict(summary, files=[p.name for p in [ev_csv, ck_csv, weights, *plots]])
        path = GameHistory.write_summary(folder, summary)
        return {
            "summary": path,
            "evaluations": ev_csv,
            "weights": weights,
            **{p.stem: p for p in plots},
        }
