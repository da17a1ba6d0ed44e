"""Real embedding lookups on this machine's CPU: ``torch.nn.functional.embedding_bag`` over one
fused table (every table's rows one after another, each table's indices shifted by its first
row, as FBGEMM's table-batched kernels lay them out), and FBGEMM's CPU table-batched embedding
where ``fbgemm-gpu-cpu`` imports.

Times are CPU time (the busiest thread's for the check's batches, the process's for the
microbenchmarks): on a shared machine the wall clock also counts the time other programs held
the cores. OpenMP's idle threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``, set
before torch loads) so that waiting is not counted as work.
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# chosen: a table that fits any L1 (64 rows x dim 16 x 4 B = 4 KiB) and enough lookups for
# ~50 ms on one core
L1_TABLE_ROWS, L1_TABLE_DIM, L1_LOOKUPS, L1_POOLING = 64, 16, 1_000_000, 80


def torch_quiet():
    """torch, with idle OpenMP threads sleeping (only effective before torch's first import)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    return torch


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@dataclass(frozen=True)
class FusedBatch:
    indices: object  # torch int64 tensor: rows of the fused table
    offsets: object  # torch int64 tensor: each bag's start
    lookups: int
    local_indices: object  # torch int64 tensor: rows within each table (FBGEMM's TBE)
    tbe_offsets: object  # offsets with the end appended (FBGEMM's TBE)


def fuse(batch, table_base: np.ndarray) -> FusedBatch:
    """One LookupBatch as indices and offsets into the fused table (bags table-major)."""
    torch = torch_quiet()
    local = np.concatenate([t.indices.astype(np.int64) for t in batch])
    idx = local + np.repeat(table_base[: len(batch)], [t.indices.size for t in batch])
    lens = np.concatenate([np.diff(t.offsets) for t in batch])
    ends = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return FusedBatch(
        torch.from_numpy(idx),
        torch.from_numpy(ends[:-1].copy()),
        int(idx.size),
        torch.from_numpy(local),
        torch.from_numpy(ends),
    )


@dataclass(frozen=True)
class PoolBatch:
    """A drawn batch kept for the check's samples: each lookup's row within its table, its
    table, and the bags' offsets (the same in every sample)."""

    local: np.ndarray  # int64: row within the table
    table: np.ndarray  # int64: the lookup's table
    ends: np.ndarray  # int64: each bag's start, then the end


def pool_batch(batch) -> PoolBatch:
    """One LookupBatch as :class:`PoolBatch` (bags table-major, as :func:`fuse`)."""
    local = np.concatenate([t.indices.astype(np.int64) for t in batch])
    table = np.repeat(np.arange(len(batch), dtype=np.int64), [t.indices.size for t in batch])
    lens = np.concatenate([np.diff(t.offsets) for t in batch])
    return PoolBatch(local, table, np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))


@dataclass(frozen=True)
class RowMap:
    """A bijection of every table's rows onto themselves: row -> (scale x row + shift) mod
    rows, scale coprime with rows. A fresh map moves every hot row to another line, so the
    caches hold nothing of the previous sample's rows: each sample starts from caches cold
    for its rows, as the model's warm-up does, without flushing anything."""

    scale: np.ndarray  # int64 per table
    shift: np.ndarray  # int64 per table

    @classmethod
    def draw(cls, rows: Sequence[int] | np.ndarray, rng: np.random.Generator) -> RowMap:
        n = np.asarray(rows, dtype=np.int64)
        scale = np.ones_like(n)
        for t, r in enumerate(n):
            while r > 1:
                a = int(rng.integers(1, r))
                if np.gcd(a, r) == 1:
                    scale[t] = a
                    break
        return cls(scale, (rng.random(n.size) * n).astype(np.int64))


def fuse_mapped(b: PoolBatch, rows: np.ndarray, table_base: np.ndarray, m: RowMap) -> FusedBatch:
    """A pool batch with its rows mapped by ``m``, as indices into the fused table."""
    torch = torch_quiet()
    local = (m.scale[b.table] * b.local + m.shift[b.table]) % rows[b.table]
    return FusedBatch(
        torch.from_numpy(local + table_base[b.table]),
        torch.from_numpy(b.ends[:-1].copy()),
        int(local.size),
        torch.from_numpy(local),
        torch.from_numpy(b.ends),
    )


