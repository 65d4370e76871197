"""The stage game on a grid, evaluated in the simulator once and kept in the disk cache.

:func:`simulator_table` evaluates every joint level profile of a
:class:`~evcs_gym.tabular.PriceGrid` (``m^n`` of them) at one evaluation seed, on an
:class:`evcs_gym.ParallelEvaluatorPool` (or a serial evaluator), plus the game's Nash and
collusive references on the same seed, and returns a
:class:`~evcs_gym.tabular.PayoffTable`. Each row is exactly what
``EVCSRewardEvaluator(nd).evaluate(grid.profile(i), seed)`` returns, so replaying the
table gives the simulator's rewards to the bit (``tests/tabular/test_tabulate.py``).

**The cache.** Tables live in the package's disk cache
(:mod:`evcs_gym.scenarios.cache`: ``$EVCS_GYM_CACHE_DIR`` or the platform's user cache
folder, ``evcs-gym cache list`` shows them), under a key of the game's settings hash, a
digest of its loaded data (network, platoons, route sets and warm start, which the
settings hash does not cover), the grid, the references, the seed, the evcs-gym and UXsim
versions and :data:`TABLE_FORMAT` (:func:`table_key`). A game re-solved for new
references gets a new grid, so a new key: a stale table is never read, it is simply not
found and built again. A table is written every ``checkpoint`` evaluations while it
fills, so an interrupted fill resumes where it stopped.

**Shipping a table.** :func:`save_table` writes a table to a ``.npz`` file with its key;
``simulator_table(..., shipped=path)`` reads it instead of evaluating when the key is
the one the game, grid, references and seed give now, and ignores it (and evaluates)
when it is stale.

**Lazy tables.** ``fill=False`` evaluates nothing up front: rows are evaluated when
first read (:meth:`PayoffTable.lookup`), in batches on the pool, and stored in the cache
as they come. Use it where ``m^n`` is too large to fill; what needs the whole table
(pure equilibria, the joint optimum, Q-learning's initial values) still fills it.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.tabular import calvano_grid
    >>> nd = evcs_gym.load_scenario("tiny_market")
    >>> table = simulator_table(nd, calvano_grid(nd, m=3), fill=False, cache=False)
    >>> int(table.filled.sum()), table.nash_conv([1, 1]) >= 0, int(table.filled.sum())
    (0, True, 5)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from evcs_gym._version import __version__
from evcs_gym.network import NetworkData
from evcs_gym.parallel.pool import ParallelEvaluatorPool
from evcs_gym.scenarios.cache import PreparationCache, default_cache
from evcs_gym.scenarios.references import References, load_references
from evcs_gym.seeds import check_seed
from evcs_gym.tabular.grid import PriceGrid
from evcs_gym.tabular.table import PayoffTable
from evcs_gym.ue.evaluator import EvalResult, EVCSRewardEvaluator

__all__ = ["TABLE_FORMAT", "game_digest", "save_table", "simulator_table", "table_key"]

TABLE_FORMAT = 1
"""Version of the table entry's layout; part of every key."""

Evaluator = ParallelEvaluatorPool | EVCSRewardEvaluator
Progress = Callable[[int, int], None]
"""``progress(done, total)``, called as rows are evaluated."""

_GAME_ARRAYS = (
    "demand_rows", "veh_orig", "veh_dest", "veh_departure", "veh_charging",
    "route_links", "route_offsets", "group_routes", "initial_route_choice",
)  # fmt: skip


def game_digest(nd: NetworkData) -> str:
    """SHA-256 of what a game's payoffs depend on beyond its settings: the network's
    links, the platoons, the route sets and the warm start."""
    h = hashlib.sha256(f"{nd.name}|{nd.settings_hash}|{','.join(nd.agent_names)}".encode())
    for name in _GAME_ARRAYS:
        h.update(np.ascontiguousarray(getattr(nd, name)).tobytes())
    for name in ("length", "free_flow_speed"):
        h.update(np.ascontiguousarray(getattr(nd.links, name)).tobytes())
    return h.hexdigest()


