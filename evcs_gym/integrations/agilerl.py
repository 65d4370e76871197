"""AgileRL adapter: vector envs of the repeated pricing game for MADDPG / MATD3.

AgileRL is imported inside the functions, so ``import evcs_gym`` never needs it. Tested
with ``agilerl==2.58.0`` (``pettingzoo<1.27``, ``tensordict==0.13.0``); see
``noxfile.py``.

Why the repeated game: AgileRL's ``AsyncPettingZooVecEnv`` resets a copy as soon as all
its agents are done and returns the *reset's* observations and infos in place of that
step's. In the one-step game every step ends an episode, so every step's outcome
(prices, revenue, flows) would be lost; in the repeated game
(:class:`~evcs_gym.wrappers.HistoryWrapper`, ``rounds`` rounds) only the last round's is,
and :class:`KeepFinalStep` hands that back inside the reset's infos.

What a user would otherwise write by hand:

* :func:`pricing_env` — the env factory: ``KeepFinalStep(HistoryWrapper(parallel_env))``.
* :func:`make_vect_envs` — ``agilerl.utils.utils.make_multi_agent_vect_envs`` on it, after
  :func:`check_agent_ids`.
* :func:`check_agent_ids` — AgileRL groups agents by ``id.rsplit("_", 1)[0]`` and gives a
  group one shared network. Station names without ``_`` (``"A"``, ``"10"``: every bundled
  scenario) are each their own group, so every station keeps its own actor and critic;
  names that would share a group raise ``ValueError``.
* :func:`agent_spaces` — the observation / action space lists and agent ids MADDPG and
  MATD3 take, in ``possible_agents`` order.
* :func:`true_next_obs` / :func:`step_values` — the real next observation and the step's
  info values (``prices``, ``reward_raw``, ``flows``...) also for the final round.
* :func:`learned_prices` — each station's deterministic prices (no exploration noise) at
  an observation, in real currency.

Example (needs ``pip install agilerl==2.58.0``)::

    from agilerl.algorithms import MADDPG
    from evcs_gym.integrations.agilerl import agent_spaces, learned_prices, make_vect_envs

    env = make_vect_envs(num_envs=2, scenario="tiny", rounds=10)
    obs_spaces, act_spaces, ids = agent_spaces(env)
    agent = MADDPG(obs_spaces, act_spaces, agent_ids=ids, vect_noise_dim=2, gamma=0.0)
    obs, infos = env.reset(seed=0)
    action, raw = agent.get_action(obs, infos)  # prices in real bounds
    obs, rewards, terms, truncs, infos = env.step(action)  # 2 traffic simulations
    ...  # store transitions and agent.learn(...) as in examples/agilerl_pricing.py
    print(learned_prices(agent, obs))  # {'A': array([...]), 'B': array([...])}
    env.close()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from evcs_gym.errors import DependencyNotInstalled

if TYPE_CHECKING:  # pragma: no cover - typing only
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

__all__ = [
    "KeepFinalStep",
    "agent_spaces",
    "agilerl_group",
    "check_agent_ids",
    "learned_prices",
    "make_vect_envs",
    "pricing_env",
    "step_values",
    "true_next_obs",
]


class KeepFinalStep(BaseParallelWrapper):
    """Put the last step of an episode into the next ``reset``'s infos.

    When every agent is done, the step's observations and infos are kept; the next
    ``reset`` adds them to each agent's info as ``final_observation`` and ``final_info``
    (Gymnasium's vector-env names), once. AgileRL's vector env resets a finished copy
    inside the worker and returns only the reset's infos, so this is where the final
    round's prices, revenue and flows survive.

    Example:
        >>> import evcs_gym
        >>> from evcs_gym.wrappers import HistoryWrapper
        >>> env = KeepFinalStep(HistoryWrapper(evcs_gym.parallel_env(scenario="tiny"), rounds=1))
        >>> _ = env.reset(seed=0)
        >>> obs, _, _, truncs, infos = env.step({"A": [1.0] * 4, "B": [1.5] * 4})
        >>> truncs["A"], sorted(env.reset()[1]["A"])
        (True, ['final_info', 'final_observation', 'round'])
        >>> sorted(env.reset()[1]["A"])  # only once
        ['round']
    """

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self._final: tuple[dict[str, Any], dict[str, Any]] | None = None

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        if self._final is not None:
            final_obs, final_infos = self._final
            self._final = None
            infos = {
                a: {
                    **infos.get(a, {}),
                    "final_observation": final_obs[a],
                    "final_info": final_infos.get(a, {}),
                }
                if a in final_obs
                else infos.get(a, {})
                for a in dict.fromkeys([*obs, *infos])
            }
        return obs, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        if all(terms[a] or truncs[a] for a in terms):
            self._final = (dict(obs), dict(infos))
        else:
            self._final = None
        return obs, rewards, terms, truncs, infos

    def __str__(self) -> str:
        return f"KeepFinalStep<{self.env}>"


def pricing_env(
    scenario: Any = "tiny",
    rounds: int = 10,
    *,
    k: int = 1,
    include_flows: bool = True,
    ema: float | None = None,
    agent_id: bool = True,
    include_round: bool = False,
    initial_prices: Any = "random",
    **env_kwargs: Any,
) -> KeepFinalStep:
    """The repeated pricing game as AgileRL runs it (the factory for its vector envs).

    ``KeepFinalStep(HistoryWrapper(evcs_gym.parallel_env(scenario, **env_kwargs), rounds,
    ...))``: actions are prices in real bounds (AgileRL's actors rescale their ``tanh``
    output into a ``Box``'s bounds themselves). The history arguments are those of
    :class:`~evcs_gym.wrappers.HistoryWrapper`.
    """
    import evcs_gym
    from evcs_gym.wrappers import HistoryWrapper

    base = evcs_gym.parallel_env(scenario=scenario, **env_kwargs)
    env = HistoryWrapper(
        base,
        rounds,
        k=k,
        include_flows=include_flows,
        ema=ema,
        agent_id=agent_id,
        include_round=include_round,
        initial_prices=initial_prices,
    )
    return KeepFinalStep(env)


def agilerl_group(agent_id: str) -> str:
    """The group AgileRL puts an agent in (``MultiAgentRLAlgorithm.get_group_id``)."""
    return agent_id.rsplit("_", 1)[0]


def check_agent_ids(agent_ids: Iterable[str]) -> list[str]:
    """``agent_ids`` as a list, if AgileRL gives each of them a network of its own.

    Raises:
        ValueError: two stations fall into one AgileRL group (e.g. ``"st_1"`` and
            ``"st_2"`` both into ``"st"``), so they would share one actor and critic.
    """
    ids = list(agent_ids)
    groups: dict[str, list[str]] = {}
    for a in ids:
        groups.setdefault(agilerl_group(a), []).append(a)
    shared = {g: members for g, members in groups.items() if len(members) > 1}
    if shared:
        raise ValueError(
            f"AgileRL groups agents by the text before their last '_' and would make "
            f"stations {shared} share one network; rename the charging nodes (e.g. "
            f"without '_') to train one network per station"
        )
    return ids


def make_vect_envs(num_envs: int = 2, **kwargs: Any) -> AsyncPettingZooVecEnv:
    """``num_envs`` copies of :func:`pricing_env` (``kwargs``) in worker processes.

    AgileRL's ``make_multi_agent_vect_envs``: each copy runs its traffic simulations in
    its own process, so two copies use two cores. A step of the vector env costs
    ``num_envs`` simulator evaluations.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"`num_envs` must be a positive integer, actually: {num_envs!r}")
    probe = pricing_env(**kwargs)  # fail here, not in a worker, on bad arguments
    check_agent_ids(probe.possible_agents)
    probe.close()
    try:
        from agilerl.utils.utils import make_multi_agent_vect_envs
    except ImportError as e:
        raise DependencyNotInstalled(
            "AgileRL is not installed; run `pip install agilerl==2.58.0` "
            "(its import also needs `peft`)"
        ) from e
    return make_multi_agent_vect_envs(pricing_env, num_envs=num_envs, **kwargs)


def agent_spaces(env: Any) -> tuple[list[spaces.Space], list[spaces.Space], list[str]]:
    """``(observation_spaces, action_spaces, agent_ids)`` for ``MADDPG`` / ``MATD3``.

    ``env``: a vector env from :func:`make_vect_envs` or a PettingZoo ``ParallelEnv``.
    Lists in ``possible_agents`` order (AgileRL also takes ``spaces.Dict``, but its
    lists pair with ``agent_ids`` by position).
    """
    ids = check_agent_ids(env.possible_agents)
    if hasattr(env, "single_observation_space"):  # AgileRL's PettingZooVecEnv
        obs = [env.single_observation_space(a) for a in ids]
        act = [env.single_action_space(a) for a in ids]
    else:
        obs = [env.observation_space(a) for a in ids]
        act = [env.action_space(a) for a in ids]
    return obs, act, ids


def _rows(info: Mapping[str, Any], key: str) -> np.ndarray | None:
    """Which copies of a vector env's agent info hold ``key`` (AgileRL's ``_key`` mask)."""
    if key not in info or f"_{key}" not in info:
        return None
    return np.asarray(info[f"_{key}"], dtype=bool)


def true_next_obs(
    next_obs: Mapping[str, np.ndarray], infos: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """``next_obs`` with the final observation of every copy that was reset in this step.

    For the replay buffer: AgileRL's vector env returns the reset's observation where an
    episode ended; :class:`KeepFinalStep` kept the real one in
    ``infos[agent]["final_observation"]``. ``next_obs`` and ``infos`` are a vector env's.
    """
    out = {}
    for agent, obs in next_obs.items():
        obs = np.array(obs, copy=True)
        info = infos.get(agent, {})
        rows = _rows(info, "final_observation")
        if rows is not None:
            obs[rows] = np.asarray(info["final_observation"])[rows]
        out[agent] = obs
    return out


def step_values(infos: Mapping[str, Any], key: str) -> dict[str, np.ndarray]:
    """``{agent: (num_envs, ...) values}`` of info ``key`` for the step just taken.

    ``key`` is any per-agent info of the base env (``"prices"``, ``"reward_raw"``,
    ``"revenue"``, ``"flows"``, ``"converged"``...); ``infos`` are a vector env's. Copies
    that were reset in this step take it from ``final_info``, the others from the info.

    Raises:
        KeyError: a copy has ``key`` in neither (e.g. the infos of a ``reset``).
    """
    out = {}
    for agent, info in infos.items():
        if not isinstance(info, Mapping):
            continue  # AgileRL's "_agent" presence masks
        final = info.get("final_info", {})
        sources = [
            (rows, src)
            for rows, src in ((_rows(final, key), final), (_rows(info, key), info))
            if rows is not None
        ]
        if not sources:
            raise KeyError(f"info {key!r} of agent {agent!r} is missing")
        values = []
        for i in range(len(sources[0][0])):
            src = next((s for rows, s in sources if rows[i]), None)
            if src is None:
                raise KeyError(f"info {key!r} of agent {agent!r} is missing in copy {i}")
            values.append(np.asarray(src[key][i]))
        out[agent] = np.stack(values)
    return out


def learned_prices(agent: Any, observations: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Each station's deterministic prices (no exploration noise) at ``observations``.

    Args:
        agent: a trained AgileRL ``MADDPG`` or ``MATD3``.
        observations: ``{station: observation}`` — one observation, or a vector env's
            ``(num_envs, obs_dim)`` batch, of which the first copy is used.

    Returns:
        ``{station: (n_periods,) float64 prices}`` in real currency (the actor's output
        rescaled into the action bounds, as ``get_action`` sends it to the env).
    """
    first = {}
    for a in agent.agent_ids:
        if a not in observations:
            raise ValueError(f"`observations` has no entry for station {a!r}")
        obs = np.asarray(observations[a], dtype=np.float32)
        first[a] = obs[None] if obs.ndim == 1 else obs[:1]
    training = bool(agent.training)
    agent.set_training_mode(False)
    try:
        actions, _ = agent.get_action(first)
    finally:
        agent.set_training_mode(training)
    return {a: np.asarray(actions[a], dtype=np.float64).reshape(-1) for a in agent.agent_ids}
