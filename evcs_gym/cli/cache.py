"""``evcs-gym cache``: list or clear the on-disk cache of prepared scenarios.

``list`` prints every entry with its size, date and scenario; ``clear`` deletes them
all; ``dir`` prints the cache folder (``$EVCS_GYM_CACHE_DIR`` or the platform's user
cache).
"""

from __future__ import annotations

import argparse
import time

from evcs_gym.cli.common import add_command

__all__ = ["add_parser", "run"]


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``cache`` command and its ``action`` argument to ``subparsers``."""
    p = add_command(subparsers, "cache", "list or clear the on-disk cache of prepared scenarios")
    p.add_argument(
        "action",
        choices=("list", "clear", "dir"),
        help="list: every entry with its size and scenario; clear: delete them all; "
        "dir: print the cache folder ($EVCS_GYM_CACHE_DIR or the platform's user cache)",
    )
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Carry out the cache action; 0."""
    from evcs_gym.scenarios.cache import default_cache

    cache = default_cache()
    if args.action == "dir":
        print(cache.folder)
    elif args.action == "list":
        entries = cache.entries()
        total = sum(e.bytes for e in entries)
        print(f"{cache.folder}: {len(entries)} entries, {total / 1e6:.1f} MB")
        for e in entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.modified))
            print(f"  {e.key[:12]}  {e.bytes / 1e6:8.1f} MB  {when}  {e.label}")
    else:
        print(f"{cache.folder}: deleted {cache.clear()} entries")
    return 0
