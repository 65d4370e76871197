"""Shared building blocks of the DDPG-family baselines (MADDPG, IDDPG, MFDDPG).

Everything here is environment-agnostic: it only needs 1-D :class:`gymnasium.spaces.Box`
observation and action spaces keyed by agent name.

* :class:`ReplayBuffer` -- fixed-capacity numpy buffer of *joint* transitions (one slot holds
  every agent's data), validating every write so that it can never be poisoned.
* :class:`GaussianNoise` -- exploration noise with its std in units of the action range.
* :class:`Actor`, :class:`Critic`, :func:`mlp` -- small torch networks.
* :func:`polyak_update` -- soft target-network update.
* :func:`torch_seeded` -- seed torch inside a forked RNG so no global state leaks.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

__all__ = [
    "Actor",
    "AdditiveCritic",
    "Batch",
    "Critic",
    "GaussianNoise",
    "ReplayBuffer",
    "box_bounds",
    "mlp",
    "polyak_update",
    "torch_seeded",
    "validate_agent_arrays",
]


def box_bounds(
    space: object, agent: str, kind: str, *, finite: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Check that ``space`` is a 1-D Box and return its ``(low, high)`` as float64 arrays.

    ``finite=True`` additionally requires finite bounds (needed for action spaces, because
    actors squash their output into the box).
    """
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{kind} space of agent {agent!r} must be a gymnasium Box, got {space!r}")
    if len(space.shape) != 1:
        raise ValueError(f"{kind} space of agent {agent!r} must be 1-D, got shape {space.shape}")
    low = np.asarray(space.low, dtype=np.float64)
    high = np.asarray(space.high, dtype=np.float64)
    if finite and not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"{kind} space of agent {agent!r} must have finite bounds, got {space!r}")
    return low, high


