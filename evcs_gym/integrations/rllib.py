"""RLlib (new API stack) adapter: an env creator and multi-agent configs sized for the game.

RLlib is imported inside the functions, so ``import evcs_gym`` never needs it. Tested with
``ray[rllib]==2.60.0`` (which pins ``gymnasium==1.2.2``); see ``noxfile.py``.

What a user would otherwise write by hand:

* :func:`rllib_env_creator` — ``register_env``-able: the pricing game as RLlib's
  ``ParallelPettingZooEnv``, with two of its pitfalls fixed: agents keep the scenario's
  order (``ParallelPettingZooEnv`` takes them from a ``set``, so the order changes from
  one process to the next) and ``render()`` takes no mode argument (RLlib passes one,
  PettingZoo's signature has none).
* :func:`ppo_config` / :func:`sac_config` — multi-agent ``PPOConfig`` / ``SACConfig``,
  one policy per station (``policies`` + ``policy_mapping_fn``; ``shared_policy=True``
  for one shared module), with RLlib's defaults shrunk for an env whose every step is a
  traffic simulation (0.05–0.5 s on ``tiny``, seconds on Sioux Falls): PPO's train
  batch of 4,000 steps and SAC's 1,500-step warm-up would each be hours of simulation.
  ``sample_timeout_s=None`` (wait as long as the simulator takes: RLlib's 60 s default
  silently drops slow samples), ``n_step=1`` (every episode of the stage game is one
  step), no env pre-check (it costs a simulation per env runner; the tests run it).
* :func:`train_until` — call ``algo.train()`` until a number of env steps (= simulator
  evaluations) have been sampled.
* :func:`learned_prices` — each station's deterministic prices: the mean action of its
  module on the stage game's constant observation, mapped to real prices as RLlib's
  env runners map actions (unsquashed from ``[-1, 1]`` into the bounds).

Example (needs ``pip install "ray[rllib]==2.60.0"``)::

    from evcs_gym.integrations.rllib import learned_prices, ppo_config, train_until

    algo = ppo_config(scenario="tiny").build_algo()  # registers "evcs_pricing"
    train_until(algo, evaluations=600)  # 600 traffic simulations
    print(learned_prices(algo))  # {'A': array([...4 prices...]), 'B': ...}
    algo.stop()

Agents are the scenario's station names (``"A"``, ``"B"`` on ``tiny``); each step is one
evaluation of the one-shot game, so RLlib's env steps count simulator evaluations.
``env_config`` holds :func:`evcs_gym.parallel_env` keyword arguments, plus ``rounds``
(and other :class:`~evcs_gym.wrappers.HistoryWrapper` arguments) for the repeated game.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from evcs_gym.errors import DependencyNotInstalled

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch
    from gymnasium import spaces
    from ray.rllib.algorithms import Algorithm
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.sac import SACConfig
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

__all__ = [
    "ENV_NAME",
    "HISTORY_KEYS",
    "deterministic_action",
    "learned_prices",
    "make_env",
    "ppo_config",
    "register",
    "rllib_env_creator",
    "sac_config",
    "same_module",
    "shared_module",
    "train_until",
]

ENV_NAME = "evcs_pricing"
"""Name under which :func:`register` registers :func:`rllib_env_creator` with Ray Tune."""

HISTORY_KEYS = (
    "rounds",
    "k",
    "include_flows",
    "ema",
    "agent_id",
    "include_round",
    "initial_prices",
)
"""``env_config`` keys passed to :class:`~evcs_gym.wrappers.HistoryWrapper` (if ``rounds``)."""

SHARED_MODULE = "shared"


def _require_rllib() -> None:
    try:
        import ray.rllib  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled(
            'RLlib is not installed; run `pip install "ray[rllib]==2.60.0"`'
        ) from e


@functools.cache
def _env_class() -> type:
    """``ParallelPettingZooEnv`` with the scenario's agent order and a plain ``render()``."""
    _require_rllib()
    import gymnasium as gym
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    class EVCSParallelPettingZooEnv(ParallelPettingZooEnv):
        """RLlib's PettingZoo adapter, agents in ``possible_agents`` order.

        ``agents`` stays the full list (RLlib's own checker and episode code read it
        after the last step, when PettingZoo's list is already empty).
        """

        def __init__(self, env: Any) -> None:
            super().__init__(env)
            order = list(env.possible_agents)
            self.agents = list(order)
            self.possible_agents = list(order)
            self._agent_ids = set(order)
            self.observation_space = gym.spaces.Dict({a: env.observation_space(a) for a in order})
            self.action_space = gym.spaces.Dict({a: env.action_space(a) for a in order})
            self.metadata = dict(getattr(env, "metadata", {}))
            self.render_mode = getattr(env.unwrapped, "render_mode", None)

        def render(self) -> Any:
            return self.par_env.render()

    return EVCSParallelPettingZooEnv


