"""A game's two reference profiles: its Nash equilibrium and its collusive optimum.

A scenario folder may hold ``<name>_references.json`` beside its settings::

    {
      "settings_hash": "b19290784656",
      "nash": {"prices": {"A": [1.0, 1.1, 1.2, 1.0], "B": [...]}, "how": "evcs-gym solve ..."},
      "collusive": {"prices": {...}, "how": "evcs-gym solve --objective total ..."}
    }

``nash`` is the game's Nash reference N (``evcs-gym solve``), ``collusive`` the profile
that maximises the stations' total revenue M (``evcs-gym solve --objective total``);
``how`` says how each was found. They belong to one game: ``settings_hash`` must equal
the loaded scenario's :attr:`~evcs_gym.NetworkData.settings_hash`, so a scenario loaded
with other settings (``--set``) has no references. With them, a profile's collusion
index Δ = (R − R_N) / (R_M − R_N) places its total revenue R between competition (0) and
collusion (1) (:mod:`evcs_gym.equilibrium.collusion`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evcs_gym.errors import ScenarioError
from evcs_gym.network import NetworkData

__all__ = ["References", "load_references", "references_path"]


@dataclass(frozen=True)
class References:
    """The Nash reference N and the collusive reference M of one game."""

    nash: dict[str, np.ndarray]
    """Station -> (n_periods,) prices of the Nash reference."""
    collusive: dict[str, np.ndarray]
    """Station -> (n_periods,) prices of the collusive reference."""
    settings_hash: str
    """The game they belong to (:attr:`NetworkData.settings_hash`)."""
    how: dict[str, str] = field(default_factory=dict)
    """``"nash"`` / ``"collusive"`` -> how each was found (a command)."""


def references_path(nd: NetworkData) -> Path:
    """Where the references of ``nd``'s scenario folder live (whether or not it exists)."""
    folder = Path(nd.source)
    return folder / f"{folder.name}_references.json"


def load_references(nd: NetworkData) -> References | None:
    """The references of the game ``nd`` is, or ``None`` if its folder has none or they
    belong to other settings.

    Raises:
        ScenarioError: the file exists but is malformed (names the file and the problem).

    Example:
        >>> import evcs_gym
        >>> load_references(evcs_gym.load_scenario("tiny")) is None  # a 0.2.0 game
        True
    """
    path = references_path(nd)
    if not nd.source or not path.is_file():
        return None
    try:
        raw: dict[str, Any] = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path.name}: not valid JSON ({e})") from None
    if raw.get("settings_hash") != nd.settings_hash:
        return None
    profiles = {kind: _profile(path, nd, raw, kind) for kind in ("nash", "collusive")}
    how = {kind: str(raw[kind].get("how", "")) for kind in profiles}
    return References(profiles["nash"], profiles["collusive"], nd.settings_hash, how)


def _profile(path: Path, nd: NetworkData, raw: dict[str, Any], kind: str) -> dict[str, np.ndarray]:
    entry = raw.get(kind)
    prices = entry.get("prices") if isinstance(entry, dict) else None
    if not isinstance(prices, dict) or set(prices) != set(nd.agent_names):
        raise ScenarioError(
            f"{path.name}: `{kind}.prices` must map every station {list(nd.agent_names)} "
            f"to its prices, got {prices!r}"
        )
    out = {}
    for agent in nd.agent_names:
        values = np.asarray(prices[agent], dtype=float)
        lo, hi = nd.price_bounds[agent]
        if values.shape != (nd.n_periods,) or not (np.isfinite(values).all()):
            raise ScenarioError(
                f"{path.name}: `{kind}.prices[{agent!r}]` must be {nd.n_periods} finite "
                f"prices, got {prices[agent]!r}"
            )
        if (values < lo).any() or (values > hi).any():
            raise ScenarioError(
                f"{path.name}: `{kind}.prices[{agent!r}]` must lie in the bounds "
                f"[{lo}, {hi}], got {prices[agent]!r}"
            )
        out[agent] = values
    return out
