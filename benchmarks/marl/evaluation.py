"""One evaluation for every library: deterministic episodes on the same env and seeds.

A trained policy enters as ``act(observations) -> actions`` on one env's dicts
(``{agent: (obs_dim,)} -> {agent: (act_dim,)}``); each library's runner builds that
callable from its own policy object. The score of an episode is the undiscounted sum of
the agents' mean reward per step (for MPE2 ``simple_spread`` and VMAS ``navigation``
what BenchMARL logs as ``episode_reward_mean``, per agent).

Example:
    >>> import numpy as np
    >>> from marl.evaluation import evaluate_returns
    >>> from marl.tasks import make_env
    >>> still = lambda obs: {a: np.zeros(5, np.float32) for a in obs}
    >>> returns = evaluate_returns(lambda: make_env("simple_spread"), still, episodes=2)
    >>> len(returns), all(r < 0 for r in returns)
    (2, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["EVAL_EPISODES", "EVAL_SEED", "evaluate_returns"]

EVAL_EPISODES = 32
"""Evaluation episodes per run."""
EVAL_SEED = 10_000
"""Episode ``i`` is reset with seed ``EVAL_SEED + i`` (never a training seed)."""

Policy = Callable[[Mapping[str, np.ndarray]], Mapping[str, Any]]


def evaluate_returns(
    make_env: Callable[[], Any],
    act: Policy,
    *,
    episodes: int = EVAL_EPISODES,
    seed: int = EVAL_SEED,
) -> list[float]:
    """Run ``episodes`` deterministic episodes; return each one's mean-over-agents return."""
    if episodes < 1:
        raise ValueError(f"`episodes` must be >= 1, got {episodes}")
    env = make_env()
    returns = []
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            total = 0.0
            while env.agents:
                actions = act(obs)
                obs, rewards, _, _, _ = env.step({a: actions[a] for a in env.agents})
                total += float(np.mean(list(rewards.values())))
            returns.append(total)
    finally:
        env.close()
    return returns
