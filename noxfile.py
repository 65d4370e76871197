"""Isolated environments for the MARL-library integrations and the oldest supported stack.

RLlib, TorchRL, BenchMARL and AgileRL pin different gymnasium / pettingzoo / tensordict /
torchrl releases, so none of them can share the core environment. Each gets a session of
its own here, built by uv (fast) with the CPU build of PyTorch 2.13.0 from this machine's
disk (``/opt/wheels``; uv does not read pip's configuration, so it is passed explicitly).

    nox                      # every session below
    nox -s rllib             # one of them
    nox -s oldest            # the core suite at the oldest supported gymnasium/pettingzoo
    nox -s docs              # the docs site: mkdocs build --strict (not in the default run)

Each library session installs evcs-gym with the pinned set that library resolves with,
runs its integration tests (``tests/integrations/test_<name>.py``: the adapter, the
library's own checks, a few training iterations on ``tiny``) and the library's example
at a smoke-test budget. The RLlib, BenchMARL and AgileRL sessions also install the
``bench`` extra (MPE2, VMAS): ``benchmarks/bench_marl.py`` runs those libraries' cells of
its grid in these environments (``.nox/<session>/bin/python``).
"""

from __future__ import annotations

import glob
import os

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["oldest", "rllib", "torchrl", "benchmarl", "agilerl"]
nox.options.reuse_existing_virtualenvs = False

PYTHON = "3.11"
TORCH = "torch==2.13.0"
LOCAL_WHEELS = "/opt/wheels"
SMOKE_ENV = {"EVCS_GYM_SMOKE": "1", "OMP_NUM_THREADS": "1"}
XDIST = ("-n", "2", "--dist", "loadfile")
"""pytest-xdist as the README's test command runs it: two workers, a test file on one."""


def install_cpu_torch(session: nox.Session) -> None:
    """Install ``torch==2.13.0``, the CPU build, before anything can ask for torch.

    A plain ``torch`` requirement resolved from PyPI pulls a multi-GB CUDA build; with the
    CPU build installed first every ``torch>=...`` range is already met.
    """
    wheels = sorted(glob.glob(os.path.join(LOCAL_WHEELS, "torch-2.13.0*.whl")))
    if wheels:
        session.install(wheels[-1])
    else:  # a machine without the local wheel: PyTorch's CPU index
        session.install(TORCH, "--index-url", "https://download.pytorch.org/whl/cpu")


def install_with(session: nox.Session, *requirements: str, extras: str = "dev") -> None:
    """CPU torch, then evcs-gym (editable, with ``extras``) next to ``requirements``.

    torch is pinned as a constraint so that no resolution can replace the CPU build.
    """
    install_cpu_torch(session)
    constraints = session.create_tmp()
    path = os.path.join(constraints, "constraints.txt")
    with open(path, "w") as f:
        f.write(f"{TORCH}\n")
    session.install("-c", path, "-e", f".[{extras}]", *requirements)


def check_imports(session: nox.Session, modules: str, *distributions: str) -> None:
    """Import ``modules`` and print the installed ``distributions``' versions.

    Fails loudly if the library does not import: its tests would only skip.
    """
    session.run(
        "python",
        "-c",
        f"import {modules}; from importlib.metadata import version; "
        f"print(*(d + ' ' + version(d) for d in {distributions!r}))",
    )


