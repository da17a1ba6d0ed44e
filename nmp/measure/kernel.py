"""Real embedding lookups on this machine's CPU: ``torch.nn.functional.embedding_bag`` over one
fused table (every table's rows one after another, each table's indices shifted by its first
row, as FBGEMM's table-batched kernels lay them out), and FBGEMM's CPU table-batched embedding
where ``fbgemm-gpu-cpu`` imports.

Times are the process's CPU time divided by the threads (lookups per thread-second, times the
threads): on a shared machine the wall clock also counts the time other programs held the
cores. OpenMP's idle threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``, set before
torch loads) so that waiting is not counted as work.
"""

from __future__ import annotations

import os
import resource
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
class Timing:
    """A row's lookups per second: of the threads' CPU time in its least disturbed group of
    batches, of the wall time of all groups, and the groups' spread (slowest / fastest)."""

    cpu_rate: float
    wall_rate: float
    spread: float


def timed_lookups_per_s(
    run: Callable[[FusedBatch], object],
    warm: Sequence[FusedBatch],
    groups: Sequence[Sequence[FusedBatch]],
    threads: int,
) -> Timing:
    """Time ``run`` over each group of batches in turn after ``warm`` (the caches at steady
    state, as the model's). On a shared machine other programs' time slices evict the caches
    and slow some groups; the fastest group is the least disturbed (chosen: the figure)."""
    torch = torch_quiet()
    torch.set_num_threads(threads)
    for b in warm:
        run(b)
    rates, n_all, w0 = [], 0, time.perf_counter()
    for group in groups:
        c0 = cpu_seconds()
        for b in group:
            run(b)
        n = sum(b.lookups for b in group)
        rates.append(n / max((cpu_seconds() - c0) / threads, 1e-9))
        n_all += n
    wall = time.perf_counter() - w0
    return Timing(max(rates), n_all / max(wall, 1e-9), max(rates) / max(min(rates), 1e-9))


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


def l1_lookup_ns(dim: int = L1_TABLE_DIM) -> tuple[float, int]:
    """(CPU ns per lookup of embedding_bag on one core over an L1-resident table, its dim)."""
    return table_lookup_ns(L1_TABLE_ROWS * dim * 4, dim), dim


__all__ = [
    "FusedBatch",
    "Timing",
    "timed_lookups_per_s",
    "embedding_bag_runner",
    "fbgemm_runner",
    "fuse",
    "l1_lookup_ns",
    "table_lookup_ns",
]
