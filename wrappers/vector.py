"""Multi-agent vector env: ``num_envs`` copies of the pricing game, evaluated by a pool.

:class:`EVCSVectorEnv` steps ``num_envs`` copies of a pricing ``ParallelEnv`` (usually
the repeated game of :class:`~evcs_gym.wrappers.HistoryWrapper`) at once, SubprocVecEnv
style. The copies — their histories, generators and bookkeeping — stay in the main
process; only the expensive part, the evaluations, goes to the worker processes of an
:class:`evcs_gym.ParallelEvaluatorPool`: ``step_async`` validates every copy's joint
action, draws its evaluator seed and ``pool.submit``\\ s all ``num_envs`` price profiles;
``step_wait`` collects the results and finishes each copy's step. Because every copy runs
the same code as when stepped alone (``begin_step`` → evaluate → ``end_step``), and the
pool's results are bit-identical to serial evaluation, the vector env returns exactly
what stepping the copies one after another would return.

Shapes: actions ``{agent: (num_envs, act_dim)}`` (``(num_envs,)`` integer levels for
``Discrete`` actions, :class:`~evcs_gym.wrappers.DiscretePrices`), observations
``{agent: (num_envs, obs_dim)}`` float32, rewards
``{agent: (num_envs,)}`` float64, terminations / truncations ``{agent: (num_envs,)}``
bool, infos a list of ``num_envs`` per-copy ``{agent: info}`` dicts.

**Autoreset: same step.** A copy whose episode ends (every agent terminated or
truncated) is reset inside the same ``step`` call, without a seed (its generators
continue their streams). The returned observation is the first one of the new episode;
the final one is in ``infos[i][agent]["final_observation"]`` and the reset infos in
``vec_env.reset_infos[i]``. (Gymnasium's default next-step autoreset would spend every
other step of the one-step game on a reset.)

Seeding: ``reset(seed=s)`` resets copy ``i`` with seed ``s + i`` (a list gives one seed
per copy, ``None`` continues every copy's stream).

Errors: invalid actions raise ``ValueError`` in ``step_async`` before anything is
submitted (no copy's generator moves). An exception in a worker (e.g. a ``PriceError``
from ``clip_actions=False``, or a crashed worker) is re-raised by ``step_wait`` with a
note naming the copy; the vector env then needs ``reset()``.

Example:
    >>> import numpy as np
    >>> from evcs_gym.wrappers import make_vector_env
    >>> with make_vector_env(2, scenario="tiny", rounds=3, n_workers=2) as venv:
    ...     obs, infos = venv.reset(seed=0)
    ...     actions = {a: np.full((2, 4), 1.25, dtype=np.float32) for a in venv.possible_agents}
    ...     obs, rewards, terms, truncs, infos = venv.step(actions)
    >>> obs["A"].shape, rewards["B"].shape, truncs["A"].tolist()
    ((2, 14), (2,), [False, False])
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from evcs_gym.envs.parallel_env import PendingStep, parallel_env, resolve_scenario
from evcs_gym.network import NetworkData
from evcs_gym.ue.evaluator import EvalResult
from evcs_gym.wrappers.discrete import DiscretePrices, GridLike, resolve_grid
from evcs_gym.wrappers.history import HistoryWrapper
from evcs_gym.wrappers.rescale import RescaleActions

__all__ = ["EVCSVectorEnv", "PoolLike", "make_vector_env"]


class PoolLike(Protocol):
    """What :class:`EVCSVectorEnv` needs from a pool."""

    def submit(self, prices: Mapping[str, Any], seed: int | None = None) -> Future: ...


class EVCSVectorEnv:
    """``num_envs`` copies of a pricing ``ParallelEnv`` whose evaluations run in a pool.

    Args:
        env_fns: one constructor per copy; each returns an
            :class:`~evcs_gym.envs.EVCSPricingParallelEnv`, possibly wrapped in
            :class:`~evcs_gym.wrappers.HistoryWrapper` / :class:`~evcs_gym.wrappers.RescaleActions`
            (the wrappers must implement ``begin_step`` / ``end_step``). All copies must
            share one scenario and the same agents and spaces.
        pool: an object with ``submit(prices, seed) -> Future`` (e.g. an
            :class:`evcs_gym.ParallelEvaluatorPool` for the copies' scenario). It is left
            open by :meth:`close`. ``None``: create a ``ParallelEvaluatorPool`` with
            ``n_workers`` workers, closed by :meth:`close`.
        n_workers: workers of the pool created when ``pool`` is None.
    """

    metadata = {"name": "evcs_pricing_vector_v0", "autoreset_mode": "same_step"}

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ParallelEnv]],
        *,
        pool: PoolLike | None = None,
        n_workers: int = 2,
    ) -> None:
        if len(env_fns) < 1:
            raise ValueError(f"`env_fns` must hold at least one constructor, got {env_fns!r}")
        self._closed = False
        self._owns_pool = False
        self.pool: Any = None
        self.envs: list[ParallelEnv] = [fn() for fn in env_fns]
        first = self.envs[0]
        for i, env in enumerate(self.envs):
            kind = type(env)
            if not (hasattr(kind, "begin_step") and hasattr(kind, "end_step")):
                raise TypeError(
                    f"copy {i} ({env}) has no begin_step/end_step: every wrapper between "
                    "EVCSVectorEnv and the base env must implement the two-phase step"
                )
            if list(env.possible_agents) != list(first.possible_agents):
                raise ValueError(
                    f"copy {i} has agents {env.possible_agents}, copy 0 has {first.possible_agents}"
                )
            for a in first.possible_agents:
                if env.observation_space(a) != first.observation_space(a) or env.action_space(
                    a
                ) != first.action_space(a):
                    raise ValueError(f"copy {i} has other spaces than copy 0 for agent {a!r}")
        self.network: NetworkData = first.unwrapped.network
        for i, env in enumerate(self.envs[1:], start=1):
            nd = env.unwrapped.network
            if nd is not self.network and nd != self.network:
                raise ValueError(
                    f"copy {i} is on scenario {nd.name!r}, copy 0 on {self.network.name!r}; "
                    "all copies must share one scenario"
                )
        if pool is None:
            try:
                from evcs_gym.parallel.pool import ParallelEvaluatorPool
            except ImportError as e:  # pragma: no cover - pool ships with the package
                raise ImportError("EVCSVectorEnv needs evcs_gym.ParallelEvaluatorPool") from e
            pool = ParallelEvaluatorPool(self.network, n_workers=n_workers)
            self._owns_pool = True
        elif not callable(getattr(pool, "submit", None)):
            raise TypeError(f"`pool` must have a submit(prices, seed) method, got {pool!r}")
        self.pool = pool
        self.num_envs = len(self.envs)
        self.possible_agents: list[str] = list(first.possible_agents)
        self.agents: list[str] = list(self.possible_agents)
        self.state_space: spaces.Space | None = getattr(first, "state_space", None)
        self.reset_infos: list[dict[str, dict[str, Any]]] = [{} for _ in self.envs]
        self._pending: list[tuple[PendingStep, Future]] | None = None
        self._needs_reset = True

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """One copy's observation space (batched arrays add a leading ``num_envs`` axis)."""
        return self.envs[0].observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """One copy's action space (batched actions add a leading ``num_envs`` axis)."""
        return self.envs[0].action_space(agent)

    # ------------------------------------------------------------------ API
    def reset(
        self, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], list[dict[str, dict[str, Any]]]]:
        """Reset every copy; ``seed=s`` gives copy ``i`` the seed ``s + i``."""
        self._check_open()
        self._drain()
        seeds = self._seeds(seed)
        observations, infos = [], []
        for env, s in zip(self.envs, seeds):
            obs, info = env.reset(seed=s, options=options)
            observations.append(obs)
            infos.append(info)
        self.reset_infos = [dict(i) for i in infos]
        self._needs_reset = False
        return self._stack(observations), infos

    def step_async(self, actions: Mapping[str, Any]) -> None:
        """Validate ``{agent: (num_envs, act_dim)}`` actions and submit all evaluations."""
        self._check_open()
        if self._pending is not None:
            raise RuntimeError("step_async() called twice without step_wait()")
        if self._needs_reset:
            raise RuntimeError("call reset() before stepping (after creation or an error)")
        batch = self._split_actions(actions)
        saved = [self._rng_state(env) for env in self.envs]
        pendings: list[PendingStep] = []
        try:
            for i, env in enumerate(self.envs):
                try:
                    pendings.append(env.begin_step(batch[i]))
                except Exception as exc:
                    _add_note(exc, f"raised by copy {i} of EVCSVectorEnv")
                    raise
            futures: list[Future] = []
            try:
                for i, p in enumerate(pendings):
                    try:
                        futures.append(self.pool.submit(p.prices, p.seed))
                    except Exception as exc:
                        _add_note(exc, f"raised submitting copy {i} of EVCSVectorEnv")
                        raise
            except BaseException:
                _cancel_and_wait(futures)
                raise
        except BaseException:
            for env, state in zip(self.envs, saved):
                self._restore_rng(env, state)
            raise
        self._pending = list(zip(pendings, futures))

    def step_wait(
        self, timeout: float | None = None
    ) -> tuple[dict, dict, dict, dict, list[dict[str, dict[str, Any]]]]:
        """Collect the evaluations submitted by :meth:`step_async` and finish the step."""
        self._check_open()
        if self._pending is None:
            raise RuntimeError("step_wait() called without step_async()")
        pending, self._pending = self._pending, None
        results: list[EvalResult | None] = []
        error: tuple[int, BaseException] | None = None
        for i, (_, future) in enumerate(pending):
            try:
                results.append(future.result(timeout=timeout))
            except BaseException as exc:  # keep collecting so the pool is left idle
                results.append(None)
                if error is None:
                    error = (i, exc)
                    for _, later in pending[i + 1 :]:
                        later.cancel()
        if error is not None:
            self._needs_reset = True
            i, failure = error
            _add_note(failure, f"raised while evaluating copy {i} of EVCSVectorEnv; call reset()")
            raise failure
        observations, rewards, terms, truncs, infos = [], [], [], [], []
        for i, (env, (p, _), result) in enumerate(zip(self.envs, pending, results)):
            obs, rew, term, trunc, info = env.end_step(p, result)
            info = {a: dict(v) for a, v in info.items()}
            if all(term[a] or trunc[a] for a in rew):
                for a in info:
                    info[a]["final_observation"] = obs[a]
                obs, reset_info = env.reset()
                self.reset_infos[i] = reset_info
            observations.append(obs)
            rewards.append(rew)
            terms.append(term)
            truncs.append(trunc)
            infos.append(info)
        agents = self.possible_agents
        return (
            self._stack(observations),
            {a: np.array([r[a] for r in rewards], dtype=np.float64) for a in agents},
            {a: np.array([t[a] for t in terms], dtype=bool) for a in agents},
            {a: np.array([t[a] for t in truncs], dtype=bool) for a in agents},
            infos,
        )

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict, dict, dict, dict, list[dict[str, dict[str, Any]]]]:
        """``step_async(actions)`` then ``step_wait()``."""
        self.step_async(actions)
        return self.step_wait()

    def state(self) -> np.ndarray:
        """``(num_envs, state_dim)`` global states of the copies."""
        return np.stack([env.state() for env in self.envs])

    def render(self) -> list[Any]:
        """Each copy's ``render()``."""
        return [env.render() for env in self.envs]

    def close(self) -> None:
        """Close the copies and the pool if this vector env created it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._drain()
        for env in self.envs:
            env.close()
        if self._owns_pool and self.pool is not None:
            shutdown = getattr(self.pool, "shutdown", None) or getattr(self.pool, "close", None)
            if shutdown is not None:
                shutdown()
        self.pool = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> EVCSVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.num_envs

    def __repr__(self) -> str:
        return f"EVCSVectorEnv(num_envs={len(self.envs)}, env={self.envs[0]})"

    # ------------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the EVCSVectorEnv is closed")

    def _drain(self) -> None:
        if self._pending is None:
            return
        _cancel_and_wait([f for _, f in self._pending])
        self._pending = None
        self._needs_reset = True

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        n = self.num_envs
        if seed is None:
            return [None] * n
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(n)]
        if isinstance(seed, Sequence) and len(seed) == n:
            return list(seed)
        raise ValueError(f"`seed` must be None, an int or {n} seeds, actually: {seed!r}")

    def _split_actions(self, actions: Mapping[str, Any]) -> list[dict[str, np.ndarray]]:
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"`actions` must be a dict {{agent: (num_envs, act_dim) array}}, got {actions!r}"
            )
        unknown = [a for a in actions if a not in self.possible_agents]
        missing = [a for a in self.possible_agents if a not in actions]
        if unknown or missing:
            raise ValueError(
                f"`actions` must have exactly the agents {self.possible_agents}; "
                f"missing {missing}, unknown {unknown}"
            )
        batch: list[dict[str, np.ndarray]] = [{} for _ in self.envs]
        for a in self.possible_agents:
            # the copies' action spaces are Boxes or Discretes: their shape is never None
            space = self.action_space(a)
            act_shape = cast(tuple[int, ...], space.shape)
            shape = (self.num_envs, *act_shape)
            dtype = np.int64 if isinstance(space, spaces.Discrete) else np.float64
            try:
                arr = np.asarray(actions[a])
                if dtype is np.int64 and arr.dtype.kind == "f" and (arr == arr.round()).all():
                    arr = arr.astype(np.int64)
                arr = arr.astype(dtype, casting="same_kind")
            except (TypeError, ValueError):
                kind = "integer levels" if dtype is np.int64 else "numeric"
                raise ValueError(f"actions of agent {a!r} are not {kind}: {actions[a]!r}") from None
            if arr.shape != shape:
                raise ValueError(
                    f"actions of agent {a!r} must have shape {shape} (num_envs, act_dim), "
                    f"got shape {arr.shape}"
                )
            for i in range(self.num_envs):
                batch[i][a] = arr[i]
        return batch

    def _stack(self, observations: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {
            a: np.stack([np.asarray(o[a], dtype=np.float32) for o in observations])
            for a in self.possible_agents
        }

    @staticmethod
    def _rng_state(env: ParallelEnv) -> list[Any]:
        states = []
        for gen in _generators(env):
            states.append(gen.bit_generator.state)
        return states

    @staticmethod
    def _restore_rng(env: ParallelEnv, states: list[Any]) -> None:
        for gen, state in zip(_generators(env), states):
            gen.bit_generator.state = state


def _generators(env: Any) -> list[np.random.Generator]:
    """The generators a step may advance: the base env's (drawing the evaluator seed)."""
    return [env.unwrapped.np_random]


