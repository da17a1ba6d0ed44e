"""Modeled latency of each tier an embedding lookup can be served from.

* Host DRAM (L1, L2 and L3 entries live there): the idle latency of a random 64-B line read,
  measured by replaying scattered reads, spaced so that none queues behind another, through the
  DRAM engine of :mod:`nmp.memory` on a memory preset (default DDR4-3200). A row of ``b`` bytes
  is ``ceil(b / 64)`` lines of one open DRAM row: the first line's latency plus one burst per
  further line.
* L2 adds the dequantization of a row: chosen 2 ns (a 16- or 32-element row is a handful of
  SIMD instructions at ~3 GHz; sources give no figure), a field of :class:`TierLatency`. It is
  1/25 of a DRAM row read, so it has no leverage on the results.
* L3 reads its key -> substitute entry, then the substitute's row: two dependent DRAM reads.
* SSD: a miss reads the row from the key-value store on an NVMe SSD. ``ssd_read_us = 80``:
  NAND NVMe SSDs answer a 4-KB random read in 20-100 us and raw NAND reads take ~100 us (Pure
  Storage, "What is NVMe", purestorage.com/knowledge/what-is-nvme.html); 80 us is a NAND drive
  near the top of that range at queue depth 1. A request issues its misses together; the SSD
  serves up to its queue depth in parallel, so a request with misses pays one SSD read (an
  assumption that holds while misses per request stay below the queue depth, 26 < 32 here).

A request's modeled latency (the embedding part of an inference; the MLPs are not modeled):
its cached lookups are served one after the other by one core (their DRAM latencies add up),
then its misses, if any, cost one SSD read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

LINE_BYTES = 64
DEQUANT_NS = 2.0  # chosen, see the module docstring
SSD_READ_US = 80.0  # sourced range 20-100 us (see the module docstring)


@functools.cache
def dram_line_latency_ns(
    memory: str = "ddr4-3200aa", samples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """(idle latency of one random line read, time of one further burst) in ns on ``memory``."""
    # numba: loaded on use (start-up time)
    from nmp.memory import load_memory, make_requests, replay

    spec = load_memory(memory)
    rng = np.random.default_rng(seed)
    lines = rng.integers(0, spec.capacity_bytes // LINE_BYTES, samples, dtype=np.int64)
    # one request every 500 memory cycles: each finds the controller idle
    arrival = np.arange(samples, dtype=np.uint64) * np.uint64(500)
    stats = replay(make_requests(lines * LINE_BYTES, arrival=arrival), spec)
    return (
        float(stats.avg_read_latency_cycles * spec.tck_ns),
        float(spec.timing["nBL"] * spec.tck_ns),
    )


@dataclass(frozen=True)
class TierLatency:
    """Per-lookup latency of each tier in ns (see the module docstring)."""

    dram_line_ns: float
    burst_ns: float
    dequant_ns: float = DEQUANT_NS
    ssd_read_ns: float = SSD_READ_US * 1000.0

    @classmethod
    def model(cls, memory: str = "ddr4-3200aa", ssd_read_us: float = SSD_READ_US) -> TierLatency:
        line, burst = dram_line_latency_ns(memory)
        return cls(dram_line_ns=line, burst_ns=burst, ssd_read_ns=ssd_read_us * 1000.0)

    def row_ns(self, bytes_: int) -> float:
        lines = max(1, -(-int(bytes_) // LINE_BYTES))
        return self.dram_line_ns + (lines - 1) * self.burst_ns

    def per_code_ns(self, l1_row_bytes: int, l2_row_bytes: int) -> np.ndarray:
        """Latency of a lookup by engine code: miss (its DRAM part is 0; the SSD is charged per
        request), L1, L2, L3 via an L1 row, L3 via an L2 row."""
        l1 = self.row_ns(l1_row_bytes)
        l2 = self.row_ns(l2_row_bytes) + self.dequant_ns
        entry = self.dram_line_ns  # the 16-byte key -> substitute entry
        return np.array([0.0, l1, l2, entry + l1, entry + l2])

    def request_ns(
        self, codes: np.ndarray, req_off: np.ndarray, per_code: np.ndarray
    ) -> np.ndarray:
        """Modeled latency of every request (float64 [requests])."""
        cost = per_code[codes]
        csum = np.concatenate([[0.0], np.cumsum(cost)])
        cached = csum[req_off[1:]] - csum[req_off[:-1]]
        miss = np.concatenate([[0], np.cumsum(codes == 0)])
        has_miss = (miss[req_off[1:]] - miss[req_off[:-1]]) > 0
        return cached + np.where(has_miss, self.ssd_read_ns, 0.0)
