"""AgileRL MADDPG / MATD3.

* EVCS tasks run ``examples/agilerl_pricing.py`` (its settings and their reasons are in
  that example's docstring). AgileRL's vector envs step episodes of the repeated game, so
  the one-step game is run as one-round episodes (the observation is then the constant
  opening one, as in the stage game).
* The other tasks: AgileRL's own off-policy loop (its MADDPG tutorial: an
  ``AsyncPettingZooVecEnv`` of :data:`NUM_ENVS` copies, a ``ReplayBuffer``, ``learn()``
  every ``learn_step`` env steps) with the algorithms' default hyperparameters.
"""

from __future__ import annotations

import numpy as np

from marl.evaluation import evaluate_returns
from marl.runners.common import Trained, run_example
from marl.tasks import Task, make_env

NUM_ENVS = 4
"""Env copies (processes) on the episodic tasks."""


def run_evcs(algorithm: str, task: Task, seed: int, budget: int, smoke: bool) -> Trained:
    # AgileRL's vector envs step episodes: the one-step game as one-round episodes
    return run_example("agilerl_pricing", algorithm, task, seed, budget, smoke, task.rounds or 1)


def run_episodic(algorithm: str, task: Task, seed: int, budget: int) -> Trained:
    import torch
    from agilerl.algorithms import MADDPG, MATD3
    from agilerl.components.data import MultiAgentTransition, transition_to_tensordict
    from agilerl.components.replay_buffer import ReplayBuffer
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    probe = make_env(task)
    agent_ids = list(probe.possible_agents)
    obs_spaces = [probe.observation_space(a) for a in agent_ids]
    act_spaces = [probe.action_space(a) for a in agent_ids]
    probe.close()
    cls = MADDPG if algorithm == "maddpg" else MATD3
    agent = cls(obs_spaces, act_spaces, agent_ids=agent_ids, vect_noise_dim=NUM_ENVS)
    memory = ReplayBuffer(max_size=100_000)
    env = AsyncPettingZooVecEnv([lambda: make_env(task) for _ in range(NUM_ENVS)])
    steps, step_index = 0, 0
    try:
        obs, infos = env.reset(seed=seed)
        while steps + NUM_ENVS <= budget:
            action, raw_action = agent.get_action(obs, infos)
            next_obs, rewards, terms, truncs, infos = env.step(action)
            steps += NUM_ENVS
            step_index += 1
            transition = transition_to_tensordict(
                MultiAgentTransition(
                    obs=obs, action=raw_action, reward=rewards, next_obs=next_obs, done=terms
                )
            )
            transition.batch_size = torch.Size([NUM_ENVS])
            memory.add(transition)
            # AgileRL's schedule: one learn() per `learn_step` env steps over all copies
            if len(memory) >= agent.batch_size:
                if agent.learn_step > NUM_ENVS:
                    if step_index % (agent.learn_step // NUM_ENVS) == 0:
                        agent.learn(memory.sample(agent.batch_size))
                else:
                    for _ in range(NUM_ENVS // agent.learn_step):
                        agent.learn(memory.sample(agent.batch_size))
            done = [
                i for i in range(NUM_ENVS) if all(terms[a][i] or truncs[a][i] for a in agent_ids)
            ]
            agent.reset_action_noise(done)
            obs = next_obs
    finally:
        env.close()

    agent.set_training_mode(False)

    def act(one_obs):
        actions, _ = agent.get_action({a: np.asarray(o)[None] for a, o in one_obs.items()})
        return {a: np.asarray(actions[a]).reshape(-1) for a in agent_ids}

    returns = evaluate_returns(lambda: make_env(task), act)
    return Trained(
        env_steps=steps,
        score={"return": returns},
        settings={
            "num_envs": NUM_ENVS,
            "batch_size": agent.batch_size,
            "learn_step": agent.learn_step,
            "gamma": agent.gamma,
        },
    )
