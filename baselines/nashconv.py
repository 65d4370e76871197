"""NashConv *estimate* from learned critics, by projected multi-start gradient ascent.

For a joint action ``a`` at observations ``o``, NashConv is ``sum_i max_b Q_i(o, b, a_-i) -
Q_i(o, a)``: how much each agent could gain by deviating alone. Here ``Q_i`` are the learned
critics (see :meth:`Algorithm.get_critics`), so the result is only as good as the critics: it
is an *estimate*, useful as a cheap training diagnostic. The simulator-verified
exploitability (re-evaluating deviations in the real environment) lives elsewhere.

For each agent the maximisation runs Rprop (sign-based, per-coordinate adaptive steps, hence
insensitive to the critic's scale) on the agent's own action, in coordinates normalised to
``[-1, 1]`` by the Box bounds (``lr`` is the initial step in units of half the action range),
clamping to the box after every step (projected gradient ascent). There are ``n_starts``
starts: the given action and uniform random points in the box. The best value seen over all
starts and steps is kept, and the given action itself is evaluated exactly, so
``best_value >= current_value`` and the gain is exactly 0 when nothing better is found.
Cost per agent: ``steps + 2`` critic evaluations on a batch of ``n_starts``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from evcs_gym.baselines.algorithm import CriticFn
from evcs_gym.baselines.common import box_bounds

__all__ = ["NashConvChecker", "NashConvResult"]


@dataclass
class NashConvResult:
    """Per-agent best responses against the critics, and the summed gains."""

    best_action: dict[str, np.ndarray]
    """Best action found for each agent (others fixed), inside the bounds."""
    best_value: dict[str, float]
    """Critic value at ``best_action``."""
    current_value: dict[str, float]
    """Critic value at the given joint action."""
    gain: dict[str, float]
    """``max(0, best_value - current_value)`` per agent."""
    nash_conv: float
    """Sum of the gains."""


class NashConvChecker:
    """Estimate NashConv of a joint action from per-agent critics.

    ``critics[agent](obs_all, actions_all) -> (B,)`` must be differentiable in
    ``actions_all[agent]`` and evaluate rows independently (no batch statistics).

    >>> from gymnasium.spaces import Box
    >>> target = {"a": torch.tensor([0.3]), "b": torch.tensor([2.0])}  # b's optimum is outside
    >>> critics = {k: (lambda o, x, k=k: -((x[k] - target[k]) ** 2).sum(-1)) for k in target}
    >>> checker = NashConvChecker(critics, {"a": Box(-1, 1, (1,)), "b": Box(-1, 1, (1,))})
    >>> res = checker.check({"a": np.zeros(1), "b": np.zeros(1)},
    ...                     {"a": np.array([0.3]), "b": np.array([0.0])})
    >>> round(res.gain["a"], 6), round(res.gain["b"], 4), res.best_action["b"].round(4)
    (0.0, 3.0, array([1.], dtype=float32))
    """

    def __init__(
        self,
        critics: Mapping[str, CriticFn],
        action_spaces: Mapping[str, Any],
        n_starts: int = 8,
        steps: int = 100,
        lr: float = 0.05,
        seed: int = 0,
    ) -> None:
        if n_starts < 1 or steps < 0 or not lr > 0:
            raise ValueError(
                f"need n_starts >= 1, steps >= 0, lr > 0; got {n_starts}, {steps}, {lr}"
            )
        missing = [a for a in critics if a not in action_spaces]
        if missing:
            raise ValueError(f"no action space for agent {missing[0]!r}")
        self.critics = dict(critics)
        self.bounds = {a: box_bounds(s, a, "action", finite=True) for a, s in action_spaces.items()}
        self.n_starts, self.steps, self.lr, self.seed = n_starts, steps, lr, seed

    def check(
        self, obs: Mapping[str, np.ndarray], actions: Mapping[str, np.ndarray]
    ) -> NashConvResult:
        """Best responses for one state: ``obs[agent]`` is ``(obs_dim,)``, ``actions[agent]``
        is ``(act_dim,)`` for every agent with an action space. Deterministic given ``seed``."""
        acts: dict[str, np.ndarray] = {}
        for a, (lo, hi) in self.bounds.items():
            if a not in actions:
                raise ValueError(f"actions: missing agent {a!r}")
            x = np.asarray(actions[a], dtype=np.float64).reshape(-1)
            if x.shape != lo.shape or not np.all(np.isfinite(x)):
                raise ValueError(f"actions[{a!r}]: expected finite shape {lo.shape}, got {x}")
            tol = 1e-5 * np.maximum(hi - lo, 1.0)
            if np.any(x < lo - tol) or np.any(x > hi + tol):
                raise ValueError(f"actions[{a!r}]: outside the action bounds")
            acts[a] = np.clip(x, lo, hi)
        n = self.n_starts
        obs_t = {
            a: torch.as_tensor(np.asarray(o, np.float32).reshape(1, -1)).expand(n, -1)
            for a, o in obs.items()
        }
        act_t = {a: torch.as_tensor(x, dtype=torch.float32).expand(n, -1) for a, x in acts.items()}
        root = np.random.SeedSequence(self.seed)
        result = NashConvResult({}, {}, {}, {}, 0.0)
        for (agent, critic), seq in zip(
            self.critics.items(), root.spawn(len(self.critics)), strict=True
        ):
            best_a, best_v, cur_v = self._best_response(agent, critic, obs_t, act_t, seq)
            gain = max(0.0, best_v - cur_v)
            result.best_action[agent] = best_a
            result.best_value[agent] = best_v
            result.current_value[agent] = cur_v
            result.gain[agent] = gain
            result.nash_conv += gain
        return result

    def _best_response(
        self,
        agent: str,
        critic: CriticFn,
        obs_t: dict[str, torch.Tensor],
        act_t: dict[str, torch.Tensor],
        seq: np.random.SeedSequence,
    ) -> tuple[np.ndarray, float, float]:
        lo, hi = self.bounds[agent]
        mid = torch.as_tensor((hi + lo) / 2, dtype=torch.float32)
        half = torch.as_tensor((hi - lo) / 2, dtype=torch.float32)
        given = act_t[agent][0]
        u0 = torch.where(half > 0, (given - mid) / torch.where(half > 0, half, 1.0), 0.0)
        starts = np.random.default_rng(seq).uniform(-1.0, 1.0, (self.n_starts - 1, lo.size))
        u = torch.cat([u0[None], torch.as_tensor(starts, dtype=torch.float32)]).clamp(-1, 1)
        u.requires_grad_(True)
        optim = torch.optim.Rprop([u], lr=self.lr, etas=(0.5, 1.2), step_sizes=(1e-6, 1.0))
        acts = dict(act_t)

        def evaluate(own: torch.Tensor) -> torch.Tensor:
            acts[agent] = own
            q = critic(obs_t, acts)
            if tuple(q.shape) != (self.n_starts,):
                raise ValueError(
                    f"critic of {agent!r} returned shape {tuple(q.shape)}, "
                    f"expected ({self.n_starts},)"
                )
            return q

        with torch.no_grad():
            current = float(evaluate(act_t[agent])[0])  # exactly at the given joint action
        if not math.isfinite(current):
            raise ValueError(f"critic of {agent!r} is not finite at the given actions")
        best_v = torch.full((self.n_starts,), -math.inf)
        best_u = u.detach().clone()
        for step in range(self.steps + 1):
            q = evaluate(mid + half * u)
            qd = q.detach().float().cpu()
            better = qd > best_v
            best_v = torch.where(better, qd, best_v)
            best_u = torch.where(better[:, None], u.detach(), best_u)
            if step == self.steps:
                break
            if not q.requires_grad:
                raise ValueError(
                    f"critic of {agent!r} returned a tensor without grad: it must be "
                    "differentiable in the agent's own action"
                )
            (grad,) = torch.autograd.grad(q.sum(), u, allow_unused=True)
            if grad is None:  # the critic ignores this agent's action: nothing to gain
                break
            u.grad = -grad
            optim.step()
            with torch.no_grad():
                u.clamp_(-1.0, 1.0)
        k = int(torch.argmax(best_v))
        if not float(best_v[k]) > current:
            return given.numpy().copy(), current, current
        best_action = (mid + half * best_u[k]).numpy()
        best_action = np.clip(best_action, lo.astype(np.float32), hi.astype(np.float32))
        return best_action, float(best_v[k]), current
