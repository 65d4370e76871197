"""SingleAgentView (evcs_gym.wrappers.single_agent): a Gymnasium view of any parallel game."""

from __future__ import annotations

import evcs_gym
from evcs_gym.wrappers import HistoryWrapper, SingleAgentView


def test_single_agent_view_over_any_parallel_env(tiny):
    game = HistoryWrapper(evcs_gym.parallel_env(scenario=tiny), rounds=2)
    view = SingleAgentView(game)
    assert view.observation_space is game.state_space
    obs, _ = view.reset(seed=0)
    assert view.observation_space.contains(obs)