def run_pytest(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> None:
    """``pytest -q *args *posargs`` with the smoke-budget environment (plus ``env``)."""
    session.run(
        "python",
        "-m",
        "pytest",
        *args,
        "-q",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={**SMOKE_ENV, **(env or {})},
    )


@nox.session(python=PYTHON)
def oldest(session: nox.Session) -> None:
    """The core suite at the oldest gymnasium and pettingzoo that pyproject.toml admits."""
    install_with(session, "gymnasium==1.2.2", "pettingzoo==1.26.0", extras="torch,sb3,opt,dev")
    check_imports(session, "gymnasium, pettingzoo", "gymnasium", "pettingzoo")
    run_pytest(session, "-m", "not slow and not siouxfalls and not ray", *XDIST)


@nox.session(python=PYTHON)
def rllib(session: nox.Session) -> None:
    """RLlib (new API stack): env creator and RLlib's env check, multi-agent PPO / SAC on
    ``tiny`` (two iterations each), learned prices, ``examples/rllib_pricing.py`` (smoke)."""
    # the set ray[rllib] 2.60.0 resolves with (it pins gymnasium; pettingzoo is ours)
    install_with(
        session,
        "ray[rllib]==2.60.0",
        "gymnasium==1.2.2",
        "pettingzoo==1.27.0",
        extras="dev,bench",
    )
    check_imports(session, "ray.rllib", "ray", "gymnasium", "pettingzoo")
    # Ray keeps its session files under TMPDIR, which nox points into the virtualenv, and
    # Ray's workers refuse a temp dir inside VIRTUAL_ENV: they die and ray.init() hangs
    run_pytest(session, "tests/integrations/test_rllib.py", env={"RAY_TMPDIR": "/tmp"})


@nox.session(python=PYTHON)
def agilerl(session: nox.Session) -> None:
    """AgileRL: vector envs of the repeated game, final-round infos, MADDPG / MATD3 on
    ``tiny`` (a few updates each), learned prices, ``examples/agilerl_pricing.py`` (smoke)."""
    # the set agilerl 2.58.0 resolves with; its import also needs peft (imported at module
    # level by agilerl.distributed but declared only in its "llm" extras, pinned there to
    # peft 0.21.0 and transformers 5.14.1)
    install_with(
        session,
        "agilerl==2.58.0",
        "pettingzoo==1.26.1",
        "tensordict==0.13.0",
        "gymnasium==1.4.0",
        "peft==0.21.0",
        "transformers==5.14.1",
        extras="dev,bench",
    )
    check_imports(session, "agilerl.algorithms", "agilerl", "pettingzoo", "tensordict")
    run_pytest(session, "tests/integrations/test_agilerl.py")


@nox.session(python=PYTHON)
def torchrl(session: nox.Session) -> None:
    """TorchRL: ``PettingZooWrapper`` specs (one group, state, numeric infos), per-copy seeds,
    ``ParallelEnv`` workers, DDPG updates, ``examples/torchrl_pricing.py`` (smoke)."""
    # the set torchrl 0.14.1 resolves with (it needs tensordict 0.14; gymnasium and
    # pettingzoo are ours, at the releases the resolver picks today)
    install_with(
        session, "torchrl==0.14.1", "tensordict==0.14.3", "gymnasium==1.4.0", "pettingzoo==1.27.0"
    )
    check_imports(session, "torchrl", "torchrl", "tensordict", "pettingzoo")
    run_pytest(session, "tests/integrations/test_torchrl.py")


@nox.session(python=PYTHON)
def benchmarl(session: nox.Session) -> None:
    """BenchMARL: the ``EVCSTask`` (presets, pickling, one group, per-copy seeds, specs), a
    two-iteration MADDPG and MAPPO ``Experiment``, ``examples/benchmarl_pricing.py`` (smoke)."""
    # the set benchmarl 1.5.2 resolves with: torchrl 0.11 (benchmarl pins <0.12) and its
    # tensordict 0.11 — not the torchrl session's 0.14
    install_with(
        session,
        "benchmarl==1.5.2",
        "torchrl==0.11.1",
        "tensordict==0.11.0",
        "hydra-core==1.3.8",
        "gymnasium==1.4.0",
        "pettingzoo==1.27.0",
        extras="dev,bench",
    )
    check_imports(session, "benchmarl", "benchmarl", "torchrl", "tensordict")
    run_pytest(session, "tests/integrations/test_benchmarl.py")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The docs site: ``mkdocs build --strict`` (every page, link and API docstring)."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", *session.posargs)