def _cancel_and_wait(futures: Sequence[Future]) -> None:
    """Cancel what has not started and wait for the rest.

    A plain ``Future`` cancelled by its holder stays ``CANCELLED`` (never
    ``CANCELLED_AND_NOTIFIED``), which ``concurrent.futures.wait`` does not count as done,
    so only the futures that could not be cancelled are waited for.
    """
    running = [f for f in futures if not f.cancel()]
    concurrent.futures.wait(running)


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):
        exc.add_note(note)


def make_vector_env(
    num_envs: int = 2,
    *,
    scenario: str | NetworkData = "siouxfalls",
    rounds: int | None = 10,
    history: Mapping[str, Any] | None = None,
    rescale_actions: bool = False,
    discrete: int | GridLike | None = None,
    pool: PoolLike | None = None,
    n_workers: int = 2,
    scenario_overrides: Mapping[str, Any] | None = None,
    **env_kwargs: Any,
) -> EVCSVectorEnv:
    """``num_envs`` copies of ``HistoryWrapper(parallel_env(...), rounds, **history)``.

    Args:
        num_envs: copies.
        scenario: scenario name, folder or :class:`~evcs_gym.NetworkData` (loaded once and
            shared by all copies).
        rounds: rounds of the repeated game; ``None`` steps the one-step game (every step
            then ends every copy's episode and autoresets it).
        history: further :class:`~evcs_gym.wrappers.HistoryWrapper` arguments.
        rescale_actions: wrap in :class:`~evcs_gym.wrappers.RescaleActions` (actions in
            ``[-1, 1]``).
        discrete: wrap the base env in :class:`~evcs_gym.wrappers.DiscretePrices`
            (``Discrete(m)`` actions, under the history): ``m`` levels on Calvano's grid,
            or a grid (:class:`~evcs_gym.tabular.PriceGrid` or ``{station: (m,
            n_periods) profiles}``); its actions are ``(num_envs,)`` integer levels.
        pool, n_workers: see :class:`EVCSVectorEnv`.
        scenario_overrides: settings overrides for :func:`evcs_gym.load_scenario`.
        **env_kwargs: :class:`~evcs_gym.envs.EVCSPricingParallelEnv` arguments
            (``reward_scale``, ``clip_actions``, ``eval_seed``, ``render_mode``).
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"`num_envs` must be a positive integer, actually: {num_envs!r}")
    if "evaluator" in env_kwargs:
        raise ValueError("the vector env evaluates through `pool`; don't pass `evaluator`")
    nd = resolve_scenario(scenario, scenario_overrides)
    if history and rounds is None:
        raise ValueError("`history` options need `rounds` (the repeated game's length)")
    if discrete is not None and rescale_actions:
        raise ValueError("`discrete` actions are levels: they cannot be rescaled as well")
    grid = None
    if discrete is not None:  # resolved once: every copy shares one grid
        probe = parallel_env(scenario=nd)
        grid = resolve_grid(probe, *_grid_options(discrete))

    def make() -> ParallelEnv:
        env: ParallelEnv = parallel_env(scenario=nd, **env_kwargs)
        if grid is not None:
            env = DiscretePrices(env, grid)
        if rounds is not None:
            env = HistoryWrapper(env, rounds, **dict(history or {}))
        if rescale_actions:
            env = RescaleActions(env)
        return env

    return EVCSVectorEnv([make] * int(num_envs), pool=pool, n_workers=n_workers)


def _grid_options(discrete: int | GridLike) -> tuple[GridLike | None, int, float]:
    """``make_vector_env``'s ``discrete`` as :func:`resolve_grid`'s ``(grid, m, xi)``."""
    if isinstance(discrete, bool):
        raise ValueError(f"`discrete` must be a number of levels or a grid, actually: {discrete!r}")
    if isinstance(discrete, (int, np.integer)):
        return None, int(discrete), 0.1
    return discrete, 0, 0.1
