"""TorchRL adapter: the pricing game as a TorchRL env, all stations in one group.

TorchRL's ``PettingZooWrapper`` needs four things the raw game does not give it:

* **One group.** It groups agents named ``<group>_<index>``; station names (``"A"``,
  ``"10"``) follow no such pattern, so by default every station becomes a group of its
  own, and a centralised critic (MADDPG, MAPPO) sees only its own station. Here every
  station is in the group ``"stations"``: tensors are ``(..., n_stations, ...)``.
* **Numeric infos known at reset.** Its info spec is built from the *reset* infos: keys
  that appear only at step time are dropped (base game) or crash the step (repeated
  game). :class:`~evcs_gym.wrappers.NumericInfo` gives every agent the same flat numeric
  keys at reset and at every step, under ``("stations", "info", key)``.
* **The global state** (``return_state=True``): ``"state"``, for centralised critics.
* **Actions in [-1, 1]** (:class:`~evcs_gym.wrappers.RescaleActions`, on by default).
  TorchRL's ``TanhDelta`` — the deterministic actor of its DDPG examples and of
  BenchMARL's MADDPG / IDDPG — shifts the network output by ``low + (high - low) / 2``
  *before* the tanh whenever the bounds are not [-1, 1]: with prices in [0.5, 2.0] an
  untrained actor (output ≈ 0) plays 1.89, near the cap, where the tanh is already
  flat. In [-1, 1] it starts at the middle of the bounds. :func:`learned_prices` maps
  actions back to prices.

:func:`make_torchrl_env` is an importable module-level function, so
``functools.partial(make_torchrl_env, ...)`` pickles into ``torchrl.envs.ParallelEnv``
workers; :func:`make_batched_env` builds such a batch with a distinct seed per copy.
:func:`learned_prices` reads the pure price profile a trained policy plays, ready for
:func:`evcs_gym.equilibrium.exploitability`.

torchrl is imported only when these functions run (``import evcs_gym`` never needs it);
tested with ``torchrl==0.14.1`` / ``tensordict==0.14.*`` (``nox -s torchrl``) and, through
BenchMARL, ``torchrl==0.11.*`` (``nox -s benchmarl``).

Example (with torchrl installed)::

    from evcs_gym.integrations.torchrl import make_torchrl_env
    from torchrl.envs.utils import check_env_specs

    env = make_torchrl_env("tiny", seed=0)  # the one-step game; rounds=10: repeated game
    check_env_specs(env)
    td = env.rollout(1)
    td["next", "stations", "reward"]  # (1, 2, 1): one step, stations A and B
    td["next", "stations", "info", "revenue"]  # (1, 2), currency
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evcs_gym.errors import DependencyNotInstalled

if TYPE_CHECKING:
    from evcs_gym.wrappers import NumericInfo

__all__ = [
    "GROUP",
    "copy_seeds",
    "env_factories",
    "learned_prices",
    "make_batched_env",
    "make_pettingzoo_env",
    "make_torchrl_env",
]

GROUP = "stations"
"""Name of the one agent group holding every station."""

_INSTALL = 'pip install "torchrl==0.14.1" "tensordict==0.14.*"'


def _torchrl() -> Any:
    """TorchRL's ``PettingZooWrapper`` class (TorchRL ships no type information)."""
    try:
        import torchrl  # noqa: F401
        from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    except ImportError as e:
        raise DependencyNotInstalled(
            f"evcs_gym.integrations.torchrl needs TorchRL, which is not installed: {_INSTALL}"
        ) from e
    return PettingZooWrapper


def make_pettingzoo_env(
    scenario: Any = "tiny",
    *,
    rounds: int | None = None,
    history: Mapping[str, Any] | None = None,
    rescale_actions: bool = True,
    **env_kwargs: Any,
) -> NumericInfo:
    """The PettingZoo stack the TorchRL env wraps (no TorchRL needed).

    ``parallel_env(scenario=scenario, **env_kwargs)``, then
    ``HistoryWrapper(..., rounds=rounds, **history)`` if ``rounds`` is given, then
    ``RescaleActions`` if ``rescale_actions``, then :class:`~evcs_gym.wrappers.NumericInfo`.

    Args:
        scenario: bundled scenario name, folder or :class:`~evcs_gym.NetworkData`.
        rounds: ``None`` for the one-step game (every step ends the episode), else the
            rounds of the repeated game.
        history: further :class:`~evcs_gym.wrappers.HistoryWrapper` arguments (``k``,
            ``ema``, ``include_round``...); only with ``rounds``.
        rescale_actions: actions in [-1, 1] (see the module docstring) instead of prices.
        **env_kwargs: arguments of :func:`evcs_gym.parallel_env` (``reward_scale``,
            ``eval_seed``, ``scenario_overrides``...).

    Example:
        >>> env = make_pettingzoo_env("tiny", rounds=3, history={"k": 2})
        >>> print(env)
        NumericInfo<RescaleActions<HistoryWrapper<EVCSPricingParallelEnv<tiny>, rounds=3, k=2>>>
        >>> env.action_space("A"), env.reset(seed=0)[1]["A"]["round"]
        (Box(-1.0, 1.0, (4,), float32), 0.0)
    """
    import evcs_gym
    from evcs_gym.wrappers import HistoryWrapper, NumericInfo, RescaleActions

    if history and rounds is None:
        raise ValueError(f"`history` needs `rounds` (the repeated game), got history={history!r}")
    env = evcs_gym.parallel_env(scenario=scenario, **env_kwargs)
    if rounds is not None:
        env = HistoryWrapper(env, rounds=rounds, **dict(history or {}))
    if rescale_actions:
        env = RescaleActions(env)
    return NumericInfo(env)