def table_key(nd: NetworkData, grid: PriceGrid, seed: int, refs: References | None) -> str:
    """The cache key of ``nd``'s table on ``grid`` at ``seed`` (module docstring)."""
    from importlib.metadata import version

    ref_bytes = b""
    if refs is not None:
        for kind in (refs.nash, refs.collusive):
            ref_bytes += b"".join(np.asarray(kind[a]).tobytes() for a in nd.agent_names)
    stamp = {
        "kind": "payoff_table",
        "settings": nd.settings_hash,
        "game": game_digest(nd),
        "grid": grid.digest(),
        "references": hashlib.sha256(ref_bytes).hexdigest(),
        "seed": int(seed),
        "evcs_gym": __version__,
        "uxsim": version("uxsim"),
        "format": TABLE_FORMAT,
    }
    return hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()


def simulator_table(
    nd: NetworkData,
    grid: PriceGrid,
    *,
    seed: int | None = None,
    evaluator: Evaluator | None = None,
    n_workers: int = 2,
    fill: bool = True,
    cache: bool | PreparationCache = True,
    checkpoint: int = 50,
    progress: Progress | None = None,
    shipped: str | Path | None = None,
) -> PayoffTable:
    """The table of ``nd``'s stage game on ``grid`` at evaluation seed ``seed``.

    Args:
        nd: the game.
        grid: its price grid (:func:`~evcs_gym.tabular.calvano_grid` or your own).
        seed: the evaluation seed of every row; ``None``: the scenario's default seed.
        evaluator: a pool or an evaluator of ``nd`` to evaluate on (left open); ``None``:
            a :class:`~evcs_gym.ParallelEvaluatorPool` of ``n_workers`` made for each
            batch of at least ``2 * n_workers`` rows (shut down after it), a serial
            evaluator for smaller ones.
        n_workers: workers of the pools made when ``evaluator`` is ``None``.
        fill: evaluate every row now (``False``: lazily, as rows are read).
        cache: read and write the disk cache (``True``: the default one; or a
            :class:`~evcs_gym.scenarios.cache.PreparationCache`; ``False``: neither).
        checkpoint: write the cache entry every this many new rows.
        progress: ``progress(done, total)`` as rows complete.
        shipped: a file of :func:`save_table`, read where the cache has no entry and its
            key is this table's (a stale file is ignored).

    Raises:
        ValueError: a grid of other stations or periods, or prices outside the bounds.
    """
    grid.check_bounds(nd)
    seed = check_seed(nd.settings.default_seed if seed is None else seed)
    refs = load_references(nd)
    store = (default_cache() if cache is True else cache) or None
    key = table_key(nd, grid, seed, refs)
    table = _empty_table(nd, grid, seed, key)
    found = None if store is None else store.get(key)
    if found is None and shipped is not None:
        found = _shipped(Path(shipped), key)
        if found is not None and store is not None:
            store.put(key, found, label=f"payoff table {nd.name} (shipped {Path(shipped).name})")
    _read_entry(table, found)
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"`n_workers` must be a positive integer, actually: {n_workers!r}")
    filler = _SimulatorFiller(nd, seed, evaluator, n_workers, store, key, checkpoint, progress)
    table.filler = filler
    if refs is not None and table.reference_rewards is None:
        filler.evaluate_references(table, refs)
    if fill:
        table.fill()
    return table