def make_env(env_config: Mapping[str, Any] | None = None) -> Any:
    """The PettingZoo pricing game an RLlib env wraps (no RLlib needed).

    ``env_config``: :func:`evcs_gym.parallel_env` keyword arguments; if it has ``rounds``,
    the game is wrapped in :class:`~evcs_gym.wrappers.HistoryWrapper` with the
    :data:`HISTORY_KEYS` found in it.
    """
    import evcs_gym
    from evcs_gym.wrappers import HistoryWrapper

    config = dict(env_config or {})
    history = {k: config.pop(k) for k in HISTORY_KEYS if k in config}
    env = evcs_gym.parallel_env(**config)
    if history:
        if "rounds" not in history:
            raise ValueError(
                f"`env_config` has HistoryWrapper arguments {sorted(history)} but no `rounds`"
            )
        env = HistoryWrapper(env, **history)
    return env


def rllib_env_creator(env_config: Mapping[str, Any] | None = None) -> MultiAgentEnv:
    """An RLlib ``MultiAgentEnv`` (a fixed ``ParallelPettingZooEnv``) of the pricing game.

    Register it with ``ray.tune.registry.register_env("evcs_pricing", rllib_env_creator)``
    (or :func:`register`). ``env_config`` (RLlib's ``EnvContext`` is a dict) is passed to
    :func:`make_env`.

    Example::

        env = rllib_env_creator({"scenario": "tiny"})
        env.possible_agents  # ['A', 'B'], always in this order
        obs, infos = env.reset(seed=0)
        obs, rewards, terms, truncs, infos = env.step(env.action_space.sample())
        terms["__all__"]  # True: the stage game is one step
    """
    return _env_class()(make_env(env_config))


def register(name: str = ENV_NAME) -> str:
    """Register :func:`rllib_env_creator` with Ray Tune under ``name``; returns ``name``."""
    _require_rllib()
    from ray.tune.registry import register_env

    register_env(name, rllib_env_creator)
    return name


