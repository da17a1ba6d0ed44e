"""Lookup batches in the EmbeddingBag convention, and their generation from a WorkloadSpec.

Per table, ``indices`` (int64 [n]) and ``offsets`` (int64 [batch + 1], offsets[0] = 0,
offsets[-1] = n, non-decreasing): bag b pools ``indices[offsets[b]:offsets[b + 1]]``. This is
torchrec's KeyedJaggedTensor / FBGEMM convention and what ``torch.nn.EmbeddingBag(mode="sum",
include_last_offset=True)`` takes as is (with the default ``include_last_offset=False`` pass
``offsets[:-1]``). ``weights`` (float32 [n]) are per-sample weights, or None.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from nmp.errors import NmpError
from nmp.workload import sampling
from nmp.workload.seeding import rng_of
from nmp.workload.spec import WorkloadSpec


@dataclass(frozen=True, eq=False)
class TableLookups:
    """The lookups of one table for one batch (CSR: indices + offsets)."""

    indices: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray | None
    num_rows: int
    dim: int

    @property
    def batch(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @property
    def num_lookups(self) -> int:
        return int(self.indices.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        """Lookups per bag (int64 [batch])."""
        return np.diff(self.offsets)

    def bag_ids(self) -> np.ndarray:
        """The bag of each lookup (int64 [n]), e.g. for ``np.add.at`` style reductions."""
        return np.repeat(np.arange(self.batch, dtype=np.int64), self.lengths)

    def check(self, where: str = "lookups") -> None:
        """Raise :class:`NmpError` unless this is valid EmbeddingBag input (see module doc)."""
        problem = lookup_problem(self.indices, self.offsets, self.weights, self.num_rows)
        if problem:
            raise NmpError(f"{where}: {problem}")
        if self.dim < 1:
            raise NmpError(f"{where}: dim must be >= 1, got {self.dim}")


def lookup_problem(
    indices: np.ndarray, offsets: np.ndarray, weights: np.ndarray | None, num_rows: int | None
) -> str | None:
    """What makes (indices, offsets, weights) invalid EmbeddingBag input, or None."""
    if indices.ndim != 1 or indices.dtype != np.int64:
        return f"indices must be a 1-D int64 array, got {indices.dtype} {indices.shape}"
    if offsets.ndim != 1 or offsets.dtype != np.int64:
        return f"offsets must be a 1-D int64 array, got {offsets.dtype} {offsets.shape}"
    if offsets.shape[0] < 1:
        return "offsets must have batch + 1 >= 1 entries"
    if offsets[0] != 0:
        return f"offsets[0] must be 0, got {offsets[0]}"
    if offsets[-1] != indices.shape[0]:
        return f"offsets[-1] must equal len(indices) = {indices.shape[0]}, got {offsets[-1]}"
    drops = np.flatnonzero(np.diff(offsets) < 0)
    if drops.size:
        i = int(drops[0])
        return (
            f"offsets must be non-decreasing: offsets[{i}] = {offsets[i]} > "
            f"offsets[{i + 1}] = {offsets[i + 1]}"
        )
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0:
            return f"index {lo} at position {int(np.argmin(indices))} is negative"
        if num_rows is not None and hi >= num_rows:
            return (
                f"index {hi} at position {int(np.argmax(indices))} is out of range "
                f"for a table of {num_rows} rows"
            )
    if weights is not None:
        if weights.ndim != 1 or weights.dtype != np.float32:
            return f"weights must be a 1-D float32 array, got {weights.dtype} {weights.shape}"
        if weights.shape[0] != indices.shape[0]:
            return f"weights has {weights.shape[0]} entries, indices {indices.shape[0]}"
        bad = np.flatnonzero(~np.isfinite(weights))
        if bad.size:
            i = int(bad[0])
            return f"weights must be finite: weights[{i}] = {weights[i]}"
    return None


@dataclass(frozen=True, eq=False)
class LookupBatch:
    """One batch over all tables of a workload."""

    tables: tuple[TableLookups, ...]

    @property
    def batch(self) -> int:
        return self.tables[0].batch if self.tables else 0

    @property
    def num_lookups(self) -> int:
        return sum(t.num_lookups for t in self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def __iter__(self) -> Iterator[TableLookups]:
        return iter(self.tables)

    def __getitem__(self, i: int) -> TableLookups:
        return self.tables[i]

    def check(self, where: str = "batch") -> None:
        for t, lookups in enumerate(self.tables):
            lookups.check(f"{where} table {t}")
            if lookups.batch != self.batch:
                raise NmpError(f"{where} table {t}: {lookups.batch} bags, table 0 has {self.batch}")


def generate_table(spec: WorkloadSpec, table: int, seed: int | None = None) -> TableLookups:
    """Lookups of table ``table`` for one batch of ``spec``.

    The draw depends on (``seed`` or ``spec.seed``, table); the rank->row permutation on
    (``spec.seed``, table) only, so batches drawn with different seeds share their hot rows.
    """
    tspec = spec.tables[table]
    batch_seed = spec.seed if seed is None else int(seed)
    if batch_seed < 0:
        raise NmpError(f"seed must be >= 0, got {batch_seed}")
    rng = rng_of(batch_seed, table)  # (= np.random.default_rng([batch_seed, table]))
    lengths = sampling.pooling_lengths(rng, spec.table_pooling(table), spec.batch)
    offsets = np.zeros(spec.batch + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n = int(offsets[-1])
    indices = draw_rows(spec, table, rng, n)
    weights = rng.random(n, dtype=np.float32) if spec.weighted else None
    return TableLookups(indices, offsets, weights, tspec.rows, tspec.dim)


def draw_rows(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` independent rows of ``table`` under the workload's access distribution (the draws
    of :func:`generate_table`, for generators that compose their own bags); the distribution
    is the registered variant :data:`nmp.workload.distributions.DISTRIBUTIONS` names."""
    return spec.access.draw(spec, table, rng, n)


def generate_batch(spec: WorkloadSpec, seed: int | None = None) -> LookupBatch:
    """One batch of lookups for every table of ``spec`` (deterministic in ``seed``, which
    defaults to ``spec.seed``)."""
    return LookupBatch(tuple(generate_table(spec, t, seed) for t in range(len(spec.tables))))


def generate_batches(spec: WorkloadSpec, count: int, seed: int | None = None) -> list[LookupBatch]:
    """``count`` successive batches with seeds seed, seed + 1, ... (same hot rows)."""
    base = spec.seed if seed is None else int(seed)
    return [generate_batch(spec, base + i) for i in range(count)]