def thread_cpu_s() -> dict[int, float]:
    """Each thread's CPU seconds, by thread id ({} where the system does not give them: Linux
    lists a process's threads in /proc/self/task, and a thread's CPU clock id is
    ``(~tid << 3) | 6``, glibc's ``MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)``)."""
    out: dict[int, float] = {}
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return out
    for tid in tids:
        # a thread that ended meanwhile, or a system without such clocks, gives no figure
        with contextlib.suppress(OSError, OverflowError):
            out[tid] = time.clock_gettime((~tid << 3) | 6)
    return out


def involuntary_switches() -> int:
    """Times the process's threads were preempted so far (another program took the core)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


@dataclass(frozen=True)
class Sample:
    """One timed batch: its lookups, the process's CPU seconds (every thread's), the busiest
    thread's CPU seconds (the batch's time on an otherwise idle machine: the other threads
    wait for it), wall seconds, and whether a thread was preempted meanwhile."""

    lookups: int
    cpu_s: float
    busiest_s: float
    wall_s: float
    preempted: bool


def timed_after_warmup(
    run: Callable[[FusedBatch], object],
    warm: Sequence[FusedBatch],
    timed: FusedBatch,
    threads: int,
) -> Sample:
    """Run ``warm`` (untimed: the caches' history, as the model's warm-up), then ``timed``."""
    torch = torch_quiet()
    torch.set_num_threads(threads)
    for b in warm:
        run(b)
    # the other threads' clocks are read around the call (they sleep meanwhile); the calling
    # thread's own clock right at it, so that reading the others' does not count
    me = threading.get_native_id()
    t0, n0 = thread_cpu_s(), involuntary_switches()
    c0, w0, m0 = time.process_time(), time.perf_counter(), time.thread_time()
    run(timed)
    m1, wall, cpu = time.thread_time(), time.perf_counter() - w0, time.process_time() - c0
    n1, t1 = involuntary_switches(), thread_cpu_s()
    others = [v - t0.get(tid, 0.0) for tid, v in t1.items() if tid != me]
    busiest = max([m1 - m0, *others])
    return Sample(timed.lookups, cpu, busiest, wall, n1 > n0)


def embedding_bag_runner(weights) -> Callable[[FusedBatch], object]:
    torch = torch_quiet()

    def run(b: FusedBatch) -> object:
        return torch.nn.functional.embedding_bag(b.indices, weights, b.offsets, mode="sum")

    return run


def fbgemm_runner(rows: Sequence[int], dim: int, seed: int):
    """(FBGEMM's CPU table-batched embedding bag over the tables, None) or (None, why it is
    not available)."""
    torch = torch_quiet()
    try:
        from fbgemm_gpu.split_table_batched_embeddings_ops_common import (  # type: ignore[import-not-found]
            EmbeddingLocation,
        )
        from fbgemm_gpu.split_table_batched_embeddings_ops_training import (  # type: ignore[import-not-found]
            ComputeDevice,
            SplitTableBatchedEmbeddingBagsCodegen,
        )
    except Exception as exc:  # an ABI mismatch raises OSError, a missing package ImportError
        return None, f"fbgemm-gpu-cpu does not import with torch {torch.__version__}: " + (
            str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        )
    torch.manual_seed(seed)
    tbe = SplitTableBatchedEmbeddingBagsCodegen(
        [(int(r), dim, EmbeddingLocation.HOST, ComputeDevice.CPU) for r in rows]
    )

    def run(b: FusedBatch) -> object:
        # TBE takes per-table indices (not shifted) and offsets over T x B bags, plus the end
        with torch.no_grad():
            return tbe(b.local_indices, b.tbe_offsets)

    return run, None


def table_lookup_ns(
    table_bytes: int, dim: int, *, lookups: int = L1_LOOKUPS, tries: int = 3, seed: int = 0
) -> float:
    """CPU ns per lookup of ``embedding_bag`` (sum, bags of :data:`L1_POOLING`) on one core over
    one ``table_bytes`` table of FP32 rows of ``dim``, uniform random rows: the fastest of
    ``tries`` (the least disturbed by other programs), after one untimed pass (pages mapped,
    caches holding what fits)."""
    torch = torch_quiet()
    torch.set_num_threads(1)
    rows = max(table_bytes // (4 * dim), 1)
    rng = np.random.default_rng(seed)
    weights = torch.empty(rows, dim).fill_(0.5)  # every page touched, as a trained table's
    idx = torch.from_numpy(rng.integers(0, rows, lookups).astype(np.int64))
    offs = torch.arange(0, lookups, L1_POOLING, dtype=torch.int64)
    torch.nn.functional.embedding_bag(idx, weights, offs, mode="sum")
    best = float("inf")
    for _ in range(tries):
        c0 = cpu_seconds()
        torch.nn.functional.embedding_bag(idx, weights, offs, mode="sum")
        best = min(best, cpu_seconds() - c0)
    return best * 1e9 / lookups


# chosen: calls per timed loop of the call-cost microbenchmark (~10 us each: ~5 ms a loop), and
# loops (the median is the figure: other programs' time slices only ever slow a loop)
CALL_REPEATS, CALL_LOOPS = 500, 5
# chosen: bags of one lookup each in the call that parallelizes (enough that every thread gets
# bags: embedding_bag splits its bags over the threads)
SYNC_BAGS = 256


@dataclass(frozen=True)
class CallCost:
    """CPU ns of one ``embedding_bag`` call beyond its lookups (one bag of one lookup on one
    thread), and what each thread beyond the first adds to a call whose bags are split over
    ``threads`` threads; the loops' spread (slowest / fastest median loop) for the record."""

    call_ns: float
    thread_sync_ns: float
    threads: int
    spread: float


