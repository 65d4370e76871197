"""Repeated pricing game: observations built from the last rounds' prices and flows.

:class:`HistoryWrapper` turns the one-step :class:`~evcs_gym.envs.EVCSPricingParallelEnv`
into a repeated game of ``rounds`` rounds. The base env stays stateless; all history lives
here, in a :class:`HistoryCore` (plain numpy arrays, also used by the Gymnasium view
``gym.make("EVCSPricing-v0", rounds=...)``, which is
:class:`~evcs_gym.wrappers.SingleAgentView` over this wrapper).

Observation of agent ``i`` (float32, every part optional except the prices):

| Part      | Size      | Content                                                 | Range  |
|-----------|-----------|---------------------------------------------------------|--------|
| prices    | k·n·P     | last ``k`` rounds (most recent first) of all ``n``      | [0, 1] |
|           |           | stations' ``P`` prices, ``(p − low) / (high − low)``    |        |
| own flows | k·P       | own vehicles charged per period in those rounds /       | [0, F] |
|           |           | ``settings.flow_scale_factor`` (``include_flows``)      |        |
| beliefs   | (n − 1)·P | moving average of the others' normalised prices,        | [0, 1] |
|           |           | ``b ← ema·b + (1 − ema)·p`` (``ema`` not None)          |        |
| agent id  | n         | one-hot index in ``possible_agents`` (``agent_id``)     | {0, 1} |
| round     | 1         | rounds played / ``rounds`` (``include_round``)          | [0, 1] |

``F`` = simulated charging vehicles / ``flow_scale_factor`` (no station can exceed it).
``state()`` (``state_space``) is the global view for centralised critics (MAPPO,
MADDPG): the last ``k`` rounds of all stations' normalised prices (k·n·P), then of all
stations' normalised flows (k·n·P), then the round fraction if ``include_round``.

Initial history (before round 1): prices per ``initial_prices`` — ``"random"`` (default:
uniform in the bounds, drawn from the reset seed), ``"mid"`` (bound midpoints) or a dict
``{agent: prices}`` (every row the same); flows zero; beliefs equal to the most recent
initial prices. ``reset(options={"initial_prices": ...})`` overrides it for one episode.

Episode end: after ``rounds`` rounds every agent is *truncated* (``truncations`` True,
``terminations`` False): the repeated game has no terminal state, the round limit is a
time limit, so value-based learners should bootstrap through it. Earlier rounds return
both False.

Seeding: ``reset(seed=s)`` seeds the wrapper's generator with
``gymnasium.utils.seeding.np_random(s)``; it draws the random initial history and the
base env's seed. ``reset()`` without a seed continues both streams.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.wrappers import HistoryWrapper
    >>> env = HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=2, k=1)
    >>> obs, infos = env.reset(seed=0, options={"initial_prices": "mid"})
    >>> obs["A"][:8].tolist()
    [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    >>> obs, rewards, terms, truncs, infos = env.step({"A": [2.0] * 4, "B": [0.5] * 4})
    >>> obs["A"][:8].tolist(), truncs["A"], terms["A"]
    ([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], False, False)
    >>> obs, rewards, terms, truncs, infos = env.step({"A": [1.25] * 4, "B": [1.25] * 4})
    >>> truncs, env.agents
    ({'A': True, 'B': True}, [])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from numpy.typing import ArrayLike
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.envs.parallel_env import EVCSPricingParallelEnv, PendingStep
from evcs_gym.ue.evaluator import EvalResult

__all__ = ["HistoryCore", "HistoryWrapper", "InitialPrices"]

InitialPrices = Literal["random", "mid"] | Mapping[str, Any]
_SEED_HIGH = 2**31 - 1


class HistoryCore:
    """Arrays of the last ``k`` rounds of a pricing game, normalised; no env logic.

    Args:
        low, high: ``(n_agents,)`` price bounds.
        n_periods: prices per agent and round.
        k: rounds kept.
        flow_scale: divisor of flows (``settings.flow_scale_factor``).
        flow_high: upper bound of normalised flows.
        rounds: episode length (for the round fraction).
        include_flows, ema, agent_id, include_round: observation parts (module docstring).

    Example:
        >>> core = HistoryCore(np.array([0.0, 0.0]), np.array([2.0, 2.0]), 1, k=2,
        ...                    flow_scale=10.0, flow_high=5.0, rounds=3)
        >>> core.reset(np.full((2, 2, 1), 0.5))
        >>> core.update(np.array([[1.0], [2.0]]), np.array([[20.0], [0.0]]))
        >>> core.observation(0).tolist()
        [0.5, 1.0, 0.5, 0.5, 2.0, 0.0, 1.0, 0.0]
    """

    def __init__(
        self,
        low: np.ndarray,
        high: np.ndarray,
        n_periods: int,
        *,
        k: int = 1,
        flow_scale: float,
        flow_high: float,
        rounds: int,
        include_flows: bool = True,
        ema: float | None = None,
        agent_id: bool = True,
        include_round: bool = False,
    ) -> None:
        self.low = np.asarray(low, dtype=np.float64)[:, None]
        self.span = (np.asarray(high, dtype=np.float64) - np.asarray(low, dtype=np.float64))[
            :, None
        ]
        self.n_agents = len(self.low)
        self.n_periods = int(n_periods)
        self.k = int(k)
        self.flow_scale = float(flow_scale)
        self.flow_high = float(flow_high)
        self.rounds = int(rounds)
        self.include_flows = include_flows
        self.ema = ema
        self.agent_id = agent_id
        self.include_round = include_round
        shape = (self.k, self.n_agents, self.n_periods)
        self.prices = np.zeros(shape)
        self.flows = np.zeros(shape)
        self.belief = np.zeros((self.n_agents, self.n_periods))
        self.round = 0

    # ------------------------------------------------------------------ spaces
    def observation_space(self) -> spaces.Box:
        n, p, k = self.n_agents, self.n_periods, self.k
        highs = [np.ones(k * n * p)]
        if self.include_flows:
            highs.append(np.full(k * p, self.flow_high))
        if self.ema is not None:
            highs.append(np.ones((n - 1) * p))
        if self.agent_id:
            highs.append(np.ones(n))
        if self.include_round:
            highs.append(np.ones(1))
        high = np.concatenate(highs).astype(np.float32)
        return spaces.Box(np.zeros_like(high), high, dtype=np.float32)

    def state_space(self) -> spaces.Box:
        size = self.k * self.n_agents * self.n_periods
        high = np.concatenate(
            [np.ones(size), np.full(size, self.flow_high), np.ones(int(self.include_round))]
        ).astype(np.float32)
        return spaces.Box(np.zeros_like(high), high, dtype=np.float32)

    # ------------------------------------------------------------------ updates
    def normalise_prices(self, prices: np.ndarray) -> np.ndarray:
        """``(..., n, P)`` prices -> position in the bounds, in [0, 1] (0.5 if low == high)."""
        safe = np.where(self.span > 0, self.span, 1.0)
        out = np.where(self.span > 0, (np.asarray(prices) - self.low) / safe, 0.5)
        return np.clip(out, 0.0, 1.0)

    def reset(self, initial_prices_normalised: np.ndarray) -> None:
        """Start a new episode from ``(k, n, P)`` normalised prices, zero flows."""
        init = np.asarray(initial_prices_normalised, dtype=np.float64)
        assert init.shape == self.prices.shape, (init.shape, self.prices.shape)
        self.prices = init.copy()
        self.flows = np.zeros_like(self.prices)
        self.belief = init[0].copy()
        self.round = 0

    def update(self, prices: np.ndarray, flows: np.ndarray) -> None:
        """Record one round of raw ``(n, P)`` prices and flows."""
        norm = self.normalise_prices(prices)
        self.prices = np.concatenate([norm[None], self.prices[:-1]])
        scaled = np.clip(np.asarray(flows, dtype=np.float64) / self.flow_scale, 0, self.flow_high)
        self.flows = np.concatenate([scaled[None], self.flows[:-1]])
        if self.ema is not None:
            self.belief = self.ema * self.belief + (1.0 - self.ema) * norm
        self.round += 1

    # ------------------------------------------------------------------ views
    def observation(self, i: int) -> np.ndarray:
        parts: list[ArrayLike] = [self.prices.ravel()]
        if self.include_flows:
            parts.append(self.flows[:, i, :].ravel())
        if self.ema is not None:
            parts.append(np.delete(self.belief, i, axis=0).ravel())
        if self.agent_id:
            parts.append(np.eye(self.n_agents)[i])
        if self.include_round:
            parts.append([self.round / self.rounds])
        return np.concatenate(parts).astype(np.float32)

    def state(self) -> np.ndarray:
        parts: list[ArrayLike] = [self.prices.ravel(), self.flows.ravel()]
        if self.include_round:
            parts.append([self.round / self.rounds])
        return np.concatenate(parts).astype(np.float32)


class HistoryWrapper(BaseParallelWrapper):
    """Repeated game of ``rounds`` rounds over an EVCS pricing ``ParallelEnv``.

    See the module docstring for the observation, the state, the initial history, the
    episode end and seeding.

    Args:
        env: an :class:`~evcs_gym.envs.EVCSPricingParallelEnv`, possibly wrapped (e.g. in
            :class:`~evcs_gym.wrappers.RescaleActions`).
        rounds: rounds per episode (positive).
        k: past rounds in the observation (positive).
        include_flows: add the agent's own flows of those rounds.
        ema: weight of the past in the belief about the others' prices, in [0, 1);
            ``None`` leaves the beliefs out.
        agent_id: add the one-hot agent index (needed by policies shared between agents).
        include_round: add the fraction of rounds played.
        initial_prices: ``"random"``, ``"mid"`` or ``{agent: prices}``.

    Example:
        >>> import evcs_gym
        >>> env = HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=3, k=2, ema=0.8)
        >>> env.observation_space("A").shape, env.state_space.shape
        ((30,), (32,))
    """

    def __init__(
        self,
        env: ParallelEnv,
        rounds: int = 10,
        *,
        k: int = 1,
        include_flows: bool = True,
        ema: float | None = None,
        agent_id: bool = True,
        include_round: bool = False,
        initial_prices: InitialPrices = "random",
    ) -> None:
        super().__init__(env)
        base = env.unwrapped
        if not isinstance(base, EVCSPricingParallelEnv):
            raise TypeError(
                f"HistoryWrapper needs an EVCSPricingParallelEnv (possibly wrapped), got {env!r}"
            )
        if isinstance(env, HistoryWrapper) or _wraps_history(env):
            raise ValueError("`env` already has a HistoryWrapper")
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise ValueError(f"`rounds` must be a positive integer, actually: {rounds!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"`k` must be a positive integer, actually: {k!r}")
        if ema is not None and not (
            isinstance(ema, (int, float)) and not isinstance(ema, bool) and 0 <= ema < 1
        ):
            raise ValueError(f"`ema` must be None or a number in [0, 1), actually: {ema!r}")
        nd = base.network
        self.network = nd
        self.rounds = int(rounds)
        self.k = int(k)
        self.metadata = dict(env.metadata)
        self.possible_agents = list(env.possible_agents)
        bounds = np.array([nd.price_bounds[a] for a in self.possible_agents], dtype=np.float64)
        flow_scale = float(nd.settings.flow_scale_factor)
        max_flow = float(nd.simulated_vehicles()["charging"])
        self._core = HistoryCore(
            bounds[:, 0],
            bounds[:, 1],
            nd.n_periods,
            k=self.k,
            flow_scale=flow_scale,
            flow_high=max(max_flow / flow_scale, 1.0),
            rounds=self.rounds,
            include_flows=include_flows,
            ema=None if ema is None else float(ema),
            agent_id=agent_id,
            include_round=include_round,
        )
        self.initial_prices = initial_prices
        self._check_initial(initial_prices)
        space = self._core.observation_space()
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.state_space = self._core.state_space()
        self._rng: np.random.Generator | None = None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    @property
    def round(self) -> int:
        """Rounds played in the current episode."""
        return self._core.round

    @property
    def history(self) -> HistoryCore:
        """The history arrays (read them, don't write them)."""
        return self._core

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        inner_seed = None
        if seed is not None:
            self._rng, _ = seeding.np_random(seed)
            inner_seed = int(self._rng.integers(0, _SEED_HIGH))
        _, infos = self.env.reset(seed=inner_seed, options=options)
        initial = self.initial_prices
        if options and "initial_prices" in options:
            initial = options["initial_prices"]
            self._check_initial(initial)
        self._core.reset(self._initial_history(initial))
        infos = {a: {**infos.get(a, {}), "round": 0} for a in self.env.agents}
        return self._observations(), infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        self._check_running()
        return self._after_round(self.env.step(actions))

    def begin_step(self, actions: Mapping[str, Any]) -> PendingStep:
        """Two-phase step (see :meth:`EVCSPricingParallelEnv.begin_step`)."""
        self._check_running()
        return self.env.begin_step(actions)

    def end_step(self, pending: PendingStep, result: EvalResult) -> tuple[dict, ...]:
        return self._after_round(self.env.end_step(pending, result))

    def state(self) -> np.ndarray:
        """Global state: all stations' recent normalised prices and flows."""
        return self._core.state()

    # ------------------------------------------------------------------ internals
    @property
    def np_random(self) -> np.random.Generator:
        if self._rng is None:
            self._rng, _ = seeding.np_random()
        return self._rng

    def _check_running(self) -> None:
        if not self.env.agents:
            raise RuntimeError("step() called without a running episode; call reset() first")

    def _after_round(self, out: tuple) -> tuple[dict, dict, dict, dict, dict]:
        _, rewards, _, _, infos = out
        agents = list(rewards)
        prices = np.stack([infos[a]["prices"] for a in self.possible_agents])
        flows = np.stack([infos[a]["flows"] for a in self.possible_agents])
        self._core.update(prices, flows)
        done = self._core.round >= self.rounds
        if not done:
            self.env.reset()  # the next stage game; continues the base env's seed stream
        obs = self._observations(agents)
        terminations = dict.fromkeys(agents, False)
        truncations = dict.fromkeys(agents, done)
        for a in agents:
            infos[a]["round"] = self._core.round
        return obs, rewards, terminations, truncations, infos

    def _observations(self, agents: list[str] | None = None) -> dict[str, np.ndarray]:
        agents = self.env.agents if agents is None else agents
        index = {a: i for i, a in enumerate(self.possible_agents)}
        return {a: self._core.observation(index[a]) for a in agents}

    def _check_initial(self, initial: Any) -> None:
        if isinstance(initial, str):
            if initial not in ("random", "mid"):
                raise ValueError(
                    f"`initial_prices` must be 'random', 'mid' or {{agent: prices}}, "
                    f"actually: {initial!r}"
                )
            return
        if not isinstance(initial, Mapping):
            raise ValueError(
                f"`initial_prices` must be 'random', 'mid' or {{agent: prices}}, actually: "
                f"{initial!r}"
            )
        missing = [a for a in self.possible_agents if a not in initial]
        if missing:
            raise ValueError(f"`initial_prices` is missing agent(s) {missing}")
        for a in self.possible_agents:
            row = np.asarray(initial[a], dtype=np.float64)
            if row.shape != (self.network.n_periods,) or not np.all(np.isfinite(row)):
                raise ValueError(
                    f"`initial_prices[{a!r}]` must be {self.network.n_periods} finite prices, "
                    f"actually: {initial[a]!r}"
                )

    def _initial_history(self, initial: Any) -> np.ndarray:
        core = self._core
        shape = (core.k, core.n_agents, core.n_periods)
        if isinstance(initial, str):
            if initial == "mid":
                return np.full(shape, 0.5)
            return self.np_random.uniform(0.0, 1.0, size=shape)
        raw = np.stack([np.asarray(initial[a], dtype=np.float64) for a in self.possible_agents])
        return np.broadcast_to(core.normalise_prices(raw), shape).copy()

    def __str__(self) -> str:
        return f"HistoryWrapper<{self.env}, rounds={self.rounds}, k={self.k}>"


def _wraps_history(env: Any) -> bool:
    inner = getattr(env, "env", None)
    while inner is not None:
        if isinstance(inner, HistoryWrapper):
            return True
        inner = getattr(inner, "env", None)
    return False
