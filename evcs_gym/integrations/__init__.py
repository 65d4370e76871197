"""Adapters for the MARL libraries people train with.

Each submodule imports its library lazily, so ``import evcs_gym`` (and
``import evcs_gym.integrations``) needs none of them:

* :mod:`evcs_gym.integrations.rllib` — RLlib (new API stack) env creator and
  multi-agent config helpers.
* :mod:`evcs_gym.integrations.torchrl` — a TorchRL env factory (all stations in one
  group, global state, numeric infos).
* :mod:`evcs_gym.integrations.benchmarl` — a BenchMARL task (class + enum).
* :mod:`evcs_gym.integrations.agilerl` — AgileRL vector envs on the repeated game.

Every library runs in its own isolated environment: see ``noxfile.py``.
"""
