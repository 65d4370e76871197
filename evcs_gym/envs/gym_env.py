"""``EVCSPricing-v0``: the pricing game as a single-agent Gymnasium env.

:class:`EVCSPricingEnv` builds :func:`evcs_gym.parallel_env` (optionally wrapped in
:class:`~evcs_gym.wrappers.HistoryWrapper` for a repeated game of ``rounds`` rounds) and
presents it through :class:`~evcs_gym.wrappers.SingleAgentView`: joint control of all
stations by default, or one station's best response with ``agent=...``.

Example:
    >>> import gymnasium as gym
    >>> import evcs_gym
    >>> env = gym.make("EVCSPricing-v0", scenario="tiny")
    >>> env.action_space
    Box(0.5, 2.0, (8,), float32)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    >>> terminated, truncated
    (True, False)
    >>> br = gym.make("EVCSPricing-v0", scenario="tiny", agent="A",
    ...               opponent_prices={"B": [1.2] * 4}, rounds=3)
    >>> br.observation_space.shape
    (14,)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from gymnasium.utils import EzPickle

from evcs_gym.envs.parallel_env import EvaluatorLike, EVCSPricingParallelEnv
from evcs_gym.network import NetworkData
from evcs_gym.utils import RuntimeEzPickle
from evcs_gym.wrappers.history import HistoryWrapper
from evcs_gym.wrappers.single_agent import OpponentPolicy, SingleAgentView

__all__ = ["EVCSPricingEnv"]


class EVCSPricingEnv(SingleAgentView, RuntimeEzPickle):
    """## Description

    The EV charging-station pricing game (see
    :class:`~evcs_gym.envs.EVCSPricingParallelEnv`) seen by one learner. By default one
    controller sets every station's prices and earns their total revenue — the
    collusive benchmark. With ``agent="10"`` station ``"10"`` learns a best response to
    fixed opponent prices (``opponent_prices``) or to an ``opponent_policy``.

    ## Action Space

    Joint control: ``Box(low, high, (n_agents * n_periods,), float32)``, agent-major
    (station 0's ``n_periods`` prices, then station 1's, … in ``possible_agents``
    order), each entry in its station's price bounds. Best response:
    ``Box(low, high, (n_periods,), float32)``. Finite out-of-bound prices are clipped
    (``clip_actions``); NaN/inf or a wrong shape raise ``ValueError``. Use
    ``gymnasium.wrappers.RescaleAction(env, -1, 1)`` for normalised actions.

    ## Observation Space

    | rounds   | joint control                     | best response                       |
    |----------|-----------------------------------|-------------------------------------|
    | ``None`` | ``(2 n_agents,)``: all stations'  | ``(n_agents + 2,)``: one-hot id and |
    |          | normalised bounds (constant)      | own normalised bounds (constant)    |
    | ``R``    | ``state()`` of the repeated game: | the station's history observation   |
    |          | last ``k`` rounds of all prices   | (:mod:`evcs_gym.wrappers.history`)  |
    |          | and all flows                     |                                     |

    ## Rewards

    Joint: the sum of all stations' rewards; best response: the station's reward.
    Divided by ``settings.reward_scale`` with ``reward_scale="scenario"`` (default);
    ``reward_scale=None`` gives currency. ``info`` carries raw revenues.

    ## Starting State

    ``reset(seed=s)`` seeds the game; every evaluator seed after it follows from ``s``.
    With ``rounds``, the initial price history follows ``history["initial_prices"]``
    (uniform random in the bounds from the seed by default).

    ## Episode End

    ``rounds=None``: one step, ``terminated=True``. ``rounds=R``: ``R`` steps, then
    ``truncated=True`` (``terminated`` stays False: the repeated game has no terminal
    state).

    ## Arguments

    Args:
        scenario: bundled scenario name, folder or loaded :class:`~evcs_gym.NetworkData`.
        agent: ``None`` (joint control) or the learning station.
        opponent_prices: best response: fixed ``{opponent: prices}`` (default: the
            middle of each opponent's bounds).
        opponent_policy: best response: ``policy({opponent: obs}) -> {opponent: prices}``.
        rounds: ``None`` for the one-step game, else rounds of the repeated game.
        history: further :class:`~evcs_gym.wrappers.HistoryWrapper` arguments (``k``,
            ``include_flows``, ``ema``, ``agent_id``, ``include_round``,
            ``initial_prices``); needs ``rounds``.
        reward_scale, clip_actions, eval_seed, evaluator, render_mode, render_path,
        scenario_overrides: as for :class:`~evcs_gym.envs.EVCSPricingParallelEnv`.

    ## Version History

    * v0: initial version (evcs-gym 0.1.0). The game behind the id changed with the
      package, not the id (``infos[agent]["game"]`` names the version and settings):
      0.2.0 pays the UE's stationary mean where its stop rule is out of reach, with a
      ``revenue_se`` in the infos (see the changelog).
    """

    metadata = EVCSPricingParallelEnv.metadata

    def __init__(
        self,
        scenario: str | Path | NetworkData = "siouxfalls",
        *,
        agent: str | None = None,
        opponent_prices: Mapping[str, Any] | None = None,
        opponent_policy: OpponentPolicy | None = None,
        rounds: int | None = None,
        history: Mapping[str, Any] | None = None,
        reward_scale: float | Literal["scenario"] | None = "scenario",
        clip_actions: bool = True,
        eval_seed: int | None = None,
        evaluator: EvaluatorLike | None = None,
        render_mode: str | None = None,
        render_path: str | Path | None = None,
        scenario_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        EzPickle.__init__(
            self,
            scenario=scenario,
            agent=agent,
            opponent_prices=opponent_prices,
            opponent_policy=opponent_policy,
            rounds=rounds,
            history=history,
            reward_scale=reward_scale,
            clip_actions=clip_actions,
            eval_seed=eval_seed,
            evaluator=evaluator,
            render_mode=render_mode,
            render_path=render_path,
            scenario_overrides=scenario_overrides,
        )
        penv = EVCSPricingParallelEnv(
            scenario,
            evaluator=evaluator,
            reward_scale=reward_scale,
            clip_actions=clip_actions,
            eval_seed=eval_seed,
            render_mode=render_mode,
            render_path=render_path,
            scenario_overrides=scenario_overrides,
        )
        if rounds is not None:
            penv = HistoryWrapper(penv, rounds, **dict(history or {}))
        elif history:
            raise ValueError("`history` options need `rounds` (the repeated game's length)")
        super().__init__(
            penv, agent, opponent_prices=opponent_prices, opponent_policy=opponent_policy
        )
        self.network = penv.unwrapped.network

    _runtime_fields = ("parallel_env", "_last_obs", "_np_random")
    """Running state carried through pickling (see :class:`~evcs_gym.utils.RuntimeEzPickle`)."""
