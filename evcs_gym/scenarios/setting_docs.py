"""The scenario settings as a reference: every :class:`ScenarioSettings` field, its value
and its documentation (``evcs-gym settings``, the ``--set`` help).

``ScenarioSettings`` documents each field with an attribute docstring, the string literal
under its annotation. Python keeps no such strings at run time, so :func:`setting_docs`
reads them from the class's source.

Example:
    >>> "ue_max_iterations" in setting_names()
    True
    >>> setting_docs()["deltan"]
    'UXsim platoon size: vehicles per simulated platoon.'
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import textwrap
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from evcs_gym.errors import ScenarioError
from evcs_gym.network.settings import ScenarioSettings
from evcs_gym.scenarios.loader import scenario_folder, settings_file_mapping
from evcs_gym.utils import to_jsonable

__all__ = ["scenario_settings", "setting_docs", "setting_names", "settings_table"]


def setting_names() -> list[str]:
    """The settings a scenario file, ``load_scenario(**overrides)`` and ``--set`` accept."""
    return [f.name for f in dataclasses.fields(ScenarioSettings)]


@cache
def setting_docs() -> dict[str, str]:
    """``{setting: its attribute docstring}``, whitespace normalised; ``{}`` without source."""
    try:
        source = textwrap.dedent(inspect.getsource(ScenarioSettings))
    except (OSError, TypeError):  # no source shipped
        return {}
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def scenario_settings(
    name_or_folder: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> ScenarioSettings:
    """A scenario's settings file with ``overrides`` applied, validated, without loading
    its network; ``None``: the built-in defaults with ``overrides`` (not validated, since
    they name no station).

    Raises:
        ScenarioError: a missing scenario, an unknown key or an invalid value.

    Example:
        >>> scenario_settings("tiny", {"deltan": 1}).deltan
        1
        >>> scenario_settings(None, {"deltan": 2}).deltan
        2
    """
    overrides = dict(overrides or {})
    if name_or_folder is None:
        unknown = sorted(set(overrides) - set(setting_names()))
        if unknown:
            raise ScenarioError(f"unknown setting key(s) {unknown}")
        return ScenarioSettings(**overrides)
    folder = scenario_folder(name_or_folder)
    path = folder / f"{folder.name}_settings.json"
    raw = settings_file_mapping(path)
    return ScenarioSettings.from_mapping({**raw, **overrides}, source=path.name)


def settings_table(settings: ScenarioSettings, width: int = 88) -> str:
    """Every setting as ``name = value`` followed by its documentation, indented.

    Example:
        >>> print(settings_table(ScenarioSettings()).splitlines()[0])
        network_name = "unnamed"
    """
    docs = setting_docs()
    lines: list[str] = []
    for name in setting_names():
        value = json.dumps(to_jsonable(getattr(settings, name)))
        lines.append(f"{name} = {value}")
        if docs.get(name):
            lines += textwrap.wrap(
                docs[name], width=width, initial_indent="    ", subsequent_indent="    "
            )
    return "\n".join(lines)
