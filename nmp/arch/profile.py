"""Offline access profile: how often each row is looked up, from batches other than the one run.

Placement decisions that depend on frequency (ReCross's cross-level partition, TRiM's hot-row
replication) use a profile drawn with other seeds than the evaluated batch, as a deployed system
profiles past traffic (RecNMP reports < 2 % overhead for hot-entry profiling). Rows are grouped
into frequency classes per table: class 0 holds the rows the profile never saw, class c >= 1 the
rows seen 2^(c-1) .. 2^c - 1 times. The probability mass of unseen rows is estimated with the
Good-Turing rule (the share of lookups that hit rows seen exactly once), so the partition does
not mistake the long tail of a Zipf table for cold data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from nmp.identity_cache import IdentityCache
from nmp.jit import njit

MAX_CLASSES = 48
_DENSE_ROWS = 1 << 26  # rows of all tables up to which row classes are kept as a dense map
# chosen: up to which row counts are kept dense too, on the profile (float64: 2 MiB at most
# each; a sweep keeps 16 designs' set-ups, nmp.arch.architecture._SETUPS)
_DENSE_COUNT_ROWS = 1 << 18


@dataclass(frozen=True)
class AccessProfile:
    keys: tuple[np.ndarray, ...]  # per table: sorted rows seen in the profile
    counts: tuple[np.ndarray, ...]  # per table: lookups per row over all profile batches
    table_rows: tuple[int, ...]
    batches: int

    @cached_property
    def first_rows(self) -> np.ndarray:
        """Global id of each table's row 0 (the tables' rows end to end), int64 [tables]; one
        array per profile, not to be written."""
        return np.concatenate([[0], np.cumsum(self.table_rows)[:-1]]).astype(np.int64)

    def row_counts(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Lookups of ``rows`` of ``table`` over all profile batches (0: never seen)."""
        keys, counts = self.keys[table], self.counts[table]
        out = np.zeros(rows.size, dtype=counts.dtype)
        if keys.size:
            pos = np.minimum(np.searchsorted(keys, rows), keys.size - 1)
            hit = keys[pos] == rows
            out[hit] = counts[pos[hit]]
        return out

    def counts_of(self, tables: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:meth:`row_counts` of every (table, row) pair: where every row is within its table,
        one look-up in the dense map of small profiles (:attr:`_count_map`) or one search over
        all tables' keys end to end (a loop per table costs more than the search on small
        batches: the trainer places 26 tables per server per step)."""
        tables = np.asarray(tables, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        limit = np.asarray(self.table_rows, dtype=np.int64)
        dense = self._count_map
        if dense is not None and rows.size:
            out = np.empty(rows.size, dtype=dense.dtype)
            tables, rows = np.ascontiguousarray(tables), np.ascontiguousarray(rows)
            if _lookup_dense(dense, self.first_rows, limit, tables, rows, out):
                return out
        merged = self._merged_keys
        in_range = (
            merged is not None
            and (not rows.size or (int(tables.min()) >= 0 and int(tables.max()) < limit.size))
            and bool(((rows >= 0) & (rows < limit[tables])).all())
        )
        if not in_range:
            out = np.zeros(rows.size, dtype=np.float64)
            for t in range(len(self.keys)):
                sel = np.flatnonzero(tables == t)
                if sel.size:
                    out[sel] = self.row_counts(t, rows[sel])
            return out
        keys, counts = merged  # type: ignore[misc]
        out = np.zeros(rows.size, dtype=counts.dtype)
        if keys.size and rows.size:
            g = self.first_rows[tables] + rows
            pos = np.minimum(np.searchsorted(keys, g), keys.size - 1)
            hit = keys[pos] == g
            out[hit] = counts[pos[hit]]
        return out

    @cached_property
    def _merged_keys(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The keys as global rows (each table's first row added: ascending, since each
        table's keys are sorted and within the table) and their counts, or None where a key
        lies outside its table. (Cached on the instance: a profile is immutable.)"""
        inside = all(
            not k.size or (int(k[0]) >= 0 and int(k[-1]) < r)
            for k, r in zip(self.keys, self.table_rows, strict=True)
        )
        if not inside or not self.keys:
            return None
        first = self.first_rows
        keys = np.concatenate([first[t] + k for t, k in enumerate(self.keys)])
        return keys, np.concatenate(self.counts)

    def row_class(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Frequency class of ``rows`` of ``table`` (0: never seen)."""
        counts = self.row_counts(table, rows)
        cls = np.zeros(rows.size, dtype=np.int64)
        seen = counts > 0
        cls[seen] = 1 + np.floor(np.log2(counts[seen])).astype(np.int64)
        return np.minimum(cls, MAX_CLASSES - 1)

    def _class_map(self) -> np.ndarray | None:
        """Class of every row of every table (int8, rows of all tables end to end), or None
        when the tables are too large for a dense map. The profile is immutable: the map is
        built once and kept for the last few profiles used (memory stays bounded in sweeps)."""
        return _CLASS_MAPS.get(self, self._build_class_map)

    @cached_property
    def _count_map(self) -> np.ndarray | None:
        """Lookups of every row of every table (rows of all tables end to end; 0: never
        seen), or None above :data:`_DENSE_COUNT_ROWS` rows. A lookup in it, against a search
        of the keys, is most of what the trainer's servers save placing 26 small tables a
        step; kept on the instance (each server's design has its own profile)."""
        merged = self._merged_keys
        total = int(sum(self.table_rows))
        if merged is None or total > _DENSE_COUNT_ROWS:
            return None
        keys, counts = merged
        out = np.zeros(total, dtype=counts.dtype)
        out[keys] = counts
        return out

    def _build_class_map(self) -> np.ndarray | None:
        total = int(sum(self.table_rows))
        fits = total <= _DENSE_ROWS and MAX_CLASSES <= 127
        fits = fits and all(
            not k.size or (int(k[0]) >= 0 and int(k[-1]) < r)
            for k, r in zip(self.keys, self.table_rows, strict=True)
        )
        out = None
        if fits:
            first = self.first_rows
            out = np.zeros(total, dtype=np.int8)
            for t, (k, c) in enumerate(zip(self.keys, self.counts, strict=True)):
                out[first[t] + k] = np.minimum(1 + np.floor(np.log2(c)).astype(np.int64), 127)
            np.minimum(out, MAX_CLASSES - 1, out=out)
        return out

    def row_classes(self, tables: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Frequency class of every (table, row) pair, as :meth:`row_class` per table."""
        cmap = self._class_map()
        if cmap is not None and rows.size:
            limit = np.asarray(self.table_rows, dtype=np.int64)
            first = self.first_rows
            cls = np.empty(rows.size, dtype=np.int64)
            tables = np.ascontiguousarray(tables, dtype=np.int64)
            rows = np.ascontiguousarray(rows, dtype=np.int64)
            if _lookup_dense(cmap, first, limit, tables, rows, cls):
                return cls
        cls = np.zeros(rows.size, dtype=np.int64)
        for t in range(len(self.keys)):
            sel = tables == t
            if sel.any():
                cls[sel] = self.row_class(t, rows[sel])
        return cls

    def class_stats(self, table: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, expected lookups per batch) of each class of ``table`` (float64 [C])."""
        counts = self.counts[table]
        rows = np.zeros(MAX_CLASSES)
        freq = np.zeros(MAX_CLASSES)
        if counts.size:
            cls = np.minimum(1 + np.floor(np.log2(counts)).astype(np.int64), MAX_CLASSES - 1)
            np.add.at(rows, cls, 1.0)
            total = float(counts.sum())
            singles = float((counts == 1).sum())
            seen_share = 1.0 - singles / total  # Good-Turing: mass of the unseen ~ N1 / N
            np.add.at(freq, cls, counts * seen_share / self.batches)
            freq[0] = singles / self.batches
        rows[0] = self.table_rows[table] - counts.size
        return rows, freq

    def hottest(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` most looked-up rows over all tables: (table ids, rows)."""
        if count <= 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        tabs = np.concatenate([np.full(k.size, t, dtype=np.int64) for t, k in enumerate(self.keys)])
        rows = np.concatenate(self.keys)
        counts = np.concatenate(self.counts)
        if count < counts.size:
            # only rows at least as hot as the count-th hottest can be among them (ties with
            # it included): sort those, not every key (2.2 s of the default sweep's 25 s)
            kth = np.partition(counts, counts.size - count)[counts.size - count]
            cand = np.flatnonzero(counts >= kth)
            tabs, rows, counts = tabs[cand], rows[cand], counts[cand]
        order = np.lexsort((rows, tabs, -counts))[:count]
        return tabs[order], rows[order]


_CLASS_MAPS: IdentityCache[np.ndarray | None] = IdentityCache(2)  # profile -> its class map


def build_profile(batches: list, table_rows: list[int]) -> AccessProfile:
    """Count lookups per row over ``batches`` (LookupBatch objects)."""
    keys, counts = [], []
    for t in range(len(table_rows)):
        idx = np.concatenate([b.tables[t].indices for b in batches])
        k, c = np.unique(idx, return_counts=True)
        keys.append(k.astype(np.int64))
        counts.append(c.astype(np.float64))
    return AccessProfile(tuple(keys), tuple(counts), tuple(table_rows), len(batches))


@njit(cache=True)
def _lookup_dense(cmap, first, limit, tables, rows, out):  # pragma: no cover - compiled
    """``out = cmap[first[tables] + rows]`` (a dense map of classes or counts); False (out
    unfinished) when a table or a row is out of range."""
    for i in range(rows.shape[0]):
        t, r = tables[i], rows[i]
        if t < 0 or t >= limit.shape[0] or r < 0 or r >= limit[t]:
            return False
        out[i] = cmap[first[t] + r]
    return True


__all__ = ["AccessProfile", "build_profile"]
