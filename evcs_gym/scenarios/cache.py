"""On-disk cache of scenario preparation: route sets and the warm start.

:func:`~evcs_gym.scenarios.loader.load_scenario` spends almost all its time on two steps that
depend on the scenario alone: the route sets (k shortest paths per OD pair and class)
and the warm start (a user equilibrium solved once at the reference price). On Anaheim
they take about 100 s. Both are pure functions of the scenario's files, its effective
settings and the code, so their arrays are stored once and read back by every later
load, in any process.

Where:
    ``$EVCS_GYM_CACHE_DIR`` if set, else the platform's user cache folder
    (``platformdirs.user_cache_dir("evcs-gym")``: ``~/.cache/evcs-gym`` on Linux).

Key:
    a SHA-256 over the bytes of the four scenario files, the effective settings
    (:attr:`~evcs_gym.network.settings.ScenarioSettings.digest`, which covers overrides), whether
    a warm start is computed, the package version, the UXsim version and
    :data:`FORMAT`. Change any of them and the key changes: a stale entry is never read,
    it is simply not found (``evcs-gym cache clear`` removes old ones).

Safety:
    * an entry is one ``.npz`` file written to a temporary name and renamed into place
      (atomic on POSIX and Windows), so a reader never sees half an entry;
    * it holds its own key and a SHA-256 of its arrays; an entry that fails to open,
      names another key or fails its checksum (truncated, corrupt) is logged on the
      ``evcs_gym.scenarios.cache`` logger, deleted and rebuilt: never a wrong result, never a crash;
    * processes that load the same scenario at once (a pool starting up) serialize on a
      lock file next to the entry: the first computes and writes, the others wait and
      read what it wrote (``fcntl`` locks; where those do not exist, each may compute, and
      the last rename wins with identical bits);
    * arrays are read with ``allow_pickle=False``: an entry cannot run code.

Example:
    >>> import tempfile, numpy as np
    >>> cache = PreparationCache(tempfile.mkdtemp())
    >>> arrays = cache.get_or_compute("ab" * 32, lambda: {"x": np.arange(3.0)})
    >>> cache.get("ab" * 32)["x"]
    array([0., 1., 2.])
    >>> [e.key for e in cache.entries()] == ["ab" * 32]
    True
    >>> cache.clear()
    1
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ENV_VAR",
    "FORMAT",
    "CacheEntry",
    "PreparationCache",
    "default_cache",
    "default_cache_dir",
]

log = logging.getLogger("evcs_gym.scenarios.cache")

ENV_VAR = "EVCS_GYM_CACHE_DIR"
"""Environment variable that overrides the cache folder."""

FORMAT = 1
"""Version of the entry layout; part of every key."""

_META = "__meta__"
_SUFFIX = ".npz"


def default_cache_dir() -> Path:
    """``$EVCS_GYM_CACHE_DIR``, else the platform's user cache folder for evcs-gym.

    Example:
        >>> import os
        >>> os.environ[ENV_VAR] = "/tmp/evcs-cache-doc"
        >>> str(default_cache_dir())
        '/tmp/evcs-cache-doc'
        >>> del os.environ[ENV_VAR]
    """
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("evcs-gym", appauthor=False))


def default_cache() -> PreparationCache:
    """The cache at :func:`default_cache_dir` (read at each call, so the environment
    variable can change between loads)."""
    return PreparationCache(default_cache_dir())


def _checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over every array's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One stored entry, as ``evcs-gym cache list`` shows it."""

    key: str
    path: Path
    bytes: int
    modified: float
    label: str
    """What the entry was computed for (scenario folder and flags), from its metadata."""