def affine_from_bounds(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(offset, scale)`` so that ``(x - offset) / scale`` maps ``[low, high]`` onto ``[-1, 1]``.

    Dimensions with an infinite or zero-width range are left unchanged (offset 0, scale 1).
    """
    ok = np.isfinite(low) & np.isfinite(high) & (high > low)
    offset = np.zeros(low.shape)
    scale = np.ones(low.shape)
    offset[ok] = (high[ok] + low[ok]) / 2.0
    scale[ok] = (high[ok] - low[ok]) / 2.0
    return offset, scale


def validate_agent_arrays(
    field: str,
    data: object,
    shapes: Mapping[str, tuple[int, ...]],
    *,
    require_all: bool,
) -> tuple[dict[str, np.ndarray], bool]:
    """Validate a dict ``agent -> array`` and return float32 arrays with a leading batch axis.

    ``shapes[agent]`` is the per-sample shape (``(dim,)`` for vectors, ``()`` for scalars). An
    array of exactly that shape is *unbatched* and gets a leading axis of length 1. Raises
    :class:`ValueError` naming the field, the agent and the problem (unknown / missing agent,
    wrong shape, empty batch, non-numeric, NaN or inf). Returns ``(arrays, was_batched)``.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{field}: expected a dict agent -> array, got {type(data).__name__}")
    for agent in data:
        if agent not in shapes:
            raise ValueError(f"{field}: unknown agent {agent!r} (known agents: {list(shapes)})")
    if require_all:
        for agent in shapes:
            if agent not in data:
                raise ValueError(f"{field}: missing agent {agent!r}")
    out: dict[str, np.ndarray] = {}
    any_batched = False
    for agent, value in data.items():
        shape = shapes[agent]
        where = f"{field}[{agent!r}]"
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{where}: expected a numeric array, got dtype {arr.dtype}")
        if arr.shape == shape:
            arr = arr[None]
        elif arr.ndim == len(shape) + 1 and arr.shape[1:] == shape:
            any_batched = True
        else:
            dims = "".join(f", {d}" for d in shape)
            raise ValueError(f"{where}: expected shape {shape} or (B{dims}), got {arr.shape}")
        if arr.shape[0] == 0:
            raise ValueError(f"{where}: empty batch")
        with np.errstate(over="ignore", invalid="ignore"):
            arr32 = arr.astype(np.float32)
        if not np.all(np.isfinite(arr32)):
            raise ValueError(f"{where}: contains NaN or inf (or values too large for float32)")
        out[agent] = arr32
    return out, any_batched


def common_batch_size(field_arrays: Mapping[str, Mapping[str, np.ndarray]]) -> int:
    """Return the shared leading dimension of ``{field: {agent: array}}`` or raise ValueError."""
    size: int | None = None
    first = ""
    for field, arrays in field_arrays.items():
        for agent, arr in arrays.items():
            if size is None:
                size, first = arr.shape[0], f"{field}[{agent!r}]"
            elif arr.shape[0] != size:
                raise ValueError(
                    f"{field}[{agent!r}]: batch size {arr.shape[0]} does not match "
                    f"batch size {size} of {first}"
                )
    if size is None:
        raise ValueError("no data given (empty agent dicts)")
    return size


@dataclass(frozen=True)
class Batch:
    """A batch of joint transitions: each field maps agent -> float32 array of leading dim B."""

    obs: dict[str, np.ndarray]
    actions: dict[str, np.ndarray]
    rewards: dict[str, np.ndarray]
    next_obs: dict[str, np.ndarray]
    dones: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(next(iter(self.rewards.values())))

    def to_torch(self, device: torch.device | str = "cpu") -> dict[str, dict[str, torch.Tensor]]:
        """``{field: {agent: tensor}}`` on ``device``."""
        fields = ("obs", "actions", "rewards", "next_obs", "dones")
        return {
            f: {a: torch.as_tensor(v, device=device) for a, v in getattr(self, f).items()}
            for f in fields
        }


class ReplayBuffer:
    """Fixed-capacity FIFO buffer of joint multi-agent transitions, stored as numpy arrays.

    Every :meth:`add` is validated completely *before* anything is written, so a bad call
    (NaN, wrong shape, unknown or missing agent, action outside its bounds, non-binary done)
    raises :class:`ValueError` and leaves the buffer untouched. Rewards are divided by
    ``reward_scale`` when stored. Sampling is uniform with replacement from a seeded
    :class:`numpy.random.Generator`.

    >>> buf = ReplayBuffer({"a": 2, "b": 1}, {"a": 1, "b": 1}, capacity=4, seed=0)
    >>> n = buf.add(
    ...     obs={"a": np.zeros((3, 2)), "b": np.zeros((3, 1))},
    ...     actions={"a": np.zeros((3, 1)), "b": np.ones((3, 1))},
    ...     rewards={"a": np.ones(3), "b": np.zeros(3)},
    ...     next_obs={"a": np.zeros((3, 2)), "b": np.zeros((3, 1))},
    ...     dones={"a": np.zeros(3, bool), "b": np.zeros(3, bool)},
    ... )
    >>> n, len(buf), buf.sample(5).obs["a"].shape
    (3, 3, (5, 2))
    >>> buf.add({"a": [0.0, float("nan")], "b": [0.0]}, {"a": [0], "b": [0]}, {"a": 0, "b": 0},
    ...         {"a": [0, 0], "b": [0]}, {"a": 0, "b": 0})
    Traceback (most recent call last):
    ...
    ValueError: obs['a']: contains NaN or inf (or values too large for float32)
    """

    def __init__(
        self,
        obs_dims: Mapping[str, int],
        act_dims: Mapping[str, int],
        capacity: int,
        seed: int | np.random.SeedSequence | np.random.Generator | None = None,
        *,
        act_bounds: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
        reward_scale: float = 1.0,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if not (reward_scale > 0 and math.isfinite(reward_scale)):
            raise ValueError(f"reward_scale must be a positive finite number, got {reward_scale}")
        self.agents = list(obs_dims)
        self.capacity = int(capacity)
        self.reward_scale = float(reward_scale)
        self.rng = np.random.default_rng(seed)
        self._vec = {"obs": dict(obs_dims), "actions": dict(act_dims), "next_obs": dict(obs_dims)}
        self._bounds = dict(act_bounds) if act_bounds is not None else {}
        self._data: dict[str, dict[str, np.ndarray]] = {
            field: {a: np.zeros((capacity, d), np.float32) for a, d in dims.items()}
            for field, dims in self._vec.items()
        }
        for field in ("rewards", "dones"):
            self._data[field] = {a: np.zeros(capacity, np.float32) for a in self.agents}
        self._pos = 0
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(
        self,
        obs: Mapping[str, np.ndarray],
        actions: Mapping[str, np.ndarray],
        rewards: Mapping[str, np.ndarray | float],
        next_obs: Mapping[str, np.ndarray],
        dones: Mapping[str, np.ndarray | bool],
    ) -> int:
        """Store a (possibly batched) joint transition; return the number of rows given.

        Each field maps every agent to an array with a leading batch dim B (or without it for a
        single transition; rewards and dones are then scalars). If B exceeds the capacity only
        the newest ``capacity`` rows are kept.
        """
        given = {"obs": obs, "actions": actions, "next_obs": next_obs}
        checked: dict[str, dict[str, np.ndarray]] = {}
        for field, value in given.items():
            shapes: dict[str, tuple[int, ...]] = {a: (d,) for a, d in self._vec[field].items()}
            checked[field], _ = validate_agent_arrays(field, value, shapes, require_all=True)
        for field, scalars in (("rewards", rewards), ("dones", dones)):
            shapes = {a: () for a in self.agents}
            checked[field], _ = validate_agent_arrays(field, scalars, shapes, require_all=True)
        n = common_batch_size(checked)
        for agent, (low, high) in self._bounds.items():
            act = checked["actions"][agent]
            tol = 1e-5 * np.maximum(high - low, 1.0)
            if np.any(act < low - tol) or np.any(act > high + tol):
                raise ValueError(f"actions[{agent!r}]: values outside the action bounds")
            checked["actions"][agent] = np.clip(act, low, high).astype(np.float32)
        for agent, done in checked["dones"].items():
            if not np.all((done == 0) | (done == 1)):
                raise ValueError(f"dones[{agent!r}]: values must be 0/1 or bool")
        for agent in self.agents:
            checked["rewards"][agent] = checked["rewards"][agent] / np.float32(self.reward_scale)
        # Everything is valid: now write (keeping only the newest `capacity` rows).
        start = max(0, n - self.capacity)
        idx = (self._pos + np.arange(n - start)) % self.capacity
        for field, arrays in checked.items():
            for agent, arr in arrays.items():
                self._data[field][agent][idx] = arr[start:]
        self._pos = int((self._pos + n - start) % self.capacity)
        self._size = min(self._size + n - start, self.capacity)
        return n

    def get(self, indices: np.ndarray | Sequence[int]) -> Batch:
        """Return the transitions at ``indices`` (0 <= index < len(self)) as copies."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self._size):
            raise IndexError(f"indices must be in [0, {self._size}), got {idx.min()}..{idx.max()}")
        return Batch(**{f: {a: arr[idx] for a, arr in d.items()} for f, d in self._data.items()})

    def sample(self, batch_size: int) -> Batch:
        """Sample ``batch_size`` transitions uniformly with replacement."""
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        return self.get(self.rng.integers(0, self._size, size=batch_size))


class GaussianNoise:
    """Gaussian exploration noise whose std is expressed in units of the action range.

    A draw is ``std * (high - low) * N(0, 1)`` per dimension. :meth:`decay` multiplies the std by
    ``decay_rate`` (never below ``std_min``); :meth:`reset` restores the initial std.

    >>> noise = GaussianNoise(np.array([2.0, 4.0]), std=0.5, decay_rate=0.5, std_min=0.1, seed=0)
    >>> noise.sample(3).shape
    (3, 2)
    >>> noise.decay(), noise.decay(), noise.decay()
    (0.25, 0.125, 0.1)
    >>> noise.reset(); noise.std
    0.5
    """

    def __init__(
        self,
        action_range: np.ndarray,
        std: float,
        decay_rate: float = 1.0,
        std_min: float = 0.0,
        seed: int | np.random.SeedSequence | np.random.Generator | None = None,
    ) -> None:
        if not 0.0 <= std_min <= std:
            raise ValueError(f"need 0 <= std_min <= std, got std_min={std_min}, std={std}")
        if not 0.0 < decay_rate <= 1.0:
            raise ValueError(f"decay_rate must be in (0, 1], got {decay_rate}")
        self.action_range = np.asarray(action_range, dtype=np.float64)
        self.std_init = float(std)
        self.std = float(std)
        self.decay_rate = float(decay_rate)
        self.std_min = float(std_min)
        self.rng = np.random.default_rng(seed)

    def sample(self, batch_size: int) -> np.ndarray:
        """Independent noise for ``batch_size`` rows, shape ``(batch_size, act_dim)``."""
        z = self.rng.standard_normal((batch_size, self.action_range.size))
        return self.std * self.action_range * z

    def uniform(self, low: np.ndarray, high: np.ndarray, batch_size: int) -> np.ndarray:
        """``batch_size`` rows drawn uniformly from the box ``[low, high]`` (same stream)."""
        return self.rng.uniform(low, high, (batch_size, np.size(low)))

    def decay(self) -> float:
        """Multiply the std by ``decay_rate`` (floored at ``std_min``); return the new std."""
        self.std = max(self.std * self.decay_rate, self.std_min)
        return self.std

    def reset(self) -> None:
        """Restore the initial std (the random stream is not rewound)."""
        self.std = self.std_init


def polyak_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Soft update ``target <- (1 - tau) * target + tau * source`` (buffers are copied)."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.lerp_(s, tau)
        for buf, src in zip(target.buffers(), source.buffers(), strict=True):
            buf.copy_(src)


def mlp(
    in_dim: int,
    out_dim: int,
    hidden_sizes: Sequence[int] = (64, 64),
    activation: type[nn.Module] = nn.ReLU,
) -> nn.Sequential:
    """A plain MLP ``in -> hidden... -> out`` with ``activation`` between layers (linear output).

    >>> mlp(3, 2, (8,))
    Sequential(
      (0): Linear(in_features=3, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=2, bias=True)
    )
    """
    layers: list[nn.Module] = []
    sizes = [in_dim, *hidden_sizes]
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), activation()]
    layers.append(nn.Linear(sizes[-1], out_dim))
    return nn.Sequential(*layers)


class Actor(nn.Module):
    """Deterministic policy: MLP whose tanh output is mapped affinely onto ``[low, high]``.

    Observation dimensions with finite ``obs_low``/``obs_high`` are rescaled to ``[-1, 1]``
    first (others are passed through). The output is clamped to the bounds as well, so
    float rounding can never leave the box.

    >>> with torch_seeded(0):
    ...     actor = Actor(obs_dim=4, low=np.zeros(2), high=np.array([1.0, 10.0]))
    >>> a = actor(torch.full((5, 4), 1e6))
    >>> bool(((a >= 0) & (a <= torch.tensor([1.0, 10.0]))).all())
    True
    """

    # buffers (register_buffer), declared for the type checker
    obs_offset: torch.Tensor
    obs_scale: torch.Tensor
    act_mid: torch.Tensor
    act_half: torch.Tensor
    act_low: torch.Tensor
    act_high: torch.Tensor
    act_scale: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        low: np.ndarray,
        high: np.ndarray,
        hidden_sizes: Sequence[int] = (64, 64),
        obs_low: np.ndarray | None = None,
        obs_high: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
        self.net = mlp(obs_dim, low.size, hidden_sizes)
        if obs_low is None or obs_high is None:
            obs_off, obs_scale = np.zeros(obs_dim), np.ones(obs_dim)
        else:
            obs_off, obs_scale = affine_from_bounds(np.asarray(obs_low), np.asarray(obs_high))
        f32 = torch.float32
        self.register_buffer("obs_offset", torch.as_tensor(obs_off, dtype=f32))
        self.register_buffer("obs_scale", torch.as_tensor(obs_scale, dtype=f32))
        self.register_buffer("act_mid", torch.as_tensor((high + low) / 2.0, dtype=f32))
        self.register_buffer("act_half", torch.as_tensor((high - low) / 2.0, dtype=f32))
        self.register_buffer("act_low", torch.as_tensor(low, dtype=f32))
        self.register_buffer("act_high", torch.as_tensor(high, dtype=f32))
        act_scale = affine_from_bounds(low, high)[1]
        self.register_buffer("act_scale", torch.as_tensor(act_scale, dtype=f32))

    def normalize_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """Observation as the network sees it (finite-bounded dims mapped to [-1, 1])."""
        return (obs - self.obs_offset) / self.obs_scale

    def normalize_action(self, act: torch.Tensor) -> torch.Tensor:
        """Map actions in ``[low, high]`` affinely onto ``[-1, 1]`` (differentiable)."""
        return (act - self.act_mid) / self.act_scale

    def preact(self, obs: torch.Tensor) -> torch.Tensor:
        """Pre-tanh output (used for the small saturation penalty of the actor loss)."""
        return self.net(self.normalize_obs(obs))

    def squash(self, z: torch.Tensor) -> torch.Tensor:
        """Map pre-activations to actions inside the box."""
        act = self.act_mid + self.act_half * torch.tanh(z)
        return torch.clamp(act, self.act_low, self.act_high)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.squash(self.preact(obs))


class Critic(nn.Module):
    """Q-network: MLP from a flat critic input ``(B, in_dim)`` to values ``(B,)``."""

    def __init__(self, in_dim: int, hidden_sizes: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        self.net = mlp(in_dim, 1, hidden_sizes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class AdditiveCritic(nn.Module):
    """Q-network that is a sum over action dimensions: ``Q(x) = sum_d q(c, a_d, e_d)``.

    The flat critic input is ``[c, a_1, .., a_k]``: a context ``c`` of ``context_dim``
    values (observations) and ``k`` action blocks of ``action_dim`` values each (the agents'
    actions, or an agent's action and the others' mean). Term ``d`` sees the context, the
    ``d``-th value of every block and a one-hot of ``d``; one MLP ``q`` serves every ``d``.
    In the pricing game a dimension is a period: each term sees the stations' prices of
    one period, so every row of the buffer is ``action_dim`` samples of the same small
    function, and a station's price in one period moves only its own term (the game's
    periods interact only through the drivers' schedules, which the sum leaves out).

    >>> critic = AdditiveCritic(context_dim=3, blocks=2, action_dim=4, hidden_sizes=(8,))
    >>> critic(torch.zeros(5, 3 + 2 * 4)).shape
    torch.Size([5])
    """

    onehot: torch.Tensor

    def __init__(
        self,
        context_dim: int,
        blocks: int,
        action_dim: int,
        hidden_sizes: Sequence[int] = (64, 64),
    ) -> None:
        super().__init__()
        self.context_dim, self.blocks, self.action_dim = context_dim, blocks, action_dim
        self.net = mlp(context_dim + blocks + action_dim, 1, hidden_sizes)
        self.register_buffer("onehot", torch.eye(action_dim), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        context = x[:, : self.context_dim].unsqueeze(1).expand(-1, self.action_dim, -1)
        actions = x[:, self.context_dim :].reshape(batch, self.blocks, self.action_dim)
        onehot = self.onehot.unsqueeze(0).expand(batch, -1, -1)
        terms = self.net(torch.cat([context, actions.transpose(1, 2), onehot], dim=-1))
        return terms.squeeze(-1).sum(dim=-1)


@contextlib.contextmanager
def torch_seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's CPU RNG seeded to ``seed``; the global RNG state is restored.

    >>> before = torch.random.get_rng_state()
    >>> with torch_seeded(1):
    ...     x = torch.rand(2)
    >>> with torch_seeded(1):
    ...     y = torch.rand(2)
    >>> bool(torch.equal(x, y)), bool(torch.equal(before, torch.random.get_rng_state()))
    (True, True)
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