def _ns_per_call(indices, weights, offsets, threads: int) -> list[float]:
    """CPU ns (the process's: every thread's) per call of each of CALL_LOOPS timed loops."""
    torch = torch_quiet()
    torch.set_num_threads(threads)
    out = []
    for _ in range(CALL_LOOPS):
        c0 = cpu_seconds()
        for _ in range(CALL_REPEATS):
            torch.nn.functional.embedding_bag(indices, weights, offsets, mode="sum")
        out.append((cpu_seconds() - c0) * 1e9 / CALL_REPEATS)
    return out


def call_cost(threads: int) -> CallCost:
    """The fixed CPU cost of a call (:class:`CallCost`): medians of loops of tiny calls on an
    L1-resident table, the two thread counts' loops interleaved so that a load change on a
    shared machine meets both."""
    torch = torch_quiet()
    weights = torch.empty(L1_TABLE_ROWS, L1_TABLE_DIM).fill_(0.5)
    one = torch.zeros(1, dtype=torch.int64)
    many = torch.arange(SYNC_BAGS, dtype=torch.int64) % L1_TABLE_ROWS
    bags = torch.arange(SYNC_BAGS, dtype=torch.int64)
    single, serial, parallel = [], [], []
    for _ in range(3):  # chosen: three interleaved rounds
        single += _ns_per_call(one, weights, one, 1)
        serial += _ns_per_call(many, weights, bags, 1)
        if threads > 1:
            parallel += _ns_per_call(many, weights, bags, threads)
    call_ns = float(np.median(single))
    sync = (
        max(float(np.median(parallel) - np.median(serial)), 0.0) / (threads - 1)
        if threads > 1
        else 0.0
    )
    return CallCost(call_ns, sync, threads, float(max(single) / max(min(single), 1e-9)))


def l1_lookup_ns(dim: int = L1_TABLE_DIM) -> tuple[float, int]:
    """(CPU ns per lookup of embedding_bag on one core over an L1-resident table, its dim)."""
    return table_lookup_ns(L1_TABLE_ROWS * dim * 4, dim), dim


__all__ = [
    "CallCost",
    "FusedBatch",
    "call_cost",
    "PoolBatch",
    "RowMap",
    "Sample",
    "fuse_mapped",
    "involuntary_switches",
    "thread_cpu_s",
    "pool_batch",
    "timed_after_warmup",
    "embedding_bag_runner",
    "fbgemm_runner",
    "fuse",
    "l1_lookup_ns",
    "table_lookup_ns",
]