def make_torchrl_env(
    scenario: str | Path | Any = "tiny",
    *,
    rounds: int | None = None,
    seed: int | None = None,
    history: Mapping[str, Any] | None = None,
    rescale_actions: bool = True,
    group: str = GROUP,
    device: Any = "cpu",
    **env_kwargs: Any,
) -> Any:
    """The pricing game as a TorchRL ``PettingZooWrapper``: one group, state, numeric infos.

    Keys: ``(group, "observation" | "action" | "reward" | "done" | "info")`` with the
    station dimension second to last (``(n_stations, ...)``), plus ``"state"`` (the
    game's ``state()``). Actions are in [-1, 1], the stations' price bounds mapped
    affinely (``rescale_actions=False``: prices in the real bounds); the infos'
    ``prices`` are always real prices. ``seed`` seeds the game at construction
    (``reset(seed=seed)``); every later reset continues its stream, so the evaluations
    stay distinct. Module-level and picklable through ``functools.partial``: use it as
    a ``ParallelEnv`` factory.

    Args:
        scenario: bundled scenario name, folder or :class:`~evcs_gym.NetworkData`.
        rounds: ``None``: the one-step game (each step is one evaluation and ends the
            episode); an int: the repeated game of that many rounds.
        seed: seed of the game's generator (``None``: fresh entropy).
        history: further :class:`~evcs_gym.wrappers.HistoryWrapper` arguments.
        rescale_actions: actions in [-1, 1] (default) or in the real price bounds.
        group: the group name.
        device: TorchRL device.
        **env_kwargs: arguments of :func:`evcs_gym.parallel_env`.

    Raises:
        DependencyNotInstalled: torchrl is missing.
    """
    wrapper_cls = _torchrl()
    if not isinstance(group, str) or not group:
        raise ValueError(f"`group` must be a non-empty string, actually: {group!r}")
    env = make_pettingzoo_env(
        scenario, rounds=rounds, history=history, rescale_actions=rescale_actions, **env_kwargs
    )
    return wrapper_cls(
        env,
        return_state=True,
        group_map={group: list(env.possible_agents)},
        categorical_actions=True,
        seed=seed,
        device=device,
    )


