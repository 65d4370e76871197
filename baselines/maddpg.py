"""MADDPG (Lowe et al., 2017): decentralised actors, one centralised critic per agent.

This module also holds the shared DDPG machinery: :class:`IDDPG` and :class:`MFDDPG` subclass
:class:`MADDPG` and only override what the critic sees (:meth:`MADDPG._critic_input_dim` and
:meth:`MADDPG._critic_input`), like SB3's ``DDPG(TD3)``.

Algorithm (per update, for every agent ``i``, on one minibatch shared by all agents):

* critic: minimise ``(Q_i(x, a_1..a_n) - y_i)^2`` with ``y_i = r_i / reward_scale`` when
  ``gamma == 0`` (stage game, the default) and otherwise
  ``y_i = r_i + gamma (1 - done_i) Q'_i(x', mu'_1(o'_1) .. mu'_n(o'_n))`` (target networks);
* actor: maximise ``Q_i(x, a_1, .., mu_i(o_i), .., a_n)`` where the *other* agents' actions
  are the ones stored in the buffer (as in the authors' reference implementation), plus a
  small penalty ``actor_reg * mean(preact^2)`` that keeps the tanh from saturating;
* soft (Polyak) update of all target networks.

Critic inputs are normalised: actions are mapped to ``[-1, 1]`` by their bounds, and
observation dimensions with finite bounds too (``normalize_obs``).
"""

from __future__ import annotations

import copy
import math
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from evcs_gym.baselines.algorithm import CriticFn
from evcs_gym.baselines.common import (
    Actor,
    AdditiveCritic,
    Batch,
    Critic,
    GaussianNoise,
    ReplayBuffer,
    box_bounds,
    common_batch_size,
    polyak_update,
    torch_seeded,
    validate_agent_arrays,
)

__all__ = ["MADDPG", "MADDPGConfig"]

# Attributes (dicts agent -> module or optimiser) whose state dicts are checkpointed.
_NETS = ("actors", "critics", "target_actors", "target_critics")
_STATEFUL = (*_NETS, "actor_optims", "critic_optims")


@dataclass
class MADDPGConfig:
    """Hyper-parameters of MADDPG (also used, unchanged, by IDDPG and MFDDPG)."""

    actor_hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer widths of every actor MLP."""
    critic_hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer widths of every critic MLP."""
    critic_structure: str = "joint"
    """``"joint"``: one MLP of the whole critic input. ``"additive"``: a sum over action
    dimensions (:class:`~evcs_gym.baselines.common.AdditiveCritic`; every agent's action
    of the same length), each term seeing the observations and the ``d``-th value of every
    action the critic sees. The Sioux Falls market's recipe sets it for MADDPG and MFDDPG:
    there a joint critic of 4 stations x 8 periods, fitted to 200 evaluations, points the
    actors to the price bounds (the price war, ``docs/research/price-war.md``)."""
    actor_lr: float = 1e-3
    """Adam learning rate of the actors."""
    critic_lr: float = 3e-3
    """Adam learning rate of the critics (higher than the actor's: with gamma=0 the critic
    is plain regression on rewards, and a fast critic keeps the actor from overshooting)."""
    batch_size: int = 64
    """Minibatch size of one gradient update."""
    buffer_size: int = 100_000
    """Replay buffer capacity in joint transitions (one row per env copy and step)."""
    tau: float = 0.01
    """Polyak coefficient of the soft target updates."""
    gamma: float = 0.0
    """Discount factor; 0 fits the immediate reward (one-shot stage game)."""
    noise_std: float = 0.1
    """Initial exploration std, in units of each action dimension's range (high - low)."""
    noise_decay: float = 0.999
    """Multiplicative decay of the exploration std, applied once per ``learn()`` that trains."""
    noise_min: float = 0.02
    """Floor of the exploration std (same units as ``noise_std``). Keeping some exploration
    lets a station notice a profitable price rise late in training (Sioux Falls' station
    18 did not at 0.01)."""
    learning_starts: int = 64
    """``learn()`` returns None until the buffer holds max(batch_size, learning_starts) rows."""
    random_warmup: int = 128
    """Rows stored before exploration follows the policy: until the buffer holds this many,
    noisy actions are drawn uniformly from each action box (the random start of TD3 and
    SB3's ``learning_starts``), so the first critics see the whole price range, not one
    neighbourhood. Without it a station whose price starts above its rival's sees a flat
    revenue (no customers) around its price, its actor gets no gradient, and it can stay
    there (tiny's one-step game, 600 evaluations: MADDPG's verified NashConv was 21.3 % ±
    16.0 % over seeds 0–2 without it; with it, 0.16–0.39 % on four of seeds 0–4 and 19 %
    on the fifth. ``benchmarks/results/marl_tiny/``). The buffer is not checkpointed,
    so a loaded algorithm that goes on training warms up again. 0 disables it."""
    updates_per_learn: int = 2
    """Gradient updates (each on a fresh minibatch) per ``learn()`` call (cheap next to a
    simulation, so the critics fit each batch of evaluations better)."""
    reward_scale: float = 1.0
    """Rewards are divided by this before they are stored."""
    actor_reg: float = 1e-3
    """Weight of the pre-tanh activation penalty in the actor loss (0 disables it)."""
    max_grad_norm: float | None = None
    """Clip the gradient norm of every network to this value (None: no clipping)."""
    normalize_obs: bool = True
    """Rescale observation dimensions with finite Box bounds to [-1, 1] (others untouched)."""
    seed: int | None = 0
    """Seed of network init, replay sampling and exploration noise (None: fresh entropy)."""
    device: str = "cpu"
    """Torch device of the networks."""

    def __post_init__(self) -> None:
        self.actor_hidden_sizes = tuple(int(h) for h in self.actor_hidden_sizes)
        self.critic_hidden_sizes = tuple(int(h) for h in self.critic_hidden_sizes)
        checks = {
            "actor_lr": self.actor_lr > 0,
            "critic_lr": self.critic_lr > 0,
            "batch_size": self.batch_size >= 1,
            "buffer_size": self.buffer_size >= 1,
            "tau": 0 <= self.tau <= 1,
            "gamma": 0 <= self.gamma <= 1,
            "noise_std": self.noise_std >= 0,
            "noise_decay": 0 < self.noise_decay <= 1,
            "noise_min": 0 <= self.noise_min <= self.noise_std,
            "learning_starts": self.learning_starts >= 0,
            "random_warmup": self.random_warmup >= 0,
            "updates_per_learn": self.updates_per_learn >= 1,
            "reward_scale": self.reward_scale > 0 and math.isfinite(self.reward_scale),
            "actor_reg": self.actor_reg >= 0,
            "max_grad_norm": self.max_grad_norm is None or self.max_grad_norm > 0,
            "critic_structure": self.critic_structure in ("joint", "additive"),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"invalid {name}={getattr(self, name)!r}")


