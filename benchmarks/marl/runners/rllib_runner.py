"""RLlib PPO (new API stack), one module per agent.

* EVCS one-step game: ``examples/rllib_pricing.py`` (its settings and their reasons are
  in that example's docstring), sampling in two env runners on the road networks. The
  repeated game is not in the grid: that example reads the learned prices off the stage
  game's constant observation.
* The other tasks: RLlib's ``PPOConfig`` defaults on ``ParallelPettingZooEnv`` (sampling
  in the driver, no remote env runners: 2 cores), trained until the budget of env steps
  is sampled (an iteration samples a whole batch, so the run may pass the budget by up
  to one batch; the steps actually sampled are recorded).
"""

from __future__ import annotations

from marl.evaluation import evaluate_returns
from marl.runners.common import Trained, run_example, spread_over_cores
from marl.tasks import Task, make_env


def run_evcs(algorithm: str, task: Task, seed: int, budget: int, smoke: bool) -> Trained:
    # two remote env runners, else sampling in the driver (RLlib's sampling is not
    # bit-reproducible either way)
    runners = 2 if spread_over_cores(task, smoke) else 0
    return run_example(
        "rllib_pricing",
        algorithm,
        task,
        seed,
        budget,
        smoke,
        rounds=None,
        extra=["--env-runners", str(runners)],
    )


def run_episodic(algorithm: str, task: Task, seed: int, budget: int) -> Trained:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    from evcs_gym.integrations.rllib import deterministic_action, train_until

    name = f"bench_marl_{task.name}"
    register_env(name, lambda _: ParallelPettingZooEnv(make_env(task)))
    probe = make_env(task)
    agents = list(probe.possible_agents)
    spaces = {a: probe.action_space(a) for a in agents}
    probe.close()
    config = (
        PPOConfig()
        .environment(name)
        .multi_agent(
            policies=set(agents),
            policy_mapping_fn=lambda agent_id, *args, **kwargs: agent_id,
        )
        .env_runners(num_env_runners=0)
        .debugging(seed=seed)
    )
    batch = config.train_batch_size_per_learner
    if budget < 4 * batch:  # at least 4 iterations in the run (CI budgets)
        batch = max(2 * task.max_steps, budget // 4)
        config = config.training(train_batch_size_per_learner=batch, minibatch_size=min(128, batch))
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
    try:
        algo = config.build_algo()
        try:
            result = train_until(algo, budget)
            steps = int(result["num_env_steps_sampled_lifetime"])
            returns = evaluate_returns(
                lambda: make_env(task),
                lambda obs: {a: deterministic_action(algo, a, obs[a], spaces[a]) for a in obs},
            )
        finally:
            algo.stop()
    finally:
        if started_ray:
            ray.shutdown()
    return Trained(
        env_steps=steps,
        score={"return": returns},
        settings={
            "train_batch_size": batch,
            "minibatch_size": config.minibatch_size,
            "iterations": int(result["training_iteration"]),
        },
    )
