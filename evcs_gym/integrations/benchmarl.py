"""BenchMARL adapter: the pricing game as a BenchMARL task (``EVCSTask`` enum + task class).

::

    from benchmarl.algorithms import MaddpgConfig
    from evcs_gym.integrations.benchmarl import EVCSTask

    task = EVCSTask.TINY.get_task()  # or get_task({"rounds": 10, ...}) to override
    algorithm = MaddpgConfig.get_from_yaml()
    algorithm.share_param_critic = False  # general-sum game: a critic per station

``examples/benchmarl_pricing.py`` runs a whole ``Experiment`` with sizes fit for a
budget of simulator evaluations.

What the task does for BenchMARL:

* **One group**, ``"stations"``: BenchMARL's MADDPG / MASAC / MAPPO centralise only
  within a group, so with one group per station (TorchRL's default for names like
  ``"10"``) MADDPG would silently be IDDPG.
* **Per-copy seeds**: BenchMARL hands every copy of a non-vectorised env the same seed,
  which would make the copies evaluate with identical seed streams. This task returns
  an env that is already batched (a TorchRL ``SerialEnv``, or with ``parallel: True`` a
  ``ParallelEnv``) whose copy ``i`` is seeded ``copy_seeds(seed, n)[i]`` (see
  :func:`~evcs_gym.integrations.torchrl.copy_seeds`), so BenchMARL treats it as
  vectorised and does not wrap it again.
* **Actions in [-1, 1]**: BenchMARL's MADDPG / IDDPG actors end in TorchRL's
  ``TanhDelta``, which starts near the price cap on other bounds (see
  :mod:`evcs_gym.integrations.torchrl`); the infos' ``prices`` are real prices and
  :func:`~evcs_gym.integrations.torchrl.learned_prices` maps a policy's actions back.
* **Numeric infos** (:class:`~evcs_gym.wrappers.NumericInfo`): revenue, flows, UE
  convergence... under ``("stations", "info")``, which BenchMARL logs as
  ``collection/stations/info/<key>``; the global ``state`` for centralised critics.
* **Picklable**: the task holds only its name and a plain config dict (BenchMARL pickles
  both into ``config.pkl``); env factories are ``functools.partial`` of module functions.

**General-sum caveats.** BenchMARL's algorithms are written for teams:

* ``share_param_critic: True`` (its default) gives the group one critic; with the
  global state as input it outputs the same value for every station. Set
  ``share_param_critic = False`` (and ``ExperimentConfig.share_policy_params = False``)
  so each station has its own networks; the example does.
* Its MADDPG's actor loss is TorchRL's ``DDPGLoss`` over the whole group: every
  station's action comes from its live actor, so each actor follows the gradient of
  *every* station's critic — the stations' joint value, a collusive objective
  (``tests/integrations/test_benchmarl.py`` checks this; MASAC is built the same way
  on ``SACLoss``). With one group per station it would be IDDPG instead; BenchMARL has
  no competitive centralised-critic variant. IDDPG, ISAC, IPPO and MAPPO (per-station
  advantages; the centralised critic is only a baseline) have no such coupling.
  ``examples/torchrl_pricing.py`` shows the competitive MADDPG actor loss in TorchRL.

Task config (:class:`TaskConfig`; no yaml file ships, the defaults are the presets of
:data:`PRESETS`): ``scenario``, ``rounds`` (``None``: the one-step game, one evaluation
per step and episode; an int: the repeated game), ``history`` (further
``HistoryWrapper`` arguments), ``env`` (further :func:`evcs_gym.parallel_env`
arguments) and ``parallel``.

Using the task needs BenchMARL (``pip install benchmarl==1.5.2``, which brings
``torchrl`` 0.11; without it :meth:`EVCSTask.get_task` raises ``DependencyNotInstalled``);
``import evcs_gym`` never does.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evcs_gym.errors import DependencyNotInstalled
from evcs_gym.integrations.torchrl import GROUP, make_batched_env

try:
    from benchmarl.environments.common import Task, TaskClass
    from benchmarl.utils import _read_yaml_config
    from torchrl.data import Composite

    _MISSING: ImportError | None = None
except ImportError as e:  # the module still imports (docs, doctests); the task raises on use
    _MISSING = e
    Task, TaskClass = enum.Enum, object

if TYPE_CHECKING:
    from tensordict import TensorDictBase
    from torchrl.envs import EnvBase


def _require_benchmarl() -> None:
    if _MISSING is not None:
        raise DependencyNotInstalled(
            "evcs_gym.integrations.benchmarl needs BenchMARL, which is not installed: "
            'pip install "benchmarl==1.5.2"'
        ) from _MISSING


__all__ = ["GROUP", "PRESETS", "EVCSTask", "EVCSTaskClass", "TaskConfig"]


@dataclass
class TaskConfig:
    """Configuration of an :class:`EVCSTask` (BenchMARL's ``TaskConfig`` convention)."""

    scenario: str = "tiny"
    """Bundled scenario name or scenario folder."""
    rounds: int | None = None
    """``None``: the one-step stage game; an int: the repeated game of that many rounds."""
    history: dict[str, Any] = field(default_factory=dict)
    """Further ``HistoryWrapper`` arguments (``k``, ``ema``...); only with ``rounds``."""
    env: dict[str, Any] = field(default_factory=dict)
    """Further ``evcs_gym.parallel_env`` arguments (``reward_scale``, ``eval_seed``...)."""
    parallel: bool = False
    """Step the copies in TorchRL ``ParallelEnv`` workers (else a ``SerialEnv``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, str) or not self.scenario:
            raise ValueError(
                f"`scenario` must be a scenario name or folder, actually: {self.scenario!r}"
            )
        if self.rounds is not None and (
            isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1
        ):
            raise ValueError(
                f"`rounds` must be None or a positive integer, actually: {self.rounds!r}"
            )
        if self.history and self.rounds is None:
            raise ValueError(
                f"`history` needs `rounds` (the repeated game), actually: {self.history!r}"
            )
        for name in ("history", "env"):
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"`{name}` must be a dict, actually: {getattr(self, name)!r}")
            setattr(self, name, dict(getattr(self, name)))
        self.parallel = bool(self.parallel)


PRESETS: dict[str, dict[str, Any]] = {
    "TINY": {"scenario": "tiny"},
    "TINY_REPEATED": {"scenario": "tiny", "rounds": 10},
    "SIOUXFALLS": {"scenario": "siouxfalls"},
    "SIOUXFALLS_REPEATED": {"scenario": "siouxfalls", "rounds": 10},
}
"""Default config of each :class:`EVCSTask` member (over :class:`TaskConfig`'s defaults)."""


class EVCSTaskClass(TaskClass):
    """The pricing game as a BenchMARL task: continuous prices, one group, global state."""

    def get_env_fun(
        self,
        num_envs: int,
        continuous_actions: bool,
        seed: int | None,
        device: Any,
    ) -> Callable[[], EnvBase]:
        if not continuous_actions:
            raise ValueError("the pricing game has continuous actions only")
        cfg = TaskConfig(**self.config)
        return functools.partial(
            make_batched_env,
            num_envs,
            cfg.scenario,
            seed=seed,
            parallel=cfg.parallel,
            start=True,  # BenchMARL closes its test env even when it never ran
            rounds=cfg.rounds,
            history=cfg.history or None,
            device=device,
            **cfg.env,
        )

    def supports_continuous_actions(self) -> bool:
        return True

    def supports_discrete_actions(self) -> bool:
        return False

    def has_state(self) -> bool:
        return True

    def has_render(self, env: EnvBase) -> bool:
        return False

    def max_steps(self, env: EnvBase) -> int:
        rounds = self.config.get("rounds")
        return 1 if rounds is None else int(rounds)

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return {GROUP: self.agent_names()}

    def agent_names(self) -> list[str]:
        """The stations, in the group's order (loads the scenario; cached per process)."""
        from evcs_gym.envs.parallel_env import resolve_scenario

        cfg = TaskConfig(**self.config)
        nd = resolve_scenario(cfg.scenario, cfg.env.get("scenario_overrides"))
        return list(nd.agent_names)

    def observation_spec(self, env: EnvBase) -> Composite:
        spec = env.full_observation_spec_unbatched.clone()
        del spec[GROUP, "info"]
        del spec["state"]
        return spec

    def info_spec(self, env: EnvBase) -> Composite | None:
        spec = env.full_observation_spec_unbatched.clone()
        del spec[GROUP, "observation"]
        del spec["state"]
        return spec

    def state_spec(self, env: EnvBase) -> Composite | None:
        return Composite({"state": env.full_observation_spec_unbatched["state"].clone()})

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec_unbatched

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return None

    @staticmethod
    def env_name() -> str:
        return "evcs"

    @staticmethod
    def log_info(batch: TensorDictBase) -> dict[str, float]:
        """Per-station mean revenue and the share of converged evaluations of a batch."""
        info = batch.get(("next", GROUP, "info"), None)
        if info is None or "revenue" not in info.keys():
            return {}
        revenue = info.get("revenue")
        revenue = revenue.reshape(-1, revenue.shape[-1]).float().mean(0)
        out = {f"collection/{GROUP}/revenue_{i}": float(v) for i, v in enumerate(revenue)}
        if "converged" in info.keys():
            out[f"collection/{GROUP}/converged_share"] = float(info.get("converged").float().mean())
        return out


class EVCSTask(Task):
    """The pricing game's BenchMARL tasks: one-step and repeated, on tiny and Sioux Falls.

    ``EVCSTask.TINY.get_task()`` uses the preset config; ``get_task({"rounds": 5})``
    overrides some keys of it (checked by :class:`TaskConfig`);
    ``get_from_yaml(path)`` reads the overrides from your own yaml file.
    """

    TINY = "tiny"  # BenchMARL's Task numbers its members; the values only keep them apart
    TINY_REPEATED = "tiny_repeated"
    SIOUXFALLS = "siouxfalls"
    SIOUXFALLS_REPEATED = "siouxfalls_repeated"

    @staticmethod
    def associated_class() -> type[EVCSTaskClass]:
        return EVCSTaskClass

    def default_config(self) -> dict[str, Any]:
        """This member's preset, completed with :class:`TaskConfig`'s defaults."""
        return dataclasses.asdict(TaskConfig(**PRESETS[self.name]))

    def get_task(self, config: Mapping[str, Any] | None = None) -> EVCSTaskClass:
        _require_benchmarl()
        merged = {**self.default_config(), **dict(config or {})}
        unknown = sorted(set(merged) - {f.name for f in dataclasses.fields(TaskConfig)})
        if unknown:
            raise ValueError(
                f"unknown task config key(s) {unknown}; known: "
                f"{[f.name for f in dataclasses.fields(TaskConfig)]}"
            )
        return self.associated_class()(
            name=self.name, config=dataclasses.asdict(TaskConfig(**merged))
        )

    def get_from_yaml(self, path: str | None = None) -> EVCSTaskClass:
        """The preset, or the preset overridden by the keys of the yaml file at ``path``."""
        _require_benchmarl()
        return self.get_task(None if path is None else _read_yaml_config(path))