class PreparationCache:
    """A folder of prepared-scenario entries, one ``<key>.npz`` each.

    Args:
        folder: where entries live (created on first write).
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.last_write_seconds = 0.0
        """Seconds the last :meth:`put` took (0 if nothing was written)."""

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key must be 64 lowercase hex digits, got {key!r}")
        return self.folder / f"{key}{_SUFFIX}"

    # ------------------------------------------------------------------ reading
    def get(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or None if there is no valid entry.

        An entry that cannot be opened, names another key or fails its checksum is
        logged, deleted and reported as absent.
        """
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {name: npz[name] for name in npz.files}
            meta = json.loads(str(arrays.pop(_META)))
            if meta.get("key") != key:
                raise ValueError(f"entry names key {meta.get('key')!r}")
            if meta.get("checksum") != _checksum(arrays):
                raise ValueError("checksum mismatch")
        except Exception as e:  # noqa: BLE001 - any unreadable entry is rebuilt, never trusted
            log.warning(
                "evcs-gym cache: discarding unreadable entry %s (%s: %s)", path, type(e).__name__, e
            )
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return arrays

    # ------------------------------------------------------------------ writing
    def put(self, key: str, arrays: Mapping[str, np.ndarray], label: str = "") -> Path:
        """Store ``arrays`` under ``key`` atomically (temporary file, then rename)."""
        path = self.path(key)
        self.folder.mkdir(parents=True, exist_ok=True)
        arrays = {name: np.asarray(a) for name, a in arrays.items()}
        if _META in arrays:
            raise ValueError(f"array name {_META!r} is reserved")
        t0 = time.perf_counter()
        meta = {"key": key, "checksum": _checksum(arrays), "label": label, "format": FORMAT}
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                # Any: numpy's stub would match a `**` mapping of arrays with `allow_pickle`
                members: dict[str, Any] = {**arrays, _META: np.array(json.dumps(meta))}
                np.savez(f, **members)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the entry from other users
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.last_write_seconds = time.perf_counter() - t0
        log.info("evcs-gym cache: wrote %s (%s)", path, label)
        return path

    def get_or_compute(
        self,
        key: str,
        compute: Callable[[], Mapping[str, np.ndarray]],
        label: str = "",
    ) -> dict[str, np.ndarray]:
        """The entry of ``key``; if absent or invalid, ``compute()`` it and store it.

        Concurrent callers with the same key serialize on a lock file: one computes,
        the others read its entry.
        """
        found = self.get(key)
        if found is not None:
            return found
        with contextlib.ExitStack() as stack:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                stack.enter_context(_file_lock(self.folder / f".{key}.lock"))
            except OSError as e:  # an unusable folder costs speed, not the result
                log.warning("evcs-gym cache: cannot use %s (%s); not caching", self.folder, e)
                return {name: np.asarray(a) for name, a in compute().items()}
            found = self.get(key)  # written by another process while this one waited
            if found is not None:
                return found
            arrays = {name: np.asarray(a) for name, a in compute().items()}
            try:
                self.put(key, arrays, label)
            except OSError as e:  # a read-only or full disk costs speed, not the result
                log.warning("evcs-gym cache: could not write %s (%s)", self.path(key), e)
            return arrays

    # ------------------------------------------------------------------ housekeeping
    def entries(self) -> list[CacheEntry]:
        """Every entry in the folder, newest first (unreadable metadata: empty label)."""
        out: list[CacheEntry] = []
        if not self.folder.is_dir():
            return out
        for path in self.folder.glob(f"*{_SUFFIX}"):
            key = path.name[: -len(_SUFFIX)]
            label = ""
            with contextlib.suppress(Exception):
                with np.load(path, allow_pickle=False) as npz:
                    label = json.loads(str(npz[_META])).get("label", "")
            stat = path.stat()
            out.append(CacheEntry(key, path, stat.st_size, stat.st_mtime, label))
        return sorted(out, key=lambda e: e.modified, reverse=True)

    def clear(self) -> int:
        """Delete every entry (and stray temporary and lock files); return how many
        entries were deleted."""
        if not self.folder.is_dir():
            return 0
        n = 0
        for path in self.folder.iterdir():
            if path.suffix == _SUFFIX:
                n += 1
            if path.suffix in (_SUFFIX, ".tmp", ".lock"):
                with contextlib.suppress(OSError):
                    path.unlink()
        return n


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes (POSIX ``flock``; a no-op where
    ``fcntl`` does not exist)."""
    try:
        import fcntl
    except ImportError:  # Windows: atomic renames still keep entries whole
        yield
        return
    with open(path, "a+b") as f:
        t0 = time.perf_counter()
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        waited = time.perf_counter() - t0
        if waited > 1.0:
            log.info("evcs-gym cache: waited %.1f s for %s", waited, path.name)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
