"""Placement, the stage shared by the policies: which node and slot serves each lookup.

A policy (:mod:`nmp.arch.policies`) picks each lookup's level; :func:`place_rows` interleaves
rows over that level's nodes (global row id modulo the node count) and applies the mechanisms
that move lookups (hot-row replication, the RankCache). Also here: the flattened batch
(:class:`FlatLookups`), the issue orders, the per-level peak rates and the cross-level
partition (:func:`solve_cross_level`, the LP of :mod:`nmp.arch.partition`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.layout import LevelLayout, node_capacity_slots
from nmp.arch.lru_cache import LruCache, warm_until_steady
from nmp.arch.partition import PartitionProblem, PartitionResult, solve_partition
from nmp.arch.profile import MAX_CLASSES, AccessProfile
from nmp.arch.rankcache import new_rank_caches, rank_cache_hits
from nmp.arch.salp_readings import SALP_READINGS_REGISTRY, no_salp_row_cycles
from nmp.arch.spec import BASE_PLACEMENTS, LEVELS, ArchSpec
from nmp.identity_cache import KeyedCache
from nmp.jit import njit


@dataclass
class FlatLookups:
    """Every lookup of a batch in one array per field (tables concatenated, table-major)."""

    table: np.ndarray  # int64 [n]
    row: np.ndarray  # int64 [n]
    bag: np.ndarray  # int64 [n]
    weight: np.ndarray | None  # float32 [n]
    grow: np.ndarray  # global row id: table's first row + row
    row_bytes: np.ndarray  # int64 [n]
    batch: int
    num_tables: int

    @property
    def n(self) -> int:
        return int(self.table.size)


@dataclass
class Placement:
    level: np.ndarray  # int64 [n]: index into LEVELS, -1 for the host
    node: np.ndarray  # int64 [n]: node within the level (-1: every node, vertical)
    slot: np.ndarray  # int64 [n]: row slot inside the node
    hit: np.ndarray  # bool [n]: served from the unit's SRAM cache
    replicated: np.ndarray  # bool [n]
    info: dict = field(default_factory=dict)


@njit(cache=True)
def _flatten_kernel(row, n_start, offsets, off_start, first_row, rb):  # pragma: no cover
    """Table, bag, global row and row bytes of every lookup (tables one after another from
    ``n_start``, each bag's lookups in order); ``ok`` False when some table's offsets are not
    valid CSR over its lookups."""
    n = row.shape[0]
    table = np.empty(n, dtype=np.int64)
    bag = np.empty(n, dtype=np.int64)
    grow = np.empty(n, dtype=np.int64)
    row_bytes = np.empty(n, dtype=np.int64)
    j = 0
    for t in range(off_start.shape[0] - 1):
        a, b = off_start[t], off_start[t + 1]
        if b <= a or offsets[a] != 0 or offsets[b - 1] != n_start[t + 1] - n_start[t]:
            return table, bag, grow, row_bytes, False
        for k in range(a, b - 1):
            lo, hi = offsets[k], offsets[k + 1]
            if hi < lo or j + hi - lo > n:
                return table, bag, grow, row_bytes, False
            for _ in range(hi - lo):
                table[j] = t
                bag[j] = k - a
                grow[j] = first_row[t] + row[j]
                row_bytes[j] = rb[t]
                j += 1
    return table, bag, grow, row_bytes, j == n


@njit(cache=True)
def _global_rows(row, n_start, first_row):  # pragma: no cover - compiled
    """Each lookup's global row id: its table's first row + its row (tables one after another
    from ``n_start``)."""
    grow = np.empty(row.shape[0], dtype=np.int64)
    for t in range(n_start.shape[0] - 1):
        base = first_row[t]
        for j in range(n_start[t], n_start[t + 1]):
            grow[j] = base + row[j]
    return grow


# The table, bag and row bytes of every lookup depend on the batch's offsets and the tables'
# row bytes only, which a workload with a fixed pooling keeps from batch to batch: kept per
# (offsets, lookups per table, row bytes), and shared by the batches of that shape, so the
# arrays of a FlatLookups are not to be written (not flagged read-only, which would give the
# compiled kernels that take them another signature to compile). bag_major_order keeps its
# order per such shape too.
# chosen: a few workloads' bag shapes (0.5 MiB each)
_SHAPES: KeyedCache[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = KeyedCache(8)


def flatten(batch, row_bytes: list[int], table_rows: list[int]) -> FlatLookups:
    """Concatenate a LookupBatch's tables (one compiled pass; loops over tables only)."""
    tables = batch.tables
    any_weights = any(t.weights is not None for t in tables)
    weight = None
    if any_weights:
        weight = np.concatenate(
            [
                lk.weights if lk.weights is not None else np.ones(lk.indices.size, np.float32)
                for lk in tables
            ]
        )
    first_row = np.concatenate([[0], np.cumsum(table_rows)[:-1]]).astype(np.int64)
    rb = np.asarray(row_bytes, dtype=np.int64)
    if tables:
        row = np.concatenate([lk.indices.astype(np.int64, copy=False) for lk in tables])
        offsets = np.concatenate([np.asarray(lk.offsets, dtype=np.int64) for lk in tables])
        off_start = np.zeros(len(tables) + 1, dtype=np.int64)
        np.cumsum([lk.offsets.size for lk in tables], out=off_start[1:])
        n_start = np.zeros(len(tables) + 1, dtype=np.int64)
        np.cumsum([lk.indices.size for lk in tables], out=n_start[1:])
        key = (offsets.tobytes(), n_start.tobytes(), rb.tobytes())
        shape = _SHAPES.get(key)
        if shape is not None:  # the bags of an earlier batch: only the rows are new
            table, bag, row_b = shape
            grow = _global_rows(row, n_start, first_row)
            return FlatLookups(table, row, bag, weight, grow, row_b, batch.batch, len(tables))
        table, bag, grow, row_b, ok = _flatten_kernel(
            row, n_start, offsets, off_start, first_row, rb
        )
        if ok:
            _SHAPES.put(key, (table, bag, row_b))
            return FlatLookups(table, row, bag, weight, grow, row_b, batch.batch, len(tables))
    tabs, rows, bags = [], [], []
    for t, lk in enumerate(tables):
        tabs.append(np.full(lk.indices.size, t, dtype=np.int64))
        rows.append(lk.indices.astype(np.int64, copy=False))
        bags.append(np.repeat(np.arange(lk.batch, dtype=np.int64), np.diff(lk.offsets)))
    table = np.concatenate(tabs) if tabs else np.empty(0, np.int64)
    row = np.concatenate(rows) if rows else np.empty(0, np.int64)
    return FlatLookups(
        table=table,
        row=row,
        bag=np.concatenate(bags) if bags else np.empty(0, np.int64),
        weight=weight,
        grow=first_row[table] + row,
        row_bytes=rb[table],
        batch=batch.batch,
        num_tables=len(tables),
    )


@njit(cache=True)
def _bag_major_kernel(table, bag, batch):  # pragma: no cover - compiled
    """``np.lexsort((table, bag))`` of table-major lookups: a stable counting sort by bag
    (ties keep their order, which is table order); ``ok`` False when the lookups are not
    table-major or a bag is outside [0, batch)."""
    n = table.shape[0]
    out = np.empty(n, dtype=np.int64)
    start = np.zeros(batch + 1, dtype=np.int64)
    for i in range(n):
        if bag[i] < 0 or bag[i] >= batch or (i > 0 and table[i] < table[i - 1]):
            return out, False
        start[bag[i] + 1] += 1
    for b in range(batch):
        start[b + 1] += start[b]
    for i in range(n):
        out[start[bag[i]]] = i
        start[bag[i]] += 1
    return out, True


def bag_major_order(flat: FlatLookups) -> np.ndarray:
    """Lookups sample by sample, each sample's tables in order (``np.lexsort((table, bag))``).
    Kept for the table and bag arrays that :func:`flatten` shares between the batches of one
    shape (the same arrays, so the same order; not to be written)."""
    return _per_shape(flat, "bag-major order", _bag_major_order)


def _bag_major_order(flat: FlatLookups) -> np.ndarray:
    if flat.n:
        out, ok = _bag_major_kernel(
            np.ascontiguousarray(flat.table, dtype=np.int64),
            np.ascontiguousarray(flat.bag, dtype=np.int64),
            max(int(flat.batch), 0),
        )
        if ok:
            return out
    return np.lexsort((flat.table, flat.bag)).astype(np.int64)


def bag_keys(flat: FlatLookups) -> np.ndarray:
    """Each lookup's bag over all tables, ``table * batch + bag`` (kept per shape, as
    :func:`bag_major_order`; not to be written)."""
    return _per_shape(flat, "bag keys", lambda f: f.table * f.batch + f.bag)


def _per_shape(flat: FlatLookups, what: str, build) -> np.ndarray:
    """``build(flat)``, kept while ``flat``'s table and bag arrays are a shape that
    :func:`flatten` shares (they alone decide it)."""
    key = (what, id(flat.table), id(flat.bag), flat.batch)
    kept = _PER_SHAPE.get(key)
    if kept is not None and kept[0] is flat.table and kept[1] is flat.bag:
        return kept[2]
    out = build(flat)
    if any(flat.table is shape[0] and flat.bag is shape[1] for shape in _SHAPES.values()):
        _PER_SHAPE.put(key, (flat.table, flat.bag, out))
    return out


# (what, id(table), id(bag), batch) -> (table, bag, array) of the shapes flatten shares
_PER_SHAPE: KeyedCache[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = KeyedCache(16)


def divmod_nonneg(a: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.divmod(a, d)`` of non-negative int64 ``a``: a shift and a mask when ``d`` is a
    power of two (node and bank counts usually are; int64 division is slow)."""
    d = int(d)
    if d > 0 and d & (d - 1) == 0:
        return a >> (d.bit_length() - 1), a & (d - 1)
    return np.divmod(a, d)


def level_node_peak_gbps(name: str, layout: LevelLayout, mem) -> float:
    """Peak data rate of one node's own data path (the 'internal bandwidth' of the level):
    rank: its data bus (tx per nBL); bank group: tx per tCCD_L per bank group it spans;
    bank: tx per tCCD_L (its column path)."""
    tx, tck = mv.tx_bytes(mem), mv.tck_ns(mem)
    if name == "rank":
        return tx / (mv.timing(mem, "nBL") * tck)
    if name == "bankgroup":
        return layout.distinct_bankgroups() * tx / (mv.timing(mem, "nCCDL") * tck)
    return tx / (mv.timing(mem, "nCCDL") * tck)


def level_effective_gbps(name: str, layout: LevelLayout, mem, spec: ArchSpec, row_bytes: int):
    """Sustainable rate of one node for random rows (used by the partition LP and the
    frequency-aware base placement): the data path's peak, and for a bank one row per row
    cycle - tRC without subarray parallelism, tRAS with SALP-1 (precharge hidden), two rows per
    tRC with SALP-2 (two activations in flight); MASA reaches the column path's peak."""
    peak = level_node_peak_gbps(name, layout, mem)
    if name != "bank":
        return peak
    tx, tck = mv.tx_bytes(mem), mv.tck_ns(mem)
    lpr = -(-row_bytes // tx)
    t = {k: mv.timing(mem, k) for k in ("nRC", "nRAS", "nRP", "nCCDL")}
    columns = mv.trcd(mem) + lpr * t["nCCDL"]
    per_row_cycles = (
        SALP_READINGS_REGISTRY.get(spec.bank.salp).per_row_cycles(t, columns, lpr)
        if spec.subarray_parallelism
        else no_salp_row_cycles(t, columns)
    )
    if per_row_cycles is None:
        return peak
    return min(peak, lpr * tx / (per_row_cycles * tck))


def frequency_first_shares(
    profile: AccessProfile, caps: np.ndarray, order: np.ndarray, ntab: int
) -> np.ndarray:
    """Shares [tables, classes, levels] of a frequency-aware placement without an optimizer:
    each table's rows sorted hottest first fill the levels in ``order`` (most bandwidth per
    stored row first), each level taking its capacity share of the table's rows."""
    nlev = caps.size
    frac = np.zeros((ntab, MAX_CLASSES, nlev))
    share = caps / caps.sum()
    hot_first = np.arange(MAX_CLASSES - 1, -1, -1)  # class 0 (unseen rows) is the coldest
    for t in range(ntab):
        rows, _ = profile.class_stats(t)
        r = rows[hot_first]
        end = np.cumsum(r)
        start = end - r
        bound = np.concatenate([[0.0], np.cumsum(share[order])]) * end[-1]
        for k, lv in enumerate(order):
            overlap = np.clip(np.minimum(end, bound[k + 1]) - np.maximum(start, bound[k]), 0, None)
            frac[t, hot_first, lv] = np.divide(overlap, r, out=np.zeros_like(r), where=r > 0)
        empty = rows <= 0
        frac[t, empty] = share  # classes without rows: any split
    return frac


def solve_cross_level(
    spec: ArchSpec,
    layouts: dict[str, LevelLayout],
    mem,
    profile: AccessProfile | None,
    row_bytes,
    calibration: dict[str, tuple[float, float]] | None = None,
) -> tuple[np.ndarray, PartitionResult | None]:
    """Fractions [tables, classes, data levels] of each frequency class per level.

    ``calibration`` maps a level to (measured ns per DRAM byte of the whole level, measured
    fixed ns), from a timed run of a previous partition on a profiling batch."""
    levels = list(spec.data_levels)
    ntab = len(row_bytes)
    caps = np.array(
        [
            layouts[lv].capacity_banks
            * layouts[lv].channels
            * layouts[lv].ranks
            * mv.org(mem, "rows")
            * mv.lines_per_page(mem)
            * mv.tx_bytes(mem)
            for lv in levels
        ],
        dtype=np.float64,
    )
    if not spec.bandwidth_aware_partition:
        by_frequency = BASE_PLACEMENTS.get(spec.base_placement).hottest_to_fastest
        if by_frequency and profile is not None:
            # the level with the most bandwidth per stored row takes the hottest rows
            rate = np.array(
                [
                    level_effective_gbps(lv, layouts[lv], mem, spec, int(np.median(row_bytes)))
                    * layouts[lv].nodes
                    for lv in levels
                ]
            )
            order = np.argsort(-rate / caps, kind="stable")
            return frequency_first_shares(profile, caps, order, ntab), None
        frac = np.broadcast_to(caps / caps.sum(), (ntab, MAX_CLASSES, len(levels))).copy()
        return frac, None
    assert profile is not None  # the bandwidth-aware partition needs one (needs_profile)
    rows_b, freq_b, bytes_b = [], [], []
    for t in range(ntab):
        r, f = profile.class_stats(t)
        rows_b.append(r)
        freq_b.append(f)
        # a lookup moves whole bursts, and a row occupies whole bursts (rows are line-aligned)
        tx = mv.tx_bytes(mem)
        bytes_b.append(np.full(MAX_CLASSES, float(-(-int(row_bytes[t]) // tx) * tx)))
    rows_a = np.concatenate(rows_b)
    freq_a = np.concatenate(freq_b)
    bytes_a = np.concatenate(bytes_b)
    keep = rows_a > 0
    tck = mv.tck_ns(mem)
    ns_per_byte = np.array(
        [
            1.0
            / (
                level_effective_gbps(lv, layouts[lv], mem, spec, int(np.median(row_bytes)))
                * layouts[lv].nodes
            )
            for lv in levels
        ]
    )
    fixed = np.zeros(len(levels))
    if calibration:
        for i, lv in enumerate(levels):
            if lv in calibration:
                measured, fixed[i] = calibration[lv]
                if measured > 0:
                    ns_per_byte[i] = measured
    ranks_total = mv.org(mem, "channels") * mv.org(mem, "ranks")
    ca = np.array(
        [
            0.0
            if lv == "rank" or spec.instruction.bits_per_lookup == 0
            else spec.instruction.bits_per_lookup
            / spec.instruction.dram_ca_bits_per_cycle
            * tck
            / ranks_total
            for lv in levels
        ]
    )
    problem = PartitionProblem(
        rows=rows_a[keep],
        freq=freq_a[keep],
        row_bytes=bytes_a[keep],
        capacity_bytes=caps,
        ns_per_byte=ns_per_byte,
        ca_ns_per_lookup=ca,
        fixed_ns=fixed,
        shared=shared_paths(spec, layouts, levels),
        peak_ns_per_byte=np.array(
            [
                1.0 / (level_node_peak_gbps(lv, layouts[lv], mem) * layouts[lv].nodes)
                for lv in levels
            ]
        ),
    )
    result = solve_partition(problem)
    frac = np.zeros((ntab * MAX_CLASSES, len(levels)))
    frac[~keep] = caps / caps.sum()  # empty classes: any split
    frac[keep] = result.fractions
    return frac.reshape(ntab, MAX_CLASSES, len(levels)), result


def shared_paths(spec: ArchSpec, layouts: dict[str, LevelLayout], levels: list[str]):
    """[L, L] for the partition LP: with ``shared_bankgroup_column_path``, the part of the
    bank level's bytes read by bank units in bank groups that hold a bank-group unit, which
    cross the bank-group level's paths too (None when nothing is shared)."""
    if not spec.shared_bankgroup_column_path or not {"bankgroup", "bank"} <= set(levels):
        return None
    groups = {int(g) for g in layouts["bankgroup"].unit_bg.ravel()}
    bank = layouts["bank"]
    sharing = sum(int(bank.unit_bg[u, 0]) in groups for u in range(bank.units))
    if not sharing:
        return None
    out = np.zeros((len(levels), len(levels)))
    out[levels.index("bankgroup"), levels.index("bank")] = sharing / bank.units
    return out


@njit(cache=True)
def pow2_shifts(counts):  # pragma: no cover - compiled
    """log2 of each count that is a power of two, else -1: node and unit counts are usually
    2^k, so a division by one becomes a shift."""
    shifts = np.full(counts.shape[0], -1, dtype=np.int64)
    for i in range(counts.shape[0]):
        d = counts[i]
        if d > 0 and (d & (d - 1)) == 0:
            shifts[i] = 0
            while (1 << shifts[i]) < d:
                shifts[i] += 1
    return shifts


@njit(cache=True)
def _node_slot(level, grow, nodes_of, node, slot):  # pragma: no cover - compiled
    """Rows interleaved over the nodes of their level: node = grow mod nodes, slot = grow div
    nodes (non-negative ``grow``); lookups without a level keep their node and slot."""
    shifts = pow2_shifts(nodes_of)
    for i in range(level.shape[0]):
        li = level[i]
        if li < 0:
            continue
        d, g = nodes_of[li], grow[i]
        q = g >> shifts[li] if shifts[li] >= 0 else g // d  # node counts are usually 2^k
        node[i] = g - q * d
        slot[i] = q


def place_rows(
    spec: ArchSpec,
    layouts: dict[str, LevelLayout],
    mem,
    flat: FlatLookups,
    level: np.ndarray,
    profile: AccessProfile | None,
    order: np.ndarray,
    rank_cache=None,
) -> Placement:
    """Node and slot of every lookup whose level a policy chose (``level``, index into LEVELS):
    rows interleaved over their level's nodes; then the mechanisms that move some lookups,
    hot-row replication (:mod:`nmp.arch.replication`) and the RankCache
    (:mod:`nmp.arch.rankcache`, starting from the state ``rank_cache``, advanced in place;
    None: cold). ``order`` is the issue order (a permutation of the lookups)."""
    # numba kernels of replication: loaded on use
    from nmp.arch.replication import replicate_hot

    n = flat.n
    node = np.full(n, -1, dtype=np.int64)
    slot = flat.grow.copy()
    hit = np.zeros(n, dtype=bool)
    repl = np.zeros(n, dtype=bool)
    info: dict = {}
    nodes_of = np.zeros(len(LEVELS), dtype=np.int64)
    for li, lv in enumerate(LEVELS):
        if lv in layouts:
            nodes_of[li] = layouts[lv].nodes
    if flat.n and int(flat.grow.min()) >= 0:
        _node_slot(level, np.ascontiguousarray(flat.grow, dtype=np.int64), nodes_of, node, slot)
    else:
        for li, lv in enumerate(LEVELS):
            sel = level == li
            if not sel.any():
                continue
            lay = layouts[lv]
            slot[sel], node[sel] = divmod_nonneg(flat.grow[sel], lay.nodes)
    if spec.replicate_hot_rows and profile is not None:
        repl = replicate_hot(spec, layouts, mem, flat, profile, level, node, slot, info, order)
    if spec.rank.cache_kib > 0 and "rank" in layouts:
        hit = rank_cache_hits(spec, flat, level, node, order, info, profile, rank_cache)
        if rank_cache is not None and rank_cache.warmup_rates:
            info["cache_warmup_batches"] = len(rank_cache.warmup_rates)
    return Placement(level, node, slot, hit, repl, info)


def warm_rank_caches(arch) -> LruCache | None:
    """The RankCaches at steady state: the batches before the timed one placed in turn
    (:meth:`nmp.arch.Architecture.warmup_batches`), each advancing the same caches, until
    the hit rate settles (:func:`nmp.arch.lru_cache.warm_until_steady`)."""
    cache = new_rank_caches(arch.spec, arch.layouts, arch.table_row_bytes)
    if cache is None:
        return None
    batches = arch.warmup_batches()

    def step(_: int) -> float:
        flat = flatten(next(batches), arch.table_row_bytes, arch.table_rows)
        info = arch.policy.place(arch, flat, arch.issue_order(flat)).info
        return info.get("cache_hits", 0) / max(info.get("cache_lookups", 0), 1)

    if not arch.draws_batches:
        return cache  # nothing to warm it with: cold
    arch._rank_cache_warming = cache
    try:
        cache.warmup_rates = warm_until_steady(step)
    finally:
        arch._rank_cache_warming = None
    return cache


__all__ = [
    "warm_rank_caches",
    "FlatLookups",
    "bag_keys",
    "bag_major_order",
    "Placement",
    "divmod_nonneg",
    "flatten",
    "frequency_first_shares",
    "level_effective_gbps",
    "level_node_peak_gbps",
    "node_capacity_slots",
    "place_rows",
    "solve_cross_level",
]