class MADDPG:
    """Multi-agent DDPG with a centralised critic (all observations and actions) per agent.

    Implements :class:`~evcs_gym.baselines.algorithm.Algorithm` for any set of 1-D Box
    observation spaces and finite 1-D Box action spaces.

    >>> from gymnasium.spaces import Box
    >>> obs_spaces = {"a": Box(-1, 1, (3,)), "b": Box(-1, 1, (2,))}
    >>> act_spaces = {"a": Box(0, 1, (1,)), "b": Box(-2, 2, (2,))}
    >>> algo = MADDPG(obs_spaces, act_spaces, MADDPGConfig(batch_size=8, learning_starts=8))
    >>> act = algo.take_action({"a": np.zeros(3), "b": np.zeros(2)}, add_noise=True)
    >>> act["a"].shape, act["b"].shape
    ((1,), (2,))
    >>> for _ in range(8):
    ...     algo.store_experience({"a": np.zeros(3), "b": np.zeros(2)}, act,
    ...                           {"a": 1.0, "b": 0.0}, {"a": np.zeros(3), "b": np.zeros(2)},
    ...                           {"a": False, "b": False})
    >>> sorted(algo.learn())[:2]
    ['actor_loss/a', 'actor_loss/b']
    """

    name = "maddpg"
    config_cls: type[MADDPGConfig] = MADDPGConfig

    def __init__(
        self,
        observation_spaces: Mapping[str, Any],
        action_spaces: Mapping[str, Any],
        config: MADDPGConfig | None = None,
        agents: Sequence[str] | None = None,
    ) -> None:
        cfg = config if config is not None else self.config_cls()
        self.config = cfg
        self.agents = list(agents) if agents is not None else list(observation_spaces)
        if len(set(self.agents)) != len(self.agents) or not self.agents:
            raise ValueError(f"agents must be a non-empty list of unique names: {self.agents}")
        for kind, sp in (("observation", observation_spaces), ("action", action_spaces)):
            if set(sp) != set(self.agents):
                raise ValueError(f"{kind} spaces are for {sorted(sp)}, agents are {self.agents}")
        obs_b = {
            a: box_bounds(observation_spaces[a], a, "observation", finite=False)
            for a in self.agents
        }
        act_b = {a: box_bounds(action_spaces[a], a, "action", finite=True) for a in self.agents}
        self.obs_dims = {a: int(lo.size) for a, (lo, _) in obs_b.items()}
        self.act_dims = {a: int(lo.size) for a, (lo, _) in act_b.items()}
        self.act_bounds = act_b
        self.device = torch.device(cfg.device)

        seq = np.random.SeedSequence(cfg.seed)
        torch_seed = int(seq.generate_state(1)[0])
        buffer_seq, *noise_seqs = seq.spawn(1 + len(self.agents))
        with torch_seeded(torch_seed):
            self.actors = {
                a: Actor(
                    self.obs_dims[a],
                    *act_b[a],
                    hidden_sizes=cfg.actor_hidden_sizes,
                    obs_low=obs_b[a][0] if cfg.normalize_obs else None,
                    obs_high=obs_b[a][1] if cfg.normalize_obs else None,
                ).to(self.device)
                for a in self.agents
            }
            self.critics = {a: self._make_critic(a).to(self.device) for a in self.agents}
        self.target_actors = {a: _frozen_copy(m) for a, m in self.actors.items()}
        self.target_critics = {a: _frozen_copy(m) for a, m in self.critics.items()}
        self.actor_optims = {
            a: torch.optim.Adam(m.parameters(), lr=cfg.actor_lr) for a, m in self.actors.items()
        }
        self.critic_optims = {
            a: torch.optim.Adam(m.parameters(), lr=cfg.critic_lr) for a, m in self.critics.items()
        }

        self.noise = {
            a: GaussianNoise(hi - lo, cfg.noise_std, cfg.noise_decay, cfg.noise_min, seed=s)
            for (a, (lo, hi)), s in zip(act_b.items(), noise_seqs, strict=True)
        }
        self.buffer = ReplayBuffer(
            self.obs_dims,
            self.act_dims,
            cfg.buffer_size,
            seed=buffer_seq,
            act_bounds=act_b,
            reward_scale=cfg.reward_scale,
        )
        self.n_updates = 0

    @classmethod
    def from_env(cls, env: Any, config: MADDPGConfig | None = None) -> MADDPG:
        """Build from a PettingZoo ``ParallelEnv`` (uses ``env.possible_agents`` order)."""
        agents = list(env.possible_agents)
        obs_spaces = {a: env.observation_space(a) for a in agents}
        act_spaces = {a: env.action_space(a) for a in agents}
        return cls(obs_spaces, act_spaces, config, agents=agents)

    # ------------------------------------------------------------------ critic input (hooks)
    def _critic_input_dim(self, agent: str) -> int:
        """Width of agent's critic input. Centralised: every observation and action."""
        return sum(self.obs_dims.values()) + sum(self.act_dims.values())

    def _critic_input(
        self, agent: str, obs_n: dict[str, torch.Tensor], act_n: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        """Critic input from normalised observations and actions (agent -> (B, dim))."""
        return torch.cat([obs_n[a] for a in self.agents] + [act_n[a] for a in self.agents], -1)

    def _critic_context_dim(self, agent: str) -> int:
        """Width of the observations at the head of agent's critic input."""
        return sum(self.obs_dims.values())

    def _make_critic(self, agent: str) -> nn.Module:
        """Agent's critic network, as :attr:`MADDPGConfig.critic_structure` asks."""
        cfg = self.config
        width = self._critic_input_dim(agent)
        if cfg.critic_structure == "joint":
            return Critic(width, cfg.critic_hidden_sizes)
        context, dim = self._critic_context_dim(agent), self.act_dims[agent]
        blocks, rest = divmod(width - context, dim)
        if rest or any(d != dim for d in self.act_dims.values()):
            raise ValueError(
                f"critic_structure='additive' needs every agent's action of one length, got "
                f"{self.act_dims}"
            )
        return AdditiveCritic(context, blocks, dim, cfg.critic_hidden_sizes)

    # ------------------------------------------------------------------ acting
    def _norm_obs(self, agent: str, x: torch.Tensor) -> torch.Tensor:
        return self.actors[agent].normalize_obs(x)

    def _norm_act(self, agent: str, x: torch.Tensor) -> torch.Tensor:
        return self.actors[agent].normalize_action(x)

    def _check_obs(self, obs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], bool]:
        shapes = {a: (d,) for a, d in self.obs_dims.items()}
        return validate_agent_arrays("obs", obs, shapes, require_all=False)

    @torch.no_grad()
    def _act(self, obs_b: dict[str, np.ndarray], add_noise: bool) -> dict[str, np.ndarray]:
        out = {}
        warmup = add_noise and len(self.buffer) < self.config.random_warmup
        for a, o in obs_b.items():
            lo, hi = self.act_bounds[a]
            if warmup:
                act = self.noise[a].uniform(lo, hi, len(o))
            else:
                act = self.actors[a](torch.as_tensor(o, device=self.device)).cpu().numpy()
                if add_noise:
                    act = np.clip(act + self.noise[a].sample(len(act)), lo, hi)
            out[a] = act.astype(np.float32)
        return out

    def take_action(
        self, obs: dict[str, np.ndarray], add_noise: bool = True
    ) -> dict[str, np.ndarray]:
        """Actions for the agents present in ``obs`` (single env: ``(obs_dim,)`` each)."""
        obs_b, batched = self._check_obs(obs)
        act = self._act(obs_b, add_noise)
        return act if batched else {a: v[0] for a, v in act.items()}

    def get_pure_actions(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Noise-free actions; output is batched iff the input is."""
        return self.take_action(obs, add_noise=False)

    def sample_actions_batch(
        self, obs: dict[str, np.ndarray], batch_size: int | None = None
    ) -> dict[str, np.ndarray]:
        """Noisy actions ``(B, act_dim)`` with independent noise per row (see the protocol)."""
        obs_b, batched = self._check_obs(obs)
        n = common_batch_size({"obs": obs_b})
        if batch_size is not None:
            if not batched:
                obs_b = {a: np.repeat(o, batch_size, axis=0) for a, o in obs_b.items()}
            elif n != batch_size:
                raise ValueError(f"obs: batch size {n} does not match batch_size={batch_size}")
        return self._act(obs_b, add_noise=True)

    def reset_noise(self) -> None:
        """Restore every agent's exploration std to ``config.noise_std``."""
        for noise in self.noise.values():
            noise.reset()

    # ------------------------------------------------------------------ learning
    def store_experience(
        self,
        obs: dict[str, np.ndarray],
        actions: dict[str, np.ndarray],
        rewards: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        dones: dict[str, np.ndarray],
    ) -> None:
        """Validate and store (batched or single) transitions; see ``ReplayBuffer.add``."""
        self.buffer.add(obs, actions, rewards, next_obs, dones)

    def _targets(self, tb: dict[str, dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """TD targets per agent (just the scaled reward when gamma == 0)."""
        gamma = self.config.gamma
        if gamma == 0:
            return dict(tb["rewards"])
        with torch.no_grad():
            next_obs = {a: self._norm_obs(a, o) for a, o in tb["next_obs"].items()}
            next_act = {
                a: self._norm_act(a, self.target_actors[a](o)) for a, o in tb["next_obs"].items()
            }
            targets = {}
            for a in self.agents:
                q_next = self.target_critics[a](self._critic_input(a, next_obs, next_act))
                targets[a] = tb["rewards"][a] + gamma * (1 - tb["dones"][a]) * q_next
            return targets

    @torch.no_grad()
    def critic_losses(self, batch: Batch) -> dict[str, float]:
        """MSE of every critic on ``batch`` against its current TD targets (no update)."""
        tb = batch.to_torch(self.device)
        obs_n = {a: self._norm_obs(a, o) for a, o in tb["obs"].items()}
        act_n = {a: self._norm_act(a, x) for a, x in tb["actions"].items()}
        targets = self._targets(tb)
        return {
            a: F.mse_loss(self.critics[a](self._critic_input(a, obs_n, act_n)), targets[a]).item()
            for a in self.agents
        }

    def _step(self, optim: torch.optim.Optimizer, loss: torch.Tensor, module: nn.Module) -> None:
        optim.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(module.parameters(), self.config.max_grad_norm)
        optim.step()

    def _update(self, batch: Batch) -> dict[str, float]:
        cfg = self.config
        tb = batch.to_torch(self.device)
        obs_n = {a: self._norm_obs(a, o) for a, o in tb["obs"].items()}
        act_n = {a: self._norm_act(a, x) for a, x in tb["actions"].items()}
        targets = self._targets(tb)
        metrics = {}
        for a in self.agents:
            q = self.critics[a](self._critic_input(a, obs_n, act_n))
            critic_loss = F.mse_loss(q, targets[a])
            self._step(self.critic_optims[a], critic_loss, self.critics[a])

            preact = self.actors[a].preact(tb["obs"][a])
            act_pi = dict(act_n)  # other agents keep their buffer actions
            act_pi[a] = self._norm_act(a, self.actors[a].squash(preact))
            q_pi = self.critics[a](self._critic_input(a, obs_n, act_pi))
            actor_loss = -q_pi.mean() + cfg.actor_reg * preact.pow(2).mean()
            self._step(self.actor_optims[a], actor_loss, self.actors[a])

            metrics[f"critic_loss/{a}"] = critic_loss.item()
            metrics[f"actor_loss/{a}"] = actor_loss.item()
            metrics[f"q_mean/{a}"] = q.mean().item()
        for a in self.agents:
            polyak_update(self.target_critics[a], self.critics[a], cfg.tau)
            polyak_update(self.target_actors[a], self.actors[a], cfg.tau)
        self.n_updates += 1
        return metrics

    def learn(self, batch: Batch | None = None) -> dict[str, float] | None:
        """Run ``updates_per_learn`` updates and decay the exploration noise once.

        Minibatches are sampled from the buffer; returns None (and does nothing) while it holds
        fewer than ``max(batch_size, learning_starts)`` rows. If ``batch`` (as returned by
        ``self.buffer.sample`` / ``self.buffer.get``) is given, every update uses it instead.
        Metrics are averaged over the updates; losses are measured before each step.
        """
        cfg = self.config
        if batch is None and len(self.buffer) < max(cfg.batch_size, cfg.learning_starts):
            return None
        sums: dict[str, float] = defaultdict(float)
        for _ in range(cfg.updates_per_learn):
            b = batch if batch is not None else self.buffer.sample(cfg.batch_size)
            for key, value in self._update(b).items():
                sums[key] += value
        metrics = {k: v / cfg.updates_per_learn for k, v in sums.items()}
        for a, noise in self.noise.items():
            metrics[f"noise_std/{a}"] = noise.decay()
        return metrics

    # ------------------------------------------------------------------ critics for NashConv
    def get_critics(self) -> dict[str, CriticFn]:
        """Per agent ``q(obs_all, actions_all) -> (B,)`` on raw (unnormalised) inputs.

        Uses the online critic; differentiable in every action it reads (in particular the
        agent's own). Only the agents the critic needs must be present in the dicts.
        """
        return {a: self._critic_fn(a) for a in self.agents}

    def _f32(self, x: Any) -> torch.Tensor:
        return torch.as_tensor(x).to(device=self.device, dtype=torch.float32)

    def _critic_fn(self, agent: str) -> CriticFn:
        critic = self.critics[agent]

        def q(
            obs_all: dict[str, torch.Tensor], actions_all: dict[str, torch.Tensor]
        ) -> torch.Tensor:
            obs_n = {a: self._norm_obs(a, self._f32(o)) for a, o in obs_all.items()}
            act_n = {a: self._norm_act(a, self._f32(x)) for a, x in actions_all.items()}
            return critic(self._critic_input(agent, obs_n, act_n))

        return q

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Everything :meth:`save` writes: tensors and plain Python data only."""
        state: dict[str, Any] = {
            name: {a: m.state_dict() for a, m in getattr(self, name).items()} for name in _STATEFUL
        }
        state.update(
            algorithm=self.name,
            agents=list(self.agents),
            config=asdict(self.config),
            noise_std={a: n.std for a, n in self.noise.items()},
            n_updates=self.n_updates,
        )
        return state

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save networks, optimisers, noise std and config (the replay buffer is not saved)."""
        torch.save(self.state_dict(), path)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Load a checkpoint of the same algorithm and agents (safe ``weights_only`` load)."""
        state = torch.load(path, map_location=self.device, weights_only=True)
        if state.get("algorithm") != self.name:
            raise ValueError(f"checkpoint is for {state.get('algorithm')!r}, not {self.name!r}")
        if list(state["agents"]) != self.agents:
            raise ValueError(f"checkpoint agents {state['agents']} differ from {self.agents}")
        for name in _STATEFUL:
            for a, module in getattr(self, name).items():
                module.load_state_dict(state[name][a])
        for a, std in state["noise_std"].items():
            self.noise[a].std = float(std)
        self.n_updates = int(state["n_updates"])

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike[str],
        observation_spaces: Mapping[str, Any],
        action_spaces: Mapping[str, Any],
        device: str | None = None,
    ) -> MADDPG:
        """Rebuild an instance with the checkpoint's config (spaces are not saved) and load it."""
        state = torch.load(path, map_location="cpu", weights_only=True)
        config = cls.config_cls(**state["config"])
        if device is not None:
            config.device = device
        algo = cls(observation_spaces, action_spaces, config, agents=state["agents"])
        algo.load(path)
        return algo


def _frozen_copy(module: nn.Module) -> nn.Module:
    target = copy.deepcopy(module)
    target.requires_grad_(False)
    return target