class _SimulatorFiller:
    """Evaluates a table's missing rows in the simulator and keeps the cache entry up to date."""

    def __init__(
        self,
        nd: NetworkData,
        seed: int,
        evaluator: Evaluator | None,
        n_workers: int,
        store: PreparationCache | None,
        key: str,
        checkpoint: int,
        progress: Progress | None,
    ) -> None:
        self.nd, self.seed, self.evaluator, self.store, self.key = nd, seed, evaluator, store, key
        self.n_workers = n_workers
        self.checkpoint = max(int(checkpoint), 1)
        self.progress = progress
        self._serial: EVCSRewardEvaluator | None = None

    def __call__(self, table: PayoffTable, indices: np.ndarray) -> None:
        t0 = time.perf_counter()
        profiles = [table.grid.profile(int(i)) for i in indices]
        done = 0
        for j, result in self._results(profiles):
            _store(table, int(indices[j]), result)
            done += 1
            if self.progress is not None:
                self.progress(done, len(indices))
            if done % self.checkpoint == 0:
                self.save(table)
        table.meta["fill_seconds"] = table.meta.get("fill_seconds", 0.0) + (
            time.perf_counter() - t0
        )
        self.save(table)

    def evaluate_references(self, table: PayoffTable, refs: References) -> None:
        """Rewards at N and M on the table's seed (two evaluations)."""
        results = [r for _, r in sorted(self._results([refs.nash, refs.collusive]))]
        agents = self.nd.agent_names
        table.reference_rewards = {
            kind: np.array([res.rewards[a] for a in agents])
            for kind, res in zip(("nash", "collusive"), results)
        }
        self.save(table)

    def _results(self, profiles: list[Any]) -> Any:
        if isinstance(self.evaluator, ParallelEvaluatorPool):
            return self.evaluator.map_unordered(profiles, seeds=self.seed)
        if self.evaluator is None and len(profiles) >= 2 * self.n_workers:
            return _pool_results(self.nd, profiles, self.seed, self.n_workers)
        evaluator = self.evaluator or self._serial_evaluator()
        return ((j, evaluator.evaluate(p, seed=self.seed)) for j, p in enumerate(profiles))

    def _serial_evaluator(self) -> EVCSRewardEvaluator:
        if self._serial is None:
            self._serial = EVCSRewardEvaluator(self.nd)
        return self._serial

    def save(self, table: PayoffTable) -> None:
        if self.store is None:
            return
        label = f"payoff table {self.nd.name} {table.grid.m}^{table.n_agents} seed {self.seed}"
        self.store.put(self.key, _entry(table), label=label)


def save_table(table: PayoffTable, path: str | Path) -> Path:
    """Write ``table`` (rows, flows, references and meta, with its cache key) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Any: numpy's stub would match a `**` mapping of arrays with `allow_pickle`
    members: dict[str, Any] = _entry(table)
    np.savez_compressed(path, **members)
    return path


def _shipped(path: Path, key: str) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    return arrays if json.loads(str(arrays["meta"])).get("key") == key else None


def _pool_results(nd: NetworkData, profiles: list[Any], seed: int, n_workers: int) -> Any:
    """A pool made for one fill, shut down once its results are read."""
    with ParallelEvaluatorPool(nd, n_workers=n_workers) as pool:
        yield from pool.map_unordered(profiles, seeds=seed)


def _store(table: PayoffTable, index: int, result: EvalResult) -> None:
    agents = table.agents
    table.store(
        index,
        [result.rewards[a] for a in agents],
        np.stack([np.asarray(result.flows[a], dtype=np.float64) for a in agents]),
    )
    table.meta["evaluations"] = table.meta.get("evaluations", 0) + 1
    table.meta["ue_iterations"] = table.meta.get("ue_iterations", 0) + int(result.ue_iterations)


def _empty_table(nd: NetworkData, grid: PriceGrid, seed: int, key: str) -> PayoffTable:
    rows, n = grid.n_profiles, grid.n_agents
    meta = {"scenario": nd.name, "settings_hash": nd.settings_hash, "seed": seed, "key": key}
    return PayoffTable(
        grid,
        np.full((rows, n), np.nan),
        flows=np.full((rows, n, grid.n_periods), np.nan),
        reward_scale=float(nd.settings.reward_scale),
        meta=meta,
    )


def _entry(table: PayoffTable) -> dict[str, np.ndarray]:
    arrays = {"rewards": table.rewards, "meta": np.array(json.dumps(table.meta))}
    if table.flows is not None:
        arrays["flows"] = table.flows
    if table.reference_rewards is not None:
        arrays["nash"] = table.reference_rewards["nash"]
        arrays["collusive"] = table.reference_rewards["collusive"]
    return arrays


def _read_entry(table: PayoffTable, arrays: dict[str, np.ndarray] | None) -> None:
    if arrays is None:
        return
    table.rewards[...] = arrays["rewards"]
    if table.flows is not None and "flows" in arrays:
        table.flows[...] = arrays["flows"]
    if "nash" in arrays:
        table.reference_rewards = {"nash": arrays["nash"], "collusive": arrays["collusive"]}
    table.meta.update(json.loads(str(arrays["meta"])))
    table.meta["from_cache"] = True
