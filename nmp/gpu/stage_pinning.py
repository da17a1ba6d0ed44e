"""The L2 set-aside of the embedding stage (:mod:`nmp.gpu.model`) and what pinning puts in it:
a pre-kernel's ``evict_last`` prefetch of the hottest rows (once for the stage, or before each
table's kernel), or an access-policy window over a table laid out hot rows first
(:mod:`nmp.gpu.hot_layout`). One :class:`StagePinning` per stage; it keeps the breakdown's
``pinning`` record as it goes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nmp.gpu.cache import CacheState, StampClock
from nmp.gpu.hbm import HbmCalibration
from nmp.gpu.hot_layout import (
    check_window,
    hot_first_order,
    remap_indices,
    window_bytes,
    window_hit_ratio,
)
from nmp.gpu.spec import GpuSpec
from nmp.gpu.stream import L2Policy


def hot_rows(profile, k: int, tables: list[int] | None = None) -> list[tuple[int, np.ndarray]]:
    """The ``k`` most accessed rows over ``tables`` (default all) of ``profile``:
    [(table, rows)], hottest first within a table; ties go to the lower (table, row)."""
    tables = list(range(len(profile.tables))) if tables is None else tables
    counts, owner, rows = [], [], []
    for t in tables:
        lookups = profile.tables[t]
        c = np.bincount(lookups.indices, minlength=lookups.num_rows)
        nz = np.flatnonzero(c)
        counts.append(c[nz])
        rows.append(nz)
        owner.append(np.full(nz.shape[0], t, dtype=np.int64))
    if not counts:
        return []
    c = np.concatenate(counts)
    tb = np.concatenate(owner)
    rw = np.concatenate(rows)
    if k < c.size:
        # The k-th largest count; rows above it all go in, ties fill up in (table, row) order
        # (the arrays are in that order). Avoids sorting millions of counts.
        kth = np.partition(c, c.size - k)[c.size - k]
        above = np.flatnonzero(c > kth)
        ties = np.flatnonzero(c == kth)[: k - above.size]
        keep = np.concatenate([above, ties])
        c, tb, rw = c[keep], tb[keep], rw[keep]
    order = np.lexsort((rw, tb, -c))[:k]
    return [(t, rw[order][tb[order] == t]) for t in tables]


def pin_lines(pinned: list[tuple[int, np.ndarray]], bases, row_bytes, line_bytes) -> np.ndarray:
    """Line addresses of the pinned rows (every line a row touches)."""
    out = []
    for t, rows in pinned:
        if rows.size == 0:
            continue
        start = bases[t] + rows * row_bytes[t]
        first = start // line_bytes
        last = (start + row_bytes[t] - 1) // line_bytes
        n = int((last - first).max()) + 1
        lines = first[:, None] + np.arange(n)[None, :]
        keep = lines <= last[:, None]
        out.append(lines[keep])
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


class StagePinning:
    """The set-aside's ways (``carve`` of each L2 set, in each of the ``parts`` caches), the
    pre-kernel's fetches and the window's policy, for one stage on ``gpu``. ``profile`` is the
    batch whose access counts choose the hot rows; ``l2``, ``clock`` and ``sample`` are the
    stage's L2 state, its clock and its line sampling."""

    def __init__(
        self,
        gpu: GpuSpec,
        cal: HbmCalibration,
        profile,
        bases: list[int],
        row_bytes: list[int],
        l2: CacheState,
        clock: StampClock,
        sample: int,
    ) -> None:
        self.gpu, self.cal, self.profile = gpu, cal, profile
        self.bases, self.row_bytes = bases, row_bytes
        self.l2, self.clock, self.sample = l2, clock, sample
        l2c, pinning = gpu.l2, gpu.pinning
        self.parts = l2c.caches
        self.carve = (
            int(math.floor(pinning.set_aside_fraction * l2c.ways)) if gpu.uses_pinning else 0
        )
        self.set_aside_bytes = self.carve * l2c.sets * l2c.line_bytes  # in each of the caches
        self.info: dict[str, Any] = {
            "mechanism": pinning.mechanism,
            "scope": pinning.scope,
            "set_aside_bytes": self.set_aside_bytes // self.parts if gpu.uses_pinning else 0,
            "set_aside_ways": self.carve,
            "rows": 0,
            "lines": 0,
            "lines_persisting": 0,
            "bytes": 0,
            "prefetch_ns": 0.0,
            "prefetch_charged": False,
            "hit_ratio": 0.0,
            "window_bytes": 0,
        }
        self.prefetching = gpu.uses_pin_prefetch and pinning.rows > 0
        self.per_table = gpu.uses_pinning and pinning.per_table
        if self.prefetching and not self.per_table:
            # Pinned once; the rows stay across batches, so the pre-kernel is reported, not
            # charged.
            self._pin(None)
        self.info["prefetch_charged"] = self.prefetching and self.per_table
        self.info["prefetch_overlaps"] = (
            self.prefetching and self.per_table and pinning.prefetch_overlaps
        )

    def _efficiency(self, tables: list[int] | None) -> float:
        """HBM efficiency of the pre-kernel's fetches: whole rows of consecutive lines."""
        n_tables = len(self.row_bytes)
        sizes = [self.row_bytes[t] for t in (tables if tables is not None else range(n_tables))]
        return self.cal.efficiency_for(float(np.mean(sizes)))

    def _pin(self, tables: list[int] | None) -> float:
        """The pre-kernel over the hottest rows of ``tables``; returns the bytes it fetches."""
        gpu, l2c, info = self.gpu, self.gpu.l2, self.info
        chosen = hot_rows(self.profile, gpu.pinning.rows, tables)
        lines = pin_lines(chosen, self.bases, self.row_bytes, l2c.line_bytes)
        # Coldest first: where a set's share of the set-aside overflows, the hottest stay.
        persisting, fetched = self.l2.persist(
            lines[::-1], self.carve, self.clock, sample=self.sample
        )
        pin_bytes = fetched * l2c.sector_bytes / self.parts  # sampled: every cache gets each line
        info["rows"] += int(sum(r.size for _, r in chosen))
        info["lines"] += int(lines.size)
        info["lines_persisting"] = persisting
        info["bytes"] += int(pin_bytes)
        info["prefetch_ns"] += pin_bytes / (gpu.hbm.peak_bandwidth_gbps * self._efficiency(tables))
        return pin_bytes

    def before_table(self, t: int) -> tuple[float, float, float]:
        """Before table ``t``'s kernel: (the pre-kernel's bytes fetched, its time charged in ns,
        the bytes that instead share HBM with the kernel); zeros where nothing is fetched."""
        if self.per_table:
            self.l2.reset_persisting()  # cudaCtxResetPersistingL2Cache before the next table
        if not (self.prefetching and self.per_table):
            return 0.0, 0.0, 0.0
        pre_bytes = self._pin([t])
        pre_ns = pre_bytes / (self.gpu.hbm.peak_bandwidth_gbps * self._efficiency([t]))
        if self.gpu.pinning.prefetch_overlaps:
            # Fire-and-forget: the fetches share HBM with this kernel instead of preceding it.
            return pre_bytes, 0.0, pre_bytes
        return pre_bytes, pre_ns, 0.0

    def table_policy(self, t: int, lookups) -> tuple[L2Policy, np.ndarray]:
        """Table ``t``'s L2 policy and the indices its kernel reads (remapped where the table
        is laid out hot rows first)."""
        gpu, l2c = self.gpu, self.gpu.l2
        policy = L2Policy(parts=self.parts, carve=self.carve)
        indices = lookups.indices
        if gpu.uses_hot_first_layout:
            # The table laid out hot rows first (nmp.gpu.hot_layout); the window, if any, below.
            ((_, hot),) = hot_rows(self.profile, gpu.pinning.rows, [t])
            indices = remap_indices(indices, hot_first_order(lookups.num_rows, hot))
        if gpu.uses_access_window:
            nbytes = window_bytes(hot.shape[0], self.row_bytes[t])
            check_window(nbytes, gpu.pinning.max_window_bytes, f"table {t}")
            lo = self.bases[t] // l2c.line_bytes
            ratio = window_hit_ratio(
                self.set_aside_bytes / self.parts, nbytes, gpu.pinning.hit_ratio
            )
            policy = L2Policy(
                parts=self.parts,
                window_lo=lo,
                window_hi=lo + -(-nbytes // l2c.line_bytes),
                hit_ratio=ratio,
                carve=self.carve,
            )
            self.info["hit_ratio"] = ratio
            self.info["window_bytes"] = nbytes
            self.info["rows"] = int(hot.shape[0])
            self.info["lines"] = -(-nbytes // l2c.line_bytes)
        return policy, indices

    def after_table(self) -> None:
        """After a kernel: the lines the window left persisting."""
        if self.gpu.uses_access_window:
            self.info["lines_persisting"] = int(np.count_nonzero(self.l2.pinned)) * self.sample
