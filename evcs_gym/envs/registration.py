"""Gymnasium registration of ``EVCSPricing-v0`` (done on ``import evcs_gym``).

Gymnasium 1.x loads no plugin entry points, so the id is registered when the package is
imported; ``gym.make("evcs_gym:EVCSPricing-v0")`` imports the package first.

Example:
    >>> import gymnasium as gym
    >>> import evcs_gym
    >>> gym.spec("EVCSPricing-v0").entry_point
    'evcs_gym.envs.gym_env:EVCSPricingEnv'
"""

from __future__ import annotations

import gymnasium

__all__ = ["ENV_ID", "register_envs"]

ENV_ID = "EVCSPricing-v0"
ENTRY_POINT = "evcs_gym.envs.gym_env:EVCSPricingEnv"


def register_envs() -> None:
    """Register ``EVCSPricing-v0`` with Gymnasium (a second call does nothing)."""
    if ENV_ID in gymnasium.registry:
        return
    gymnasium.register(id=ENV_ID, entry_point=ENTRY_POINT)
