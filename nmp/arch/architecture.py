"""An architecture instance: a design (ArchSpec) on a memory (MemorySpec), holding table data.

``gather_reduce(batch)`` executes SparseLengthsSum on the design: every unit gathers the rows it
owns and accumulates per-bag partial sums; bank units hand theirs to their bank group's unit,
rank units (buffer chips) add their children's partial sums, the host adds the ranks'. The same
placement is lowered to DRAM request streams and timed by the DRAM engine
(:mod:`nmp.arch.timing`). ``parity_update`` lives in :mod:`nmp.arch.parity`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from nmp.arch import memview as mv
from nmp.arch import threads
from nmp.arch.design_key import timing_key
from nmp.arch.layout import LevelLayout, build_layout
from nmp.arch.lru_cache import MAX_WARMUP_BATCHES, LruCache
from nmp.arch.parity import parity_consistent, parity_nodes, parity_update, recover_node
from nmp.arch.placement import FlatLookups, Placement, flatten, solve_cross_level, warm_rank_caches
from nmp.arch.policies import PlacementPolicy, check_policy
from nmp.arch.profile import AccessProfile, build_profile
from nmp.arch.rowdata import RowStore
from nmp.arch.spec import LEVELS, ArchSpec
from nmp.arch.timing import time_gather_reduce
from nmp.arch.tree import HOST, TreeTraffic, parents
from nmp.errors import NmpError
from nmp.identity_cache import KeyedCache
from nmp.results import OpResult
from nmp.workload import generate_batch
from nmp.workload.elements import DEFAULT_ELEMENT_FORMAT, element_bytes


class Architecture:
    """A memory-side design bound to its memory; table contents live in ``store``."""

    def __init__(self, spec: ArchSpec, mem: Any, *, data_seed: int = 0) -> None:
        self.spec = spec
        self.mem = mem
        # the spec may come from overrides that no preset loader saw: the policy checks it here
        self.policy: PlacementPolicy = check_policy(spec, root="arch")
        self.layouts: dict[str, LevelLayout] = build_layout(
            spec, mem, near_memory=self.policy.near_memory
        )
        self.data_seed = data_seed
        self.store: RowStore | None = None
        self.workload = None
        self._tables: tuple | None = None
        self._shapes: tuple[tuple, tuple] | None = None  # (tables, _table_shapes of them)
        self._profile: AccessProfile | None = None
        self._partition: np.ndarray | None = None
        self.partition_info: dict = {}
        self._parity_state = None
        self._warm: dict[str, Any] = {}  # caches warmed to steady state (warm_state)
        self._rank_cache_warming = None  # the RankCache state a warm-up is advancing
        self._global_nodes: tuple[np.ndarray, np.ndarray] | None = None  # (global_nodes)

    @property
    def name(self) -> str:
        return self.spec.name

    # ---- tables and profile ------------------------------------------------------------
    def bind(self, tables: Any, workload: Any = None) -> None:
        """Use these tables (a WorkloadSpec or TableSpec-like objects with rows, dim, dtype).

        With a WorkloadSpec the access profile (for the partition LP and hot-row replication)
        comes from batches drawn with other seeds than the workload's."""
        if hasattr(tables, "tables"):
            workload = tables
            tables = tables.tables
        tables = tuple(tables)
        if self._tables == tables and self.workload == workload:
            return  # same tables and workload: keep the profile and partition
        self.check_tables_fit(tables)
        self._tables = tables
        self.workload = workload
        self.store = RowStore(
            self.data_seed,
            [t.dim for t in tables],
            [getattr(t, "dtype", DEFAULT_ELEMENT_FORMAT) for t in tables],
            [t.rows for t in tables],
        )
        self._profile = None
        self._partition = None
        self.partition_info = {}
        self._parity_state = None
        self._warm = {}

    def check_tables_fit(
        self, tables: Any, *, file: str | None = None, key: str | None = None
    ) -> None:
        """Raise :class:`NmpError` (at ``file`` and ``key``, where the tables were given) when
        ``tables`` need more bytes than this design's memory holds."""
        need = sum(t.rows * t.dim * _dtype_bytes(t) for t in tables)
        cap = self.mem.capacity_bytes
        if need > cap:
            raise NmpError(
                f"the tables ({need / 2**30:.2f} GiB) do not fit in {self.mem.name} "
                f"({cap / 2**30:.2f} GiB with {mv.org(self.mem, 'channels')} channels x "
                f"{mv.org(self.mem, 'ranks')} ranks)",
                file=file,
                key=key,
            )

    @property
    def tables(self) -> tuple:
        if self._tables is None:
            raise NmpError("no tables bound: call bind(workload) or pass tables")
        return self._tables

    @property
    def table_rows(self) -> list[int]:
        return list(self._table_shapes()[0])

    @property
    def table_row_bytes(self) -> list[int]:
        return list(self._table_shapes()[1])

    def _table_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(rows, row bytes) of the bound tables, kept per binding (every placement reads
        them: the trainer's servers place 26 tables each per step)."""
        tables = self.tables
        if self._shapes is None or self._shapes[0] is not tables:
            shapes = (tuple(t.rows for t in tables), tuple(t.dim * _dtype_bytes(t) for t in tables))
            self._shapes = (tables, shapes)
        return self._shapes[1]

    @property
    def table_bytes(self) -> int:
        return int(sum(r * b for r, b in zip(self.table_rows, self.table_row_bytes, strict=True)))

    @property
    def profile(self) -> AccessProfile | None:
        """The access profile (from other batches than the ones timed), when placement uses it."""
        return self._profile

    @property
    def partition(self) -> np.ndarray | None:
        """Shares [tables, classes, data levels] of each frequency class per data level."""
        return self._partition

    def _ensure_profile(self, batch) -> None:
        """The profile and partition stages (once per bound workload), shared with an earlier
        design that differs from this one in energy and area figures alone (same timing
        fields, memory, workload and data seed: :func:`nmp.arch.design_key.timing_key`)."""
        if self._profile is not None or self._partition is not None:
            return self._ensure_profile_stages(batch)
        key = self._setup_key()
        shared = _SETUPS.get(key) if key is not None else None
        if shared is not None:
            self._profile, self._partition, info, warm = shared
            self.partition_info = dict(info)
            self._warm = dict(warm)  # every user copies a warmed state before changing it
            return
        self._ensure_profile_stages(batch)
        if key is not None:
            _SETUPS.put(
                key,
                (self._profile, self._partition, dict(self.partition_info), dict(self._warm)),
            )

    def _setup_key(self) -> tuple | None:
        """What the profile and partition stages read; None where they read the timed batch
        (no workload to draw the profile's batches from)."""
        if not self.draws_batches:
            return None
        return (
            timing_key(self.spec),
            repr(self.mem),
            repr(self.workload),
            repr(self._tables),
            self.data_seed,
        )

    def _ensure_profile_stages(self, batch) -> None:
        if self.policy.needs_profile(self.spec) and self._profile is None:
            self._profile = _profile_for(self.workload, self.spec.profile_seed_offset, batch)
        if self.policy.partitions(self.spec) and self._partition is None:
            frac, result = solve_cross_level(
                self.spec, self.layouts, self.mem, self._profile, self.table_row_bytes
            )
            self._partition = frac
            if result is not None and self.spec.partition_calibration:
                calib = self._calibrate(batch)
                frac, result = solve_cross_level(
                    self.spec, self.layouts, self.mem, self._profile, self.table_row_bytes, calib
                )
                self._partition = frac
            if result is not None:
                self.partition_info = {
                    "lp_solve_s": result.solve_s,
                    "lp_level_t_ns": dict(
                        zip(self.spec.data_levels, result.level_t_ns.tolist(), strict=True)
                    ),
                    "lp_buckets": int(result.fractions.shape[0]),
                }

    def _calibrate(self, batch) -> dict[str, tuple[float, float]]:
        """Time the first partition on a profiling batch: per level, measured ns per DRAM byte
        (whole level: its slowest node, row misses, refresh) and the fixed time of the partial
        sums it receives."""
        probe = _calibration_batch(self.workload, self.spec.profile_seed_offset, batch)
        flat = flatten(probe, self.table_row_bytes, self.table_rows)
        order = self.issue_order(flat)
        plc = self.policy.place(self, flat, order)
        op = time_gather_reduce(self, flat, plc, order, self.tree_traffic(flat, plc))
        out = {}
        for lv, d in op.breakdown["levels"].items():
            dram_time = max(d["dram_ns"], d["compute_ns"])
            per_byte = dram_time / d["dram_bytes"] if d["dram_bytes"] > 0 else 0.0
            out[lv] = (per_byte, d["partial_sums_in_ns"])
        return out

    # ---- caches at steady state -----------------------------------------------------------
    def warm_state(self, name: str, build: Callable[[], Any]) -> Any:
        """A state built once per bound workload by ``build()`` (a cache warmed by the batches
        before the timed ones), kept until the next :meth:`bind`."""
        if name not in self._warm:
            self._warm[name] = build()
        return self._warm[name]

    @property
    def draws_batches(self) -> bool:
        """Whether the bound workload can draw batches (a WorkloadSpec, not ad-hoc tables)."""
        return self.workload is not None and hasattr(self.workload, "seed")

    def warmup_batches(self) -> Iterator[Any]:
        """The batches before the timed one, oldest first: seeded draws of the workload (none
        unless :attr:`draws_batches`); see :data:`nmp.arch.lru_cache.MAX_WARMUP_BATCHES`."""
        wl = self.workload
        if wl is None or not self.draws_batches:
            return
        # seeds far from the timed ones (seed, seed + 1, ...), the profile's and calibration's
        base = wl.seed + 7_777_777 + self.spec.profile_seed_offset
        for k in range(MAX_WARMUP_BATCHES):
            yield generate_batch(wl, seed=base + 104_729 * k)

    def rank_cache_state(self) -> LruCache | None:
        """The RankCaches a batch starts from: at steady state after the batches before it
        (:func:`nmp.arch.placement.warm_rank_caches`), copied so that every timed batch starts
        alike; during the warm-up, the state it advances. None without a RankCache."""
        if self._rank_cache_warming is not None:
            return self._rank_cache_warming
        warmed = self.warm_state("rank_cache", lambda: warm_rank_caches(self))
        return warmed.copy() if warmed is not None else None

    # ---- gather-reduce -----------------------------------------------------------------
    def issue_order(self, flat: FlatLookups) -> np.ndarray:
        """The order the host sends lookups (the policy's; see its ``issue_order``)."""
        return self.policy.issue_order(self.spec, flat)

    def prepare(self, batch, tables: Any = None) -> tuple[FlatLookups, Placement, np.ndarray]:
        """Flatten ``batch``, place every lookup; returns (lookups, placement, issue order)."""
        if tables is not None:
            self.bind(tables)
        elif self._tables is None:
            self.bind([_AdHocTable(t.num_rows, t.dim) for t in batch.tables])
        if len(batch.tables) != len(self.tables):
            raise NmpError(
                f"batch has {len(batch.tables)} tables, the design holds {len(self.tables)}"
            )
        self._ensure_profile(batch)
        flat = flatten(batch, self.table_row_bytes, self.table_rows)
        plc, order = self.place_lookups(flat)
        return flat, plc, order

    def place_lookups(self, flat: FlatLookups) -> tuple[Placement, np.ndarray]:
        """Place every lookup of a batch already flattened over the bound tables, whose
        profile-dependent state an earlier :meth:`prepare` fixed; returns (placement, issue
        order). A caller that holds its lookups flat (a training server) skips the
        per-table batch and its flattening."""
        order = self.issue_order(flat)
        return self.policy.place(self, flat, order), order

    def gather_reduce(
        self, batch, tables: Any = None, *, functional: bool = True
    ) -> tuple[list[np.ndarray] | None, OpResult]:
        """Pooled sums per table (float32 [batch, dim]) computed by the units, and the cost."""
        flat, plc, order = self.prepare(batch, tables)
        # the functional gather runs on the point's threads while the batch is timed
        execute = threads.start([(self.policy.execute, (self, flat, plc))] if functional else [])
        result = time_gather_reduce(self, flat, plc, order, self.tree_traffic(flat, plc))
        pooled = execute.results()[0] if functional else None
        result.output = pooled
        return pooled, result

    def tree_traffic(self, flat: FlatLookups, plc: Placement) -> TreeTraffic:
        """Partial sums sent and received by every node for this batch (all tables)."""
        return self.policy.tree_traffic(self, flat, plc)

    def global_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """(first global node id of each level (index by LEVELS), parent id of each global
        node or -1 for the host). Ids grow down the tree (rank, then bank-group, then bank
        nodes), so children come after their parents. Built once per design (its layouts and
        memory are fixed) and shared by every batch: not to be written (not flagged read-only,
        which would give the compiled kernels that take them another signature to compile)."""
        if self._global_nodes is None:
            self._global_nodes = self._build_global_nodes()
        return self._global_nodes

    def _build_global_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        ranks = mv.org(self.mem, "ranks")
        offsets, start = {}, 0
        for lv in LEVELS:
            if lv in self.layouts:
                offsets[lv] = start
                start += self.layouts[lv].nodes
        parent = np.full(start, -1, dtype=np.int64)
        base = np.zeros(len(LEVELS) + 1, dtype=np.int64)
        for lv, off in offsets.items():
            base[LEVELS.index(lv)] = off
        for lv, off in offsets.items():
            p_level, p_node = parents(self.layouts, lv, ranks)
            up = np.flatnonzero(p_level != HOST)
            parent[off + up] = base[p_level[up]] + p_node[up]
        return base, parent

    # ---- parity ---------------------------------------------------------------------------
    @property
    def parity_level_nodes(self) -> int:
        """How many nodes of the parity level a table's stripes rotate over (a lost one is
        recoverable with :meth:`recover_node`); not :meth:`nmp.coding.StripeLayout.parity_nodes`,
        the nodes holding given stripes' parity."""
        return parity_nodes(self)[0]

    def parity_update(self, rows: np.ndarray, new_values: np.ndarray, table: int = 0) -> OpResult:
        """Write rows and update their stripes' parity in place (see :mod:`nmp.arch.parity`)."""
        return parity_update(self, rows, new_values, table)

    def parity_consistent(self, table: int = 0) -> bool:
        """Whether the parity equals a fresh encode of the current rows, bit for bit."""
        return parity_consistent(self, table)

    def recover_node(self, lost_node: int, table: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Rows a lost node held (in stripes with parity), decoded from the survivors."""
        return recover_node(self, lost_node, table)


# set-ups (profile, partition, calibration, warmed caches) by Architecture._setup_key; a
# sweep's designs share one; chosen: 16 designs' set-ups (a partition is kilobytes, a warmed
# RankCache a few MiB at most); a limit of 0: none shared
_SETUPS: KeyedCache[tuple, tuple] = KeyedCache(16)


def _dtype_bytes(table) -> int:
    return element_bytes(getattr(table, "dtype", DEFAULT_ELEMENT_FORMAT))


class _AdHocTable:
    """Table shape inferred from a batch when no workload is bound (float32)."""

    def __init__(self, rows: int, dim: int) -> None:
        self.rows, self.dim, self.dtype = rows, dim, DEFAULT_ELEMENT_FORMAT

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AdHocTable) and (self.rows, self.dim) == (other.rows, other.dim)

    def __hash__(self) -> int:
        return hash((self.rows, self.dim))


def _profile_for(workload, offset: int, batch) -> AccessProfile:
    if workload is None or not hasattr(workload, "seed"):
        # no workload to sample from: profile the batch itself (an oracle profile)
        return build_profile([batch], [t.num_rows for t in batch.tables])
    return _cached_profile(workload, offset)


def _calibration_batch(workload, offset: int, batch):
    if workload is None or not hasattr(workload, "seed"):
        return batch

    return generate_batch(workload, seed=workload.seed + offset * 1_000_003 + 7919 * 97)


@functools.lru_cache(maxsize=16)
def _cached_profile(workload, offset: int, batches: int = 4) -> AccessProfile:
    # seeds far from the ones a user evaluates (workload.seed, seed + 1, ...)
    seeds = [workload.seed + offset * 1_000_003 + 7919 * i for i in range(batches)]
    drawn = [generate_batch(workload, seed=s) for s in seeds]
    return build_profile(drawn, [t.rows for t in workload.tables])


__all__ = ["Architecture"]
