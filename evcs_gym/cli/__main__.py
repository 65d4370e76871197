"""``python -m evcs_gym.cli``: the same as the ``evcs-gym`` command."""

from __future__ import annotations

from evcs_gym.cli.parser import main

__all__: list[str] = []

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
