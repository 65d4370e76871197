"""Single-agent Gymnasium views of the multi-agent pricing game.

:class:`SingleAgentView` turns an EVCS pricing ``ParallelEnv`` (the stateless game, or
the repeated game of :class:`~evcs_gym.wrappers.HistoryWrapper`) into a ``gymnasium.Env``:

* **joint control** (``agent=None``): one controller sets every station's prices. Action:
  ``Box`` of shape ``(n_agents * n_periods,)``, agent-major (station 0's periods, then
  station 1's, … in ``possible_agents`` order), each entry in its station's bounds; over
  ``Discrete`` stations (:class:`~evcs_gym.wrappers.DiscretePrices`) a ``MultiDiscrete``
  of one level per station.
  Observation: the parallel env's global ``state()``. Reward: the sum of all stations'
  rewards — total revenue, the collusive (monopoly) benchmark.
* **best response** (``agent="10"``): one station learns against opponents whose actions
  are fixed (``opponent_prices={agent: prices}``, default: the middle of each opponent's
  action space) or come from ``opponent_policy(observations) -> actions``, called with
  the opponents' current observations ``{agent: obs}`` (a MARL policy's
  ``take_action``-style method fits). Action and observation: that station's spaces.
  Default fixed opponents play the middle of their action space (the middle level of a
  ``Discrete`` one).
  Reward: that station's reward.

Opponent actions are in the parallel env's action units (prices for the unwrapped
game). The episode ends when the parallel game does. ``info`` — joint: ``rewards``
(per station), ``total_revenue`` (raw currency) and ``agents`` (per-station infos);
best response: the station's own info plus ``rewards`` and ``opponent_actions``.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import SingleAgentView
    >>> view = SingleAgentView(evcs_gym.parallel_env(scenario="tiny"), agent="A",
    ...                        opponent_prices={"B": [1.5] * 4})
    >>> obs, info = view.reset(seed=1)
    >>> obs, reward, terminated, truncated, info = view.step(view.action_space.sample())
    >>> terminated, truncated, sorted(info["rewards"])
    (True, False, ['A', 'B'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

__all__ = ["OpponentPolicy", "SingleAgentView"]

OpponentPolicy = Callable[[dict[str, np.ndarray]], Mapping[str, Any]]
"""``policy(observations of the opponents) -> {opponent: action}``."""


class SingleAgentView(gymnasium.Env):
    """Joint-control or best-response Gymnasium view of a pricing ``ParallelEnv``.

    ``metadata`` is copied from the parallel env.

    Args:
        env: the parallel game (base, history-wrapped, rescaled …). Joint control needs
            ``env.state()`` / ``env.state_space``.
        agent: ``None`` for joint control, else the learning station's name.
        opponent_prices: best response only: fixed ``{opponent: action}`` for every
            other station.
        opponent_policy: best response only: ``policy({opponent: obs}) -> {opponent:
            action}``, called every step (must pickle for subprocess vector envs).

    Example:
        >>> import evcs_gym
        >>> from evcs_gym.wrappers import HistoryWrapper
        >>> game = HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=2)
        >>> joint = SingleAgentView(game)  # observes game.state()
        >>> joint.action_space.shape, joint.observation_space.shape
        ((8,), (16,))
    """

    def __init__(
        self,
        env: ParallelEnv,
        agent: str | None = None,
        *,
        opponent_prices: Mapping[str, Any] | None = None,
        opponent_policy: OpponentPolicy | None = None,
    ) -> None:
        self.parallel_env = env
        self.agent = agent
        self.possible_agents = list(env.possible_agents)
        self.metadata = dict(env.metadata)
        self.render_mode = getattr(env.unwrapped, "render_mode", None)
        boxes = [env.action_space(a) for a in self.possible_agents]
        if agent is None:
            if opponent_prices is not None or opponent_policy is not None:
                raise ValueError(
                    "`opponent_prices` / `opponent_policy` need a learning `agent`; "
                    "joint control (agent=None) sets every station's prices"
                )
            state_space = getattr(env, "state_space", None)
            if not isinstance(state_space, spaces.Box):
                raise ValueError(f"joint control needs a Box `state_space` on {env!r}")
            self.action_space = _joint_space(boxes)
            self.observation_space = state_space
            self._sizes = [int(np.prod(b.shape)) for b in boxes]
            self.opponents: list[str] = []
        else:
            if agent not in self.possible_agents:
                raise ValueError(
                    f"`agent` must be one of {self.possible_agents} or None, actually: {agent!r}"
                )
            if opponent_prices is not None and opponent_policy is not None:
                raise ValueError("pass `opponent_prices` or `opponent_policy`, not both")
            if opponent_policy is not None and not callable(opponent_policy):
                raise ValueError(
                    f"`opponent_policy` must be callable, actually: {opponent_policy!r}"
                )
            self.action_space = env.action_space(agent)
            self.observation_space = env.observation_space(agent)
            self.opponents = [a for a in self.possible_agents if a != agent]
        self.opponent_policy = opponent_policy
        self.opponent_prices = self._fixed_opponents(opponent_prices)
        self._last_obs: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, infos = self.parallel_env.reset(seed=seed, options=options)
        self._last_obs = obs
        if self.agent is None:
            return self.parallel_env.state(), {"agents": infos}
        return obs[self.agent], dict(infos.get(self.agent, {}))

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        actions = self._joint_actions(action)
        obs, rewards, terms, truncs, infos = self.parallel_env.step(actions)
        self._last_obs = obs
        if self.agent is None:
            agents = list(rewards)
            info = {
                "rewards": dict(rewards),
                "total_revenue": float(sum(infos[a].get("revenue", 0.0) for a in agents)),
                "agents": infos,
            }
            return (
                self.parallel_env.state(),
                float(sum(rewards.values())),
                all(terms.values()),
                all(truncs.values()),
                info,
            )
        a = self.agent
        info = {
            **infos[a],
            "rewards": dict(rewards),
            "opponent_actions": {o: np.array(actions[o], copy=True) for o in self.opponents},
        }
        return obs[a], float(rewards[a]), bool(terms[a]), bool(truncs[a]), info

    def render(self) -> Any:
        return self.parallel_env.render()

    def close(self) -> None:
        self.parallel_env.close()

    # ------------------------------------------------------------------ internals
    def _joint_actions(self, action: Any) -> dict[str, np.ndarray]:
        try:
            arr = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"action is not numeric: {action!r}") from None
        if self.agent is None:
            if arr.shape != self.action_space.shape:
                raise ValueError(
                    f"joint action must have shape {self.action_space.shape} "
                    f"(n_agents * n_periods, agent-major), got shape {arr.shape}: {action!r}"
                )
            if isinstance(self.action_space, spaces.MultiDiscrete):
                return {a: arr[i].astype(np.int64) for i, a in enumerate(self.possible_agents)}
            parts = np.split(arr, np.cumsum(self._sizes)[:-1])
            return {
                a: p.reshape(self.parallel_env.action_space(a).shape)
                for a, p in zip(self.possible_agents, parts)
            }
        actions = {self.agent: arr}
        if self.opponent_policy is not None:
            observed = {o: self._last_obs[o] for o in self.opponents if o in self._last_obs}
            chosen = self.opponent_policy(observed)
            missing = [o for o in self.opponents if o not in chosen]
            if missing:
                raise ValueError(f"`opponent_policy` returned no action for {missing}")
            actions.update({o: np.asarray(chosen[o], dtype=np.float64) for o in self.opponents})
        else:
            actions.update({o: p.copy() for o, p in self.opponent_prices.items()})
        return actions

    def _fixed_opponents(self, given: Mapping[str, Any] | None) -> dict[str, np.ndarray]:
        if self.agent is None:
            return {}
        env = self.parallel_env
        if given is None:
            return {o: _middle(env.action_space(o)) for o in self.opponents}
        unknown = [o for o in given if o not in self.opponents]
        if unknown:
            raise ValueError(
                f"`opponent_prices` names {unknown}, which are not opponents of {self.agent!r} "
                f"({self.opponents})"
            )
        missing = [o for o in self.opponents if o not in given]
        if missing:
            raise ValueError(f"`opponent_prices` is missing opponent(s) {missing}")
        out = {}
        for o in self.opponents:
            row = np.asarray(given[o], dtype=np.float64)
            space = env.action_space(o)
            shape = space.shape
            if (
                isinstance(space, spaces.Discrete)
                and row.shape == ()
                and space.contains(int(row) if np.isfinite(row) and row == int(row) else -1)
            ):
                out[o] = np.asarray(int(row))
                continue
            if row.shape != shape or not np.all(np.isfinite(row)):
                raise ValueError(
                    f"`opponent_prices[{o!r}]` must be finite with shape {shape}, "
                    f"actually: {given[o]!r}"
                )
            out[o] = row
        return out

    def __str__(self) -> str:
        mode = "joint" if self.agent is None else f"best response of {self.agent!r}"
        return f"SingleAgentView<{self.parallel_env}, {mode}>"


def _joint_space(parts: list[spaces.Space]) -> spaces.Box | spaces.MultiDiscrete:
    """The joint action space of the stations' spaces (all Box or all Discrete)."""
    if all(isinstance(b, spaces.Discrete) for b in parts):
        return spaces.MultiDiscrete([int(b.n) for b in parts])  # type: ignore[attr-defined]
    if not all(isinstance(b, spaces.Box) for b in parts):
        raise ValueError(f"joint control needs all Box or all Discrete action spaces, got {parts}")
    return spaces.Box(
        np.concatenate([b.low.ravel() for b in parts]),  # type: ignore[attr-defined]
        np.concatenate([b.high.ravel() for b in parts]),  # type: ignore[attr-defined]
        dtype=np.float32,
    )


def _middle(space: spaces.Space) -> np.ndarray:
    """The middle of an action space: of a Box's bounds, or a Discrete's middle level."""
    if isinstance(space, spaces.Discrete):
        return np.asarray(int(space.start) + int(space.n) // 2)
    box = space
    return ((box.low + box.high) / 2).astype(np.float64)  # type: ignore[attr-defined]
