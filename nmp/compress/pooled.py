"""Pooled embeddings from real lookups: what the embedding all-to-all carries.

A workload preset's batches (``nmp.workload``) go through ``torch.nn.functional.embedding_bag``
(sum) on tables initialised as DLRM does (each value uniform in ``±sqrt(1/rows)``,
facebookresearch/dlrm ``create_emb``). Only the rows a batch touches are materialised: each
value is a counter-based hash of (seed, table, row, column), so a 10M-row table costs only its
touched rows. These are *initial* tables; the trainer (``nmp train --compress``) measures the
ratio on values as they train.

The all-to-all chunks: with tables owned round-robin (table ``t`` on node ``t mod N``, DLRM's
table-wise model parallelism) and the batch split in ``N`` equal sample slices (data-parallel
MLP), node ``owner(t)`` sends ``pooled[t][slice_j]`` to every node ``j != owner(t)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from nmp.errors import NmpError
from nmp.workload import generate_batch, load_workload


def _uniform(keys: np.ndarray, seed: int) -> np.ndarray:
    """SplitMix64 finalizer of ``keys + salt(seed)`` -> uniform [0, 1) float64."""
    salt = np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) % (1 << 64))
    z = keys + salt
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def init_rows(table: int, rows: np.ndarray, num_rows: int, dim: int, seed: int) -> np.ndarray:
    """DLRM's initial values of ``rows`` of ``table``: uniform in ±sqrt(1/num_rows)."""
    key = (np.uint64(table) << np.uint64(40)) + rows.astype(np.uint64)
    keys = key[:, None] * np.uint64(dim) + np.arange(dim, dtype=np.uint64)
    bound = np.sqrt(1.0 / num_rows)
    return ((2.0 * _uniform(keys, seed) - 1.0) * bound).astype(np.float32)


@dataclass(frozen=True)
class PooledBatch:
    """Per table the pooled [batch, dim] float32 vectors of one batch, and the table sizes."""

    workload: str
    pooled: tuple[np.ndarray, ...]
    table_rows: tuple[int, ...]

    @property
    def batch(self) -> int:
        return self.pooled[0].shape[0]


def pooled_batch(workload: str, *, seed: int = 0, batch: int = 0) -> PooledBatch:
    """One batch of ``workload`` pooled through EmbeddingBag (``batch`` 0: the preset's)."""

    spec = load_workload(workload)
    if batch:
        spec = replace(spec, batch=int(batch))
    lookups = generate_batch(spec, seed)
    out = []
    for t, lk in enumerate(lookups):
        uniq, inv = np.unique(lk.indices, return_inverse=True)
        weight = torch.from_numpy(init_rows(t, uniq, lk.num_rows, lk.dim, seed))
        bags = torch.nn.functional.embedding_bag(
            torch.from_numpy(inv.astype(np.int64)),
            weight,
            torch.from_numpy(lk.offsets[:-1].astype(np.int64)),
            mode="sum",
            per_sample_weights=None if lk.weights is None else torch.from_numpy(lk.weights),
        )
        out.append(bags.numpy())
    return PooledBatch(workload, tuple(out), tuple(t.rows for t in spec.tables))


def owner(table: int, nodes: int) -> int:
    return table % nodes


def sample_slices(batch: int, nodes: int) -> list[slice]:
    if nodes < 1 or nodes > batch:
        raise NmpError(f"nodes must be in 1..batch ({batch}), got {nodes}")
    edges = [batch * j // nodes for j in range(nodes + 1)]
    return [slice(edges[j], edges[j + 1]) for j in range(nodes)]


def alltoall_chunks(pb: PooledBatch, nodes: int) -> list[tuple[int, int, np.ndarray]]:
    """(table, destination node, chunk) of every message that crosses a node boundary."""
    slices = sample_slices(pb.batch, nodes)
    return [
        (t, j, np.ascontiguousarray(x[slices[j]]))
        for t, x in enumerate(pb.pooled)
        for j in range(nodes)
        if j != owner(t, nodes)
    ]


def size_class(rows: int) -> str:
    """Table kind by size (chosen edges): one-hot features of tiny tables repeat most."""
    if rows <= 1000:
        return "small (<=1K rows)"
    if rows < 1_000_000:
        return "medium"
    return "large (>=1M rows)"