def copy_seeds(seed: int | None, num_envs: int) -> list[int | None]:
    """Distinct seeds for ``num_envs`` copies of a game seeded ``seed``.

    Copy ``i`` gets ``SeedSequence([seed, i])``'s first word; ``None`` stays ``None``
    (fresh entropy per copy). Unlike ``seed + i``, runs with nearby seeds do not share
    copy seeds (barring 32-bit collisions).

    Example:
        >>> s = copy_seeds(0, 3)
        >>> len(set(s)), s == copy_seeds(0, 3), copy_seeds(None, 2)
        (3, True, [None, None])
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"`num_envs` must be a positive integer, actually: {num_envs!r}")
    if seed is None:
        return [None] * int(num_envs)
    return [
        int(np.random.SeedSequence([int(seed), i]).generate_state(1)[0]) for i in range(num_envs)
    ]


def env_factories(
    num_envs: int, scenario: Any = "tiny", *, seed: int | None = None, **kwargs: Any
) -> list[Callable[[], Any]]:
    """``num_envs`` picklable :func:`make_torchrl_env` factories seeded by :func:`copy_seeds`."""
    return [
        functools.partial(make_torchrl_env, scenario, seed=s, **kwargs)
        for s in copy_seeds(seed, num_envs)
    ]


def make_batched_env(
    num_envs: int,
    scenario: Any = "tiny",
    *,
    seed: int | None = None,
    parallel: bool = False,
    start: bool = False,
    **kwargs: Any,
) -> Any:
    """``num_envs`` copies of :func:`make_torchrl_env` with distinct seeds, batched.

    ``parallel=False``: a ``SerialEnv`` (copies stepped one after another in this
    process); ``True``: a ``ParallelEnv`` (one worker process per copy, which pays off
    when the run is long enough to repay each worker's start — importing torch and
    torchrl took 10–40 s on a busy 2-core machine — and there are cores to spare).
    Batch size ``(num_envs,)``; each step costs ``num_envs`` evaluations.

    Args:
        num_envs: number of copies.
        scenario, seed, **kwargs: as :func:`make_torchrl_env` (copy ``i`` is seeded
            ``copy_seeds(seed, num_envs)[i]``).
        parallel: worker processes instead of one process.
        start: build the copies now. TorchRL starts a batched env lazily, at its first
            reset or step, and closing one that never started raises ("trying to close a
            closed environment") — BenchMARL closes its evaluation env even when
            evaluation is off.
    """
    _torchrl()
    from torchrl.envs import ParallelEnv, SerialEnv

    factories = env_factories(num_envs, scenario, seed=seed, **kwargs)
    cls = ParallelEnv if parallel else SerialEnv
    env = cls(len(factories), factories)
    if start:
        env.start()
    return env


def learned_prices(
    policy: Callable[[Any], Any],
    env: Any,
    network: Any,
    *,
    rounds: int | None = None,
    group: str = GROUP,
) -> dict[str, np.ndarray]:
    """The pure price profile a policy plays, ``{station: (n_periods,) float64}``.

    Exploration is off (``ExplorationType.DETERMINISTIC``: the mode of a stochastic
    policy, no added noise). One-step game (``rounds=None``): the policy's actions at
    ``env.reset()``, which costs no evaluation (the observation is constant). Repeated
    game: a deterministic rollout of ``rounds`` steps and its last actions (``rounds``
    evaluations per copy), as :class:`evcs_gym.baselines.GameTrainer` reads pure
    strategies. On a batched env, copy 0 is read. Actions in [-1, 1] (the env's action
    spec) are mapped to the price bounds as :class:`~evcs_gym.wrappers.RescaleActions`
    does; prices are clipped into the bounds.

    Args:
        policy: a TensorDict module writing ``(group, "action")``.
        env: the TorchRL env (single or batched) from this module.
        network: the scenario (:class:`~evcs_gym.NetworkData`, or its name / folder):
            station names in group order and price bounds.
        rounds: ``None`` for the one-step game, else the repeated game's rounds.
        group: the group name.

    Raises:
        ValueError: the env's action bounds are neither [-1, 1] nor the price bounds.
    """
    _torchrl()
    import torch
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    from evcs_gym.envs.parallel_env import resolve_scenario

    nd = resolve_scenario(network)
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        if rounds is None:
            td = policy(env.reset())
        else:
            td = env.rollout(rounds, policy, break_when_any_done=False)[..., -1]
    actions = td.get((group, "action"))
    while actions.dim() > 2:  # batch dims: copy 0
        actions = actions[0]
    actions = actions.detach().cpu().numpy().astype(np.float64)
    spec = _unbatched_action_spec(env, group)
    spec_low = spec.space.low.cpu().numpy().reshape(actions.shape)
    spec_high = spec.space.high.cpu().numpy().reshape(actions.shape)
    low = np.array([[nd.price_bounds[a][0]] for a in nd.agent_names])
    high = np.array([[nd.price_bounds[a][1]] for a in nd.agent_names])
    if actions.shape != (nd.n_agents, nd.n_periods):
        raise ValueError(
            f"the policy's actions have shape {actions.shape}, the scenario "
            f"{nd.name!r} has {nd.n_agents} stations x {nd.n_periods} periods"
        )
    if np.allclose(spec_low, -1.0) and np.allclose(spec_high, 1.0):
        prices = low + (np.clip(actions, -1.0, 1.0) + 1.0) / 2.0 * (high - low)
    elif np.allclose(spec_low, low) and np.allclose(spec_high, high):
        prices = actions
    else:
        raise ValueError(
            "the env's action bounds are neither [-1, 1] nor the price bounds of "
            f"{nd.name!r}: low {spec_low.tolist()}, high {spec_high.tolist()}"
        )
    prices = np.clip(prices, low, high)
    return {a: prices[i].copy() for i, a in enumerate(nd.agent_names)}


def _unbatched_action_spec(env: Any, group: str) -> Any:
    spec = env.full_action_spec[group, "action"]
    while spec.ndim > 2:  # (batch..., n_agents, n_periods)
        spec = spec[0]
    return spec
