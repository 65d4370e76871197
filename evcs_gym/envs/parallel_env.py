"""The one-step EVCS pricing game as a PettingZoo ``ParallelEnv``.

:class:`EVCSPricingParallelEnv` is stateless: one :meth:`~EVCSPricingParallelEnv.step`
evaluates the joint price profile with an :class:`~evcs_gym.EVCSRewardEvaluator` (or any
object with ``evaluate(prices, seed)``, e.g. an :class:`evcs_gym.ParallelEvaluatorPool`)
and ends the episode. Repeated play with observations built from past rounds is the job
of :class:`evcs_gym.wrappers.HistoryWrapper`; vectorisation over a process pool is the
job of :class:`evcs_gym.wrappers.EVCSVectorEnv`.

A step is split in two phases so that vector envs can evaluate many copies at once:
:meth:`~EVCSPricingParallelEnv.begin_step` validates the actions and draws the
evaluation seed (returning a :class:`PendingStep`), the evaluation runs anywhere, and
:meth:`~EVCSPricingParallelEnv.end_step` turns the :class:`~evcs_gym.EvalResult` into the
usual five dicts. ``step(actions)`` is exactly ``end_step(p, evaluate(p))`` with
``p = begin_step(actions)``.

Example:
    >>> import evcs_gym
    >>> env = evcs_gym.parallel_env(scenario="tiny")
    >>> obs, infos = env.reset(seed=0)
    >>> env.agents, obs["A"].shape
    (['A', 'B'], (4,))
    >>> prices = {"A": [1.0, 1.2, 1.4, 1.0], "B": [1.5] * 4}
    >>> obs, rewards, terminations, truncations, infos = env.step(prices)
    >>> terminations, env.agents
    ({'A': True, 'B': True}, [])
    >>> infos["A"]["flows"].shape, rewards["A"] == infos["A"]["reward_raw"] / 2000.0
    ((4,), True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import ParallelEnv

from evcs_gym._version import __version__
from evcs_gym.network import NetworkData
from evcs_gym.scenarios.loader import load_scenario
from evcs_gym.seeds import check_seed
from evcs_gym.ue.evaluator import EvalResult, EVCSRewardEvaluator
from evcs_gym.utils import RuntimeEzPickle

__all__ = [
    "EVCSPricingParallelEnv",
    "EvaluatorLike",
    "PendingStep",
    "parallel_env",
    "resolve_reward_scale",
    "resolve_scenario",
]

_SEED_HIGH = 2**31 - 1


@runtime_checkable
class EvaluatorLike(Protocol):
    """Anything that evaluates a joint price profile: an evaluator or a pool."""

    def evaluate(self, prices: Mapping[str, Any], seed: int | None = None) -> EvalResult: ...


@dataclass(frozen=True)
class PendingStep:
    """A validated joint action waiting for its evaluation (see ``begin_step``).

    Attributes:
        prices: ``{agent: (n_periods,) float64}`` prices to evaluate (clipped if allowed).
        seed: evaluator seed drawn from the env's generator for this step.
        clipped: ``{agent: bool}`` whether the agent's action was clipped into bounds.
    """

    prices: dict[str, np.ndarray]
    seed: int
    clipped: dict[str, bool]


def resolve_scenario(
    scenario: str | Path | NetworkData, overrides: Mapping[str, Any] | None = None
) -> NetworkData:
    """A :class:`NetworkData` from a bundled name, a folder path or a loaded scenario."""
    if isinstance(scenario, NetworkData):
        if overrides:
            raise ValueError(
                "`scenario_overrides` need a scenario name or folder, got a loaded NetworkData; "
                f"pass evcs_gym.load_scenario(..., **{dict(overrides)!r}) instead"
            )
        return scenario
    if not isinstance(scenario, (str, Path)):
        raise TypeError(
            f"`scenario` must be a scenario name, a folder path or a NetworkData, got {scenario!r}"
        )
    return load_scenario(scenario, **dict(overrides or {}))


def resolve_reward_scale(reward_scale: float | str | None, network: NetworkData) -> float:
    """The reward divisor: ``"scenario"`` -> ``settings.reward_scale``, ``None`` -> 1."""
    if reward_scale is None:
        return 1.0
    if isinstance(reward_scale, str):
        if reward_scale != "scenario":
            raise ValueError(
                "`reward_scale` must be 'scenario', None or a positive number, "
                f"got {reward_scale!r}"
            )
        return float(network.settings.reward_scale)
    if isinstance(reward_scale, bool) or not isinstance(reward_scale, (int, float, np.number)):
        raise ValueError(
            f"`reward_scale` must be 'scenario', None or a positive number, got {reward_scale!r}"
        )
    if not (math.isfinite(reward_scale) and reward_scale > 0):
        raise ValueError(f"`reward_scale` must be a positive finite number, got {reward_scale!r}")
    return float(reward_scale)


class EVCSPricingParallelEnv(ParallelEnv, RuntimeEzPickle):
    """## Description

    The electric-vehicle charging-station pricing game on a road network, played once.
    Each agent is a charging station (``possible_agents`` = the scenario's station node
    names, e.g. ``["10", "13", "18", "3"]`` on Sioux Falls). All stations post a price
    for each of ``n_periods`` time periods at once; drivers then choose routes and
    stations in a dynamic user equilibrium simulated with UXsim, and each station earns
    ``Σ_p price[p] × energy × vehicles that start charging in period p``. One ``step``
    is one such evaluation and ends the episode: the stage game of a general-sum,
    continuous-action game. Wrap with :class:`evcs_gym.wrappers.HistoryWrapper` for the
    repeated game.

    ## Action Space

    ``Box(low, high, (n_periods,), float32)`` per agent: the station's price per kWh in
    each period, in its real bounds ``network.price_bounds[agent]`` (currency per kWh).
    With ``clip_actions=True`` (default) finite prices outside the bounds are clipped
    into them and ``infos[agent]["action_clipped"]`` says so; with ``clip_actions=False``
    they reach the evaluator, which raises :class:`~evcs_gym.PriceError`. NaN/inf, a
    wrong shape, a missing or an unknown agent always raise ``ValueError`` naming the
    agent and the value. For actions in ``[-1, 1]`` wrap with
    :class:`evcs_gym.wrappers.RescaleActions`.

    ## Observation Space

    The stage game has no state, so each agent observes a constant context,
    ``Box(0, 1, (n_agents + 2,), float32)``:

    | Index             | Observation                                   | Min | Max |
    |-------------------|-----------------------------------------------|-----|-----|
    | 0 … n_agents − 1  | one-hot index of the agent in ``possible_agents`` | 0 | 1 |
    | n_agents          | own lower price bound / max upper bound of all stations | 0 | 1 |
    | n_agents + 1      | own upper price bound / max upper bound of all stations | 0 | 1 |

    ``state()`` (``state_space``: ``Box(0, 1, (2 n_agents,))``) is every station's
    lower bounds then upper bounds, normalised the same way.

    ## Rewards

    ``rewards[agent] = EvalResult.rewards[agent] / scale``: the station's revenue
    (minus ``energy_cost_per_kwh`` × energy, 0 by default) divided by a fixed scale.
    ``reward_scale="scenario"`` (default) uses the scenario's ``settings.reward_scale``
    (2,000 on ``tiny``, 80,000 on ``siouxfalls``), which keeps rewards O(1) with a
    constant that never changes during training; ``reward_scale=None`` gives raw
    currency, a number divides by that number. ``infos[agent]`` always carries the raw
    ``revenue`` and ``reward_raw``.

    ## Starting State

    Nothing to start: ``reset`` returns the constant context. ``reset(seed=s)`` seeds the
    env's generator (``gymnasium.utils.seeding.np_random(s)``); each step draws its
    evaluator seed from it, so every step after ``reset(seed=s)`` is a deterministic
    function of ``s`` and the actions. ``reset()`` without a seed continues the stream.
    With ``eval_seed=n`` every evaluation uses seed ``n`` instead (a deterministic payoff
    function of the prices alone).

    ## Episode End

    Every episode is one step: all agents are terminated (``terminations`` all True,
    ``truncations`` all False) and ``agents`` becomes empty.

    ``infos[agent]`` after a step: ``prices`` (the evaluated, possibly clipped prices),
    ``flows`` (vehicles that started charging in each period), ``revenue`` and its
    standard error ``revenue_se`` (the UE's stationary mean where its stop rule was out
    of reach, see :mod:`evcs_gym.ue.stopping`), ``reward_raw``, ``action_clipped``,
    ``eval_seed``, ``ue_iterations``, ``converged``, ``ue_stats``
    (``EvalResult.ue_stats``: stop reason, payoff window, relative gap, completed ratio,
    per-iteration histories…, plus ``converged``) and ``game`` (``version``: the
    evcs-gym version, ``settings_hash``: :attr:`NetworkData.settings_hash`, which
    together name the game the step was played in).

    ## Arguments

    Args:
        scenario: bundled scenario name (``"siouxfalls"``, ``"tiny"``, …), a scenario
            folder, or a loaded :class:`~evcs_gym.NetworkData`.
        evaluator: an object with ``evaluate(prices, seed) -> EvalResult`` to use instead
            of a private :class:`~evcs_gym.EVCSRewardEvaluator` (built on first use), e.g.
            a :class:`~evcs_gym.ParallelEvaluatorPool`. The env then pickles only if the
            evaluator does.
        reward_scale: ``"scenario"``, ``None`` (raw currency) or a positive divisor.
        clip_actions: clip finite out-of-bound prices (True) or let the evaluator raise.
        eval_seed: fixed evaluator seed for every step (``None``: drawn per step).
        render_mode: ``None``, ``"rgb_array"`` (``render()`` returns an ``(H, W, 3)``
            uint8 image of the network with prices and flows) or ``"human"`` (shows it in
            a matplotlib window when the backend is interactive, else writes
            ``render_path``).
        render_path: PNG file written by ``"human"`` rendering.
        scenario_overrides: settings overrides passed to :func:`evcs_gym.load_scenario`.

    ## Version History

    * v0: initial version (evcs-gym 0.1.0). The game behind the id changed with the
      package, not the id (``infos[agent]["game"]`` names the version and settings):
      0.2.0 pays the UE's stationary mean where its stop rule is out of reach, with a
      ``revenue_se`` in the infos (see the changelog).
    """

    metadata: dict[str, Any] = {
        "name": "evcs_pricing_v0",
        "is_parallelizable": True,
        "render_modes": ["human", "rgb_array"],
        "render_fps": 2,
    }

    def __init__(
        self,
        scenario: str | Path | NetworkData = "siouxfalls",
        *,
        evaluator: EvaluatorLike | None = None,
        reward_scale: float | Literal["scenario"] | None = "scenario",
        clip_actions: bool = True,
        eval_seed: int | None = None,
        render_mode: str | None = None,
        render_path: str | Path | None = None,
        scenario_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        EzPickle.__init__(
            self,
            scenario=scenario,
            evaluator=evaluator,
            reward_scale=reward_scale,
            clip_actions=clip_actions,
            eval_seed=eval_seed,
            render_mode=render_mode,
            render_path=render_path,
            scenario_overrides=scenario_overrides,
        )
        self.network: NetworkData = resolve_scenario(scenario, scenario_overrides)
        nd = self.network
        if evaluator is not None and not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(
                f"`evaluator` must have an evaluate(prices, seed) method, got {evaluator!r}"
            )
        own = getattr(evaluator, "network", None)  # an evaluator's or a pool's scenario
        if isinstance(own, NetworkData) and own is not nd and own != nd:
            raise ValueError(
                f"`evaluator` evaluates another scenario ({own.name!r}, {own.source!r}) than "
                f"the env's ({nd.name!r}, {nd.source!r}), or the same with other settings"
            )
        names = getattr(evaluator, "agent_names", None)
        if evaluator is not None and names is not None and tuple(names) != nd.agent_names:
            raise ValueError(
                f"`evaluator` is for stations {tuple(names)}, the scenario has {nd.agent_names}"
            )
        if eval_seed is not None:
            eval_seed = check_seed(eval_seed, "eval_seed")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"`render_mode` must be one of {self.metadata['render_modes']} or None, "
                f"got {render_mode!r}"
            )
        self.reward_scale = resolve_reward_scale(reward_scale, nd)
        self.clip_actions = bool(clip_actions)
        self.eval_seed = eval_seed
        self.render_mode = render_mode
        self.render_path = None if render_path is None else Path(render_path)
        self._evaluator = evaluator

        self.possible_agents: list[str] = list(nd.agent_names)
        self.agents: list[str] = []
        self.n_periods = nd.n_periods
        bounds = nd.price_bounds
        ref = max(hi for _, hi in bounds.values()) or 1.0
        n = nd.n_agents
        self.action_spaces = {
            a: spaces.Box(
                low=np.full(nd.n_periods, lo, dtype=np.float32),
                high=np.full(nd.n_periods, hi, dtype=np.float32),
                dtype=np.float32,
            )
            for a, (lo, hi) in bounds.items()
        }
        self.observation_spaces = {
            a: spaces.Box(0.0, 1.0, shape=(n + 2,), dtype=np.float32) for a in self.possible_agents
        }
        self._context: dict[str, np.ndarray] = {}
        for i, a in enumerate(self.possible_agents):
            obs = np.zeros(n + 2, dtype=np.float32)
            obs[i] = 1.0
            obs[n] = bounds[a][0] / ref
            obs[n + 1] = bounds[a][1] / ref
            self._context[a] = obs
        lows = [bounds[a][0] / ref for a in self.possible_agents]
        highs = [bounds[a][1] / ref for a in self.possible_agents]
        self._state = np.asarray(lows + highs, dtype=np.float32)
        self.state_space = spaces.Box(0.0, 1.0, shape=(2 * n,), dtype=np.float32)
        self._np_random: np.random.Generator | None = None
        self._last: tuple[PendingStep, EvalResult] | None = None
        self._human_fig: Any = None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Box:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ seeding
    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator (seeded by ``reset(seed=...)``; random if never seeded)."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value

    @property
    def evaluator(self) -> EvaluatorLike:
        """The evaluator used by :meth:`step` (a private one is built on first use)."""
        if self._evaluator is None:
            self._evaluator = EVCSRewardEvaluator(self.network)
        return self._evaluator

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode; ``seed`` reseeds the generator, ``options`` are ignored."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        if self.render_mode == "human" and self._last is None:
            self.render()
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Evaluate the joint prices and end the episode (see the class docstring)."""
        pending = self.begin_step(actions)
        result = self.evaluator.evaluate(pending.prices, seed=pending.seed)
        return self.end_step(pending, result)

    def begin_step(self, actions: Mapping[str, Any]) -> PendingStep:
        """Validate ``actions`` and draw this step's evaluator seed (nothing is evaluated).

        Raises:
            ValueError: missing/unknown agent, wrong shape, non-numeric or non-finite price.
            RuntimeError: no episode running (call ``reset()``).
        """
        if not self.agents:
            raise RuntimeError(
                "step() called without a running episode; call reset() first "
                "(every episode of the stage game is one step)"
            )
        prices, clipped = self.check_actions(actions)
        seed = self.eval_seed
        if seed is None:
            seed = int(self.np_random.integers(0, _SEED_HIGH))
        return PendingStep(prices=prices, seed=seed, clipped=clipped)

    def end_step(
        self, pending: PendingStep, result: EvalResult
    ) -> tuple[dict, dict, dict, dict, dict]:
        """Turn the evaluation of ``pending`` into ``(obs, rewards, terms, truncs, infos)``."""
        if not self.agents:
            raise RuntimeError("end_step() called without a running episode")
        agents = list(self.agents)
        rewards = {a: float(result.rewards[a]) / self.reward_scale for a in agents}
        infos = {a: self._agent_info(a, pending, result) for a in agents}
        obs = self._observations()
        terminations = dict.fromkeys(agents, True)
        truncations = dict.fromkeys(agents, False)
        self.agents = []
        self._last = (pending, result)
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """Global context: all stations' normalised lower then upper price bounds."""
        return self._state.copy()

    def check_actions(self, actions: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict]:
        """Validated ``{agent: float64 prices}`` and ``{agent: clipped?}``.

        Raises:
            ValueError: not a dict, missing/unknown agent, wrong shape, NaN/inf.
        """
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"`actions` must be a dict {{agent: prices per period}}, got {actions!r}"
            )
        unknown = [a for a in actions if a not in self.possible_agents]
        if unknown:
            raise ValueError(
                f"`actions` name unknown agent(s) {unknown!r}; agents are {self.possible_agents}"
            )
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(
                f"`actions` are missing agent(s) {missing!r}; every live agent in "
                f"{self.agents} must act"
            )
        prices: dict[str, np.ndarray] = {}
        clipped: dict[str, bool] = {}
        for a in self.agents:
            raw = actions[a]
            try:
                row = np.array(raw, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"action of agent {a!r} is not numeric: {raw!r}") from None
            if row.shape != (self.n_periods,):
                raise ValueError(
                    f"action of agent {a!r} must have shape ({self.n_periods},) "
                    f"(one price per period), got shape {row.shape}: {raw!r}"
                )
            bad = np.flatnonzero(~np.isfinite(row))
            if len(bad):
                p = int(bad[0])
                raise ValueError(
                    f"action of agent {a!r} has a non-finite price {row[p]} in period {p}: {raw!r}"
                )
            low, high = self.network.price_bounds[a]
            clipped[a] = False
            if self.clip_actions:
                inside = np.clip(row, low, high)
                clipped[a] = bool(np.any(inside != row))
                row = inside
            prices[a] = row
        return prices, clipped

    # ------------------------------------------------------------------ render
    def render(self) -> np.ndarray | None:
        """Draw the network with the last evaluated prices and flows (see ``render_mode``).

        The last evaluation is kept across ``reset`` (only for drawing), so a repeated game
        draws its latest round; before the first step the bounds are drawn.
        """
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='rgb_array' or "
                "'human' when creating the env"
            )
            return None
        from evcs_gym.envs.render import render_frame, show_frame

        prices = flows = None
        if self._last is not None:
            pending, result = self._last
            prices, flows = pending.prices, result.flows
        frame = render_frame(self.network, prices, flows)
        if self.render_mode == "rgb_array":
            return frame
        self._human_fig = show_frame(
            frame, self._human_fig, self.render_path, self.metadata["render_fps"]
        )
        return None

    def close(self) -> None:
        """Close the render window (an injected evaluator is left open)."""
        if self._human_fig is not None:
            from evcs_gym.envs.render import close_figure

            close_figure(self._human_fig)
            self._human_fig = None

    _runtime_fields = ("_np_random", "agents", "_last")
    """Running state carried through pickling (see :class:`~evcs_gym.utils.RuntimeEzPickle`)."""

    # ------------------------------------------------------------------ internals
    def _observations(self) -> dict[str, np.ndarray]:
        return {a: self._context[a].copy() for a in self.possible_agents}

    def _agent_info(self, agent: str, pending: PendingStep, result: EvalResult) -> dict[str, Any]:
        stats = dict(result.ue_stats)
        for key, value in stats.items():
            if isinstance(value, list):
                stats[key] = list(value)
        stats.setdefault("converged", bool(result.converged))  # also at the top level
        return {
            "prices": pending.prices[agent].copy(),
            "flows": np.asarray(result.flows[agent], dtype=np.float64).copy(),
            "revenue": float(result.revenues[agent]),
            "revenue_se": float(result.ue_stats["revenue_se"][agent]),
            "reward_raw": float(result.rewards[agent]),
            "action_clipped": pending.clipped[agent],
            "eval_seed": int(result.seed),
            "ue_iterations": int(result.ue_iterations),
            "converged": bool(result.converged),
            "ue_stats": stats,
            "game": {"version": __version__, "settings_hash": self.network.settings_hash},
        }

    def __str__(self) -> str:
        return f"EVCSPricingParallelEnv<{self.network.name}>"


def parallel_env(**kwargs: Any) -> EVCSPricingParallelEnv:
    """The one-step pricing game as a PettingZoo ``ParallelEnv``.

    Takes the keyword arguments of :class:`EVCSPricingParallelEnv`
    (``scenario="siouxfalls"`` by default).

    Example:
        >>> import evcs_gym
        >>> env = evcs_gym.parallel_env(scenario="tiny", reward_scale=None)
        >>> env.possible_agents, env.action_space("A")
        (['A', 'B'], Box(0.5, 2.0, (4,), float32))
    """
    return EVCSPricingParallelEnv(**kwargs)
