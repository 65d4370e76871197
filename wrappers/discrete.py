"""Discrete pricing: each station picks one of ``m`` price profiles (PettingZoo).

:class:`DiscretePrices` gives every station a ``Discrete(m)`` action over a
:class:`~evcs_gym.tabular.PriceGrid`: level ``k`` sets the station's whole profile of
per-period prices to ``grid.prices[station, k]``. By default the grid is Calvano et
al.'s (AER 2020, :func:`~evcs_gym.tabular.calvano_grid`): ``m`` levels ``t`` from ``−ξ``
to ``1 + ξ``, level ``k`` at ``N + t_k (M − N)``, a point on the path from the game's
Nash reference N to its collusive reference M, clipped to the bounds. One action sets
all periods, as Calvano's firms set one price a round: a level per period would give a
station ``m^P`` actions and a tabular learner's joint table ``m^(n·P)`` rows
(``tiny_market`` at 15 levels: 2.6 × 10⁹ instead of 225). Pass your own grid as
``{station: (m, n_periods) profiles}`` for any other set of profiles.

The wrapper maps levels to prices and leaves everything else to the env it wraps, so it
composes: ``HistoryWrapper(DiscretePrices(parallel_env(...)))`` is the repeated game
with discrete actions (observations from the prices played), the vector env
(:func:`~evcs_gym.wrappers.make_vector_env` with ``discrete=``) steps copies of it on a
pool, and :class:`~evcs_gym.wrappers.SingleAgentView` makes a Gymnasium env of it
(``MultiDiscrete`` under joint control). ``infos[station]["level"]`` holds the level
played. An action is an integer in ``[0, m)`` (a Python or numpy integer, or an
integral float such as a Gymnasium view passes); anything else raises ``ValueError``
naming the station and the value.

With ``eval_seed`` fixed in the base env, every step is a pure function of the levels:
the rewards of :func:`~evcs_gym.tabular.simulator_table` on the same grid and seed, to
the bit (:class:`~evcs_gym.envs.TablePricingEnv` replays them in microseconds).

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import DiscretePrices
    >>> env = DiscretePrices(evcs_gym.parallel_env(scenario="tiny_market"), m=5)
    >>> env.action_space("A")
    Discrete(5)
    >>> _ = env.reset(seed=0)
    >>> infos = env.step({"A": 0, "B": 4})[4]
    >>> infos["A"]["level"], infos["A"]["prices"].round(2).tolist()
    (0, [0.97, 1.2, 1.09, 1.12])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from numpy.typing import ArrayLike
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.envs.parallel_env import EVCSPricingParallelEnv, PendingStep
from evcs_gym.tabular import PriceGrid, calvano_grid
from evcs_gym.ue.evaluator import EvalResult

__all__ = ["DiscretePrices", "GridLike", "resolve_grid"]

GridLike = PriceGrid | Mapping[str, ArrayLike]
"""A :class:`~evcs_gym.tabular.PriceGrid` or ``{station: (m, n_periods) profiles}``."""


def resolve_grid(env: ParallelEnv, grid: GridLike | None, m: int, xi: float) -> PriceGrid:
    """The grid of ``env``'s game: ``grid`` checked against it, or Calvano's (``m``, ``xi``)."""
    base = getattr(env, "unwrapped", None)
    if not isinstance(base, EVCSPricingParallelEnv):
        raise TypeError(
            f"DiscretePrices needs an EVCSPricingParallelEnv (possibly wrapped), got {env!r}"
        )
    nd = base.network
    if grid is None:
        return calvano_grid(nd, m=m, xi=xi)
    if isinstance(grid, PriceGrid):
        grid.check_bounds(nd)
        return grid
    return PriceGrid.from_profiles(nd, grid)


class DiscretePrices(BaseParallelWrapper):
    """``Discrete(m)`` actions over a price grid for every station (module docstring).

    Args:
        env: an :class:`~evcs_gym.envs.EVCSPricingParallelEnv`, possibly wrapped (e.g.
            in :class:`~evcs_gym.wrappers.HistoryWrapper`), whose actions are prices.
        grid: a :class:`~evcs_gym.tabular.PriceGrid` or ``{station: (m, n_periods)
            profiles}``; ``None``: Calvano's grid from the game's references.
        m: levels of the default grid (at least 2).
        xi: how far the default grid runs beyond N and M, as a share of the way.

    Example:
        >>> import evcs_gym
        >>> grid = {"A": [[1.0] * 4, [1.5] * 4], "B": [[1.2] * 4, [2.0] * 4]}
        >>> env = DiscretePrices(evcs_gym.parallel_env(scenario="tiny_market"), grid)
        >>> env.to_env_actions({"A": 1, "B": 0})["B"].tolist()
        [1.2, 1.2, 1.2, 1.2]
    """

    def __init__(
        self, env: ParallelEnv, grid: GridLike | None = None, *, m: int = 15, xi: float = 0.1
    ) -> None:
        super().__init__(env)
        self.grid = resolve_grid(env, grid, m, xi)
        self.metadata = dict(env.metadata)
        self.possible_agents = list(env.possible_agents)
        if list(self.grid.agents) != self.possible_agents:
            raise ValueError(
                f"the grid is for stations {list(self.grid.agents)}, the env has "
                f"{self.possible_agents}"
            )
        self.action_spaces = {a: spaces.Discrete(self.grid.m) for a in self.possible_agents}
        self._levels: dict[str, int] = {}

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.action_spaces[agent]

    def level(self, agent: str, action: Any) -> int:
        """``action`` of ``agent`` as a level in ``[0, m)``.

        Raises:
            ValueError: not an integer (or an integral float) in ``[0, m)``.
        """
        m = self.grid.m
        try:
            value = np.asarray(action)
            ok = value.shape == () and value.dtype.kind in "iuf" and float(value) == int(value)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok or not 0 <= int(value) < m:
            raise ValueError(
                f"action of agent {agent!r} must be an integer level in [0, {m}), got {action!r}"
            )
        return int(value)

    def to_env_actions(self, actions: Mapping[str, Any]) -> dict[str, Any]:
        """Levels to the wrapped env's prices (agents the wrapper doesn't know pass as is)."""
        if not isinstance(actions, Mapping):
            raise ValueError(f"`actions` must be a dict {{agent: level}}, got {actions!r}")
        out: dict[str, Any] = {}
        levels: dict[str, int] = {}
        for agent, raw in actions.items():
            if agent not in self.action_spaces:
                out[agent] = raw
                continue
            levels[agent] = self.level(agent, raw)
            out[agent] = self.grid.prices[self.possible_agents.index(agent), levels[agent]].copy()
        self._levels = levels
        return out

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        return self._with_levels(self.env.step(self.to_env_actions(actions)))

    def begin_step(self, actions: Mapping[str, Any]) -> PendingStep:
        """Two-phase step (see :meth:`EVCSPricingParallelEnv.begin_step`)."""
        return self.env.begin_step(self.to_env_actions(actions))

    def end_step(self, pending: PendingStep, result: EvalResult) -> tuple[dict, ...]:
        return self._with_levels(self.env.end_step(pending, result))

    def _with_levels(self, out: tuple) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terms, truncs, infos = out
        for agent, level in self._levels.items():
            if agent in infos:
                infos[agent]["level"] = level
        return obs, rewards, terms, truncs, infos

    def __str__(self) -> str:
        return f"DiscretePrices<{self.env}, m={self.grid.m}>"
