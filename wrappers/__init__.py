"""Wrappers around the pricing game (installed as ``evcs_gym.wrappers``).

* :class:`HistoryWrapper` — repeated game of ``rounds`` rounds; observations from the
  last ``k`` rounds' prices and flows, ``state()`` for centralised critics.
* :class:`RescaleActions` — every agent's actions in ``[-1, 1]`` (PettingZoo).
* :class:`DiscretePrices` — ``Discrete(m)`` actions over a price grid (Calvano's path
  from the Nash to the collusive reference by default).
* :class:`NumericInfo` — flat numeric infos, the same keys at reset and at every step
  (TensorDict specs: TorchRL, BenchMARL).
* :class:`SingleAgentView` — Gymnasium view: joint control or one station's best response.
* :class:`EVCSVectorEnv` / :func:`make_vector_env` — ``num_envs`` copies stepped at once,
  evaluations in an :class:`evcs_gym.ParallelEvaluatorPool`.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import HistoryWrapper, RescaleActions
    >>> env = RescaleActions(HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=5))
    >>> env.action_space("A").low.tolist(), env.observation_space("A").shape
    ([-1.0, -1.0, -1.0, -1.0], (14,))
"""

from __future__ import annotations

from evcs_gym.wrappers.discrete import DiscretePrices
from evcs_gym.wrappers.history import HistoryCore, HistoryWrapper
from evcs_gym.wrappers.numeric_info import NumericInfo
from evcs_gym.wrappers.rescale import RescaleActions
from evcs_gym.wrappers.single_agent import SingleAgentView
from evcs_gym.wrappers.vector import EVCSVectorEnv, make_vector_env

__all__ = [
    "DiscretePrices",
    "EVCSVectorEnv",
    "HistoryCore",
    "HistoryWrapper",
    "NumericInfo",
    "RescaleActions",
    "SingleAgentView",
    "make_vector_env",
]