def same_module(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """``policy_mapping_fn``: each station trains its own module, named after it."""
    return agent_id


def shared_module(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """``policy_mapping_fn``: all stations share one module, ``"shared"``."""
    return SHARED_MODULE


def _station_names(env_config: Mapping[str, Any]) -> list[str]:
    from evcs_gym.envs.parallel_env import resolve_scenario

    nd = resolve_scenario(
        env_config.get("scenario", "siouxfalls"), env_config.get("scenario_overrides")
    )
    return list(nd.agent_names)


def _common(
    config: Any,
    *,
    scenario: Any,
    env_config: Mapping[str, Any] | None,
    agents: Sequence[str] | None,
    shared_policy: bool,
    hidden: Sequence[int],
    num_env_runners: int,
    seed: int | None,
    env_name: str,
) -> Any:
    """Environment, multi-agent, module, env-runner and reporting settings of both configs."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    if num_env_runners < 0:
        raise ValueError(f"`num_env_runners` must be >= 0, actually: {num_env_runners}")
    register(env_name)
    env_config = {"scenario": scenario, **dict(env_config or {})}
    agents = list(agents) if agents is not None else _station_names(env_config)
    modules = [SHARED_MODULE] if shared_policy else agents
    mapping: Callable[..., str] = shared_module if shared_policy else same_module
    return (
        config.environment(env_name, env_config=env_config, disable_env_checking=True)
        .multi_agent(policies=set(modules), policy_mapping_fn=mapping)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={m: RLModuleSpec() for m in modules}),
            model_config=DefaultModelConfig(fcnet_hiddens=[int(h) for h in hidden]),
        )
        .env_runners(
            # 0: sample in the driver; with few cores a remote runner only adds a process
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=1,
            # None: wait for the simulator (the 60 s default discards slow samples)
            sample_timeout_s=None,
        )
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=seed)
    )


def ppo_config(
    scenario: Any = "tiny",
    *,
    env_config: Mapping[str, Any] | None = None,
    agents: Sequence[str] | None = None,
    shared_policy: bool = False,
    train_batch_size: int = 64,
    minibatch_size: int = 32,
    num_epochs: int = 10,
    lr: float = 3e-4,
    hidden: Sequence[int] = (64, 64),
    num_env_runners: int = 0,
    seed: int | None = 0,
    env_name: str = ENV_NAME,
) -> PPOConfig:
    """Multi-agent PPO on the pricing game, one module per station.

    Args:
        scenario: the ``scenario`` of :func:`evcs_gym.parallel_env`.
        env_config: more :func:`make_env` arguments (e.g. ``{"eval_seed": 0}``).
        agents: station names (default: read from the scenario).
        shared_policy: one module ``"shared"`` for every station instead of one each.
        train_batch_size: env steps per update (RLlib: 4,000 — hours of simulation).
        minibatch_size: SGD minibatch (RLlib: 128).
        num_epochs: passes over each batch (RLlib: 30).
        lr: Adam learning rate (RLlib: 5e-5, too slow for a few dozen updates).
        hidden: hidden layer sizes of the policy and value nets (RLlib: 256, 256).
        num_env_runners: remote samplers (0: sample in the driver process).
        seed: RLlib's seed (networks, env runners' env seeds).
        env_name: the name the env creator is registered under.

    Returns:
        a ``PPOConfig``; ``.build_algo()`` builds the algorithm (and starts Ray if needed).
    """
    _require_rllib()
    from ray.rllib.algorithms.ppo import PPOConfig

    if train_batch_size < 1 or minibatch_size < 1 or minibatch_size > train_batch_size:
        raise ValueError(
            "`minibatch_size` must be in [1, `train_batch_size`], actually: "
            f"{minibatch_size}, {train_batch_size}"
        )
    config = _common(
        PPOConfig(),
        scenario=scenario,
        env_config=env_config,
        agents=agents,
        shared_policy=shared_policy,
        hidden=hidden,
        num_env_runners=num_env_runners,
        seed=seed,
        env_name=env_name,
    )
    return config.training(
        train_batch_size_per_learner=int(train_batch_size),
        minibatch_size=int(minibatch_size),
        num_epochs=int(num_epochs),
        lr=float(lr),
    )


def sac_config(
    scenario: Any = "tiny",
    *,
    env_config: Mapping[str, Any] | None = None,
    agents: Sequence[str] | None = None,
    shared_policy: bool = False,
    train_batch_size: int = 32,
    learning_starts: int = 32,
    buffer_size: int = 10_000,
    steps_per_iteration: int = 32,
    initial_alpha: float = 0.1,
    actor_lr: float = 3e-4,
    critic_lr: float = 1e-3,
    hidden: Sequence[int] = (64, 64),
    num_env_runners: int = 0,
    seed: int | None = 0,
    env_name: str = ENV_NAME,
) -> SACConfig:
    """Multi-agent SAC on the pricing game, one module per station.

    Args:
        scenario, env_config, agents, shared_policy, hidden, num_env_runners, seed,
            env_name: as in :func:`ppo_config`.
        train_batch_size: replayed transitions per update (RLlib: 256).
        learning_starts: env steps before the first update (RLlib: 1,500).
        buffer_size: replay capacity in env steps (RLlib: 1,000,000).
        steps_per_iteration: env steps sampled per ``algo.train()`` call (RLlib: 100).
        initial_alpha: starting entropy weight (RLlib: 1.0, which outweighs rewards of a
            few units — revenue / ``reward_scale`` — for most of a short run).
        actor_lr: actor learning rate (RLlib: 3e-5).
        critic_lr: critic learning rate (RLlib: 3e-4).

    The replay buffer is RLlib's ``MultiAgentEpisodeReplayBuffer`` with ``n_step=1``:
    every episode of the stage game is a single step.
    """
    _require_rllib()
    from ray.rllib.algorithms.sac import SACConfig

    if learning_starts < 1 or train_batch_size < 1 or buffer_size < train_batch_size:
        raise ValueError(
            "`learning_starts` and `train_batch_size` must be positive and `buffer_size` "
            f"at least `train_batch_size`, actually: {learning_starts}, {train_batch_size}, "
            f"{buffer_size}"
        )
    config = _common(
        SACConfig(),
        scenario=scenario,
        env_config=env_config,
        agents=agents,
        shared_policy=shared_policy,
        hidden=hidden,
        num_env_runners=num_env_runners,
        seed=seed,
        env_name=env_name,
    )
    return config.training(
        train_batch_size_per_learner=int(train_batch_size),
        num_steps_sampled_before_learning_starts=int(learning_starts),
        replay_buffer_config={
            "type": "MultiAgentEpisodeReplayBuffer",
            "capacity": int(buffer_size),
        },
        n_step=1,
        initial_alpha=float(initial_alpha),
        actor_lr=float(actor_lr),
        critic_lr=float(critic_lr),
    ).reporting(min_sample_timesteps_per_iteration=int(steps_per_iteration))


def train_until(algo: Algorithm, evaluations: int) -> dict[str, Any]:
    """Call ``algo.train()`` until ``evaluations`` env steps have been sampled in all.

    Each env step of the pricing game is one simulator evaluation. An iteration samples a
    whole batch, so the total may pass ``evaluations`` by up to one batch. Returns the
    last result dict (``result["num_env_steps_sampled_lifetime"]`` is the total).
    """
    if evaluations < 1:
        raise ValueError(f"`evaluations` must be positive, actually: {evaluations}")
    result: dict[str, Any] = {}
    while _sampled(result) < evaluations:
        result = algo.train()
    return result


def _sampled(result: Mapping[str, Any]) -> int:
    value = result.get("num_env_steps_sampled_lifetime")
    if value is None:
        value = result.get("env_runners", {}).get("num_env_steps_sampled_lifetime", 0)
    return int(value)


def deterministic_action(algo: Algorithm, agent: str, observation: Any, space: Any) -> np.ndarray:
    """``agent``'s action without exploration, as RLlib's env runners would send it.

    The agent's module (``config.policy_mapping_fn(agent, None)``) maps ``observation``
    to its action distribution's deterministic value (``to_deterministic()``: the
    Gaussian mean for PPO, ``tanh`` of the mean for SAC), then unsquashed into ``space``
    (``normalize_actions``, RLlib's default) or clipped into it (``clip_actions``).
    Works for any env with Box actions, not only the pricing game.
    """
    _require_rllib()
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action

    config = algo.config
    assert config is not None  # an Algorithm's config is set when it is built
    # RLlib types it by its old 3-argument default; it is called (agent, episode)
    policy_mapping_fn: Callable[..., str] = config.policy_mapping_fn
    # the module the mapping names (RLlib's env runners rely on it existing too)
    module = cast("RLModule", algo.get_module(policy_mapping_fn(agent, None)))
    obs = torch.as_tensor(np.asarray(observation, dtype=np.float32)[None])
    with torch.no_grad():
        out = module.forward_inference({Columns.OBS: obs})
        dist_cls = module.get_inference_action_dist_cls()
        dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS]).to_deterministic()
        action = cast("torch.Tensor", dist.sample()).cpu().numpy()[0]  # torch modules
    if config.normalize_actions:
        return unsquash_action(action, space)
    return clip_action(action, space)


def learned_prices(
    algo: Algorithm, observations: Mapping[str, Any] | None = None
) -> dict[str, np.ndarray]:
    """Each station's deterministic prices under the trained algorithm (real currency).

    The module of each station (``config.policy_mapping_fn(station, None)``) maps its
    observation to the mean of its action distribution (``to_deterministic()``: the
    Gaussian mean for PPO, ``tanh`` of the mean for SAC), which is then unsquashed into
    the price bounds exactly as RLlib's env runners do (``normalize_actions``, the
    default) or clipped into them (``clip_actions``).

    Args:
        algo: a trained PPO / SAC / APPO ``Algorithm`` on :func:`rllib_env_creator`.
        observations: ``{station: observation}``; default the stage game's constant
            observation (from a fresh env built with ``algo.config.env_config``). The
            repeated game (``rounds`` in ``env_config``) needs them given.

    Returns:
        ``{station: (n_periods,) float64 prices}`` in ``possible_agents`` order.

    Only the default env-to-module connectors are assumed (the observation reaches the
    module unchanged); a custom observation filter would have to be applied by hand.
    """
    _require_rllib()
    config = algo.config
    assert config is not None  # an Algorithm's config is set when it is built
    env = rllib_env_creator(config.env_config)
    try:
        if observations is None:
            if "rounds" in config.env_config:
                raise ValueError(
                    "the repeated game has no constant observation: pass `observations`"
                )
            reset_observations, _ = env.reset(seed=0)
            observations = cast("dict[str, Any]", reset_observations)  # keyed by station
        prices: dict[str, np.ndarray] = {}
        # the env's agents are the station names, its action space a Dict keyed by them
        for agent in cast("list[str]", env.possible_agents):
            if agent not in observations:
                raise ValueError(f"`observations` has no entry for station {agent!r}")
            space = cast("spaces.Dict", env.action_space)[agent]
            action = deterministic_action(algo, agent, observations[agent], space)
            prices[agent] = np.asarray(action, dtype=np.float64)
    finally:
        env.close()
    return prices
