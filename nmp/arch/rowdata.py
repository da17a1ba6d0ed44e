"""The contents of embedding tables held in the nodes' memory, without materializing them.

Tables as large as Criteo's (33.8M rows, 8.6 GB at dim 64) are never stored. Every element is a
deterministic function of (seed, table, row, column): a SplitMix64 hash mapped to a float in
[-1, 1) on a 2^-23 grid, cast to the table's dtype. Any row's content is therefore reproducible
(a test builds a ``torch.nn.EmbeddingBag`` with the same weights), and only the rows a batch
touches are generated. Rows written since (parity updates, training) live in a sparse overlay
per table that takes precedence over the hash.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nmp.errors import NmpError

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _splitmix(x):  # pragma: no cover - compiled
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def _hash_rows(base, rows, dim):  # pragma: no cover - compiled
    out = np.empty((rows.shape[0], dim), dtype=np.float32)
    scale = np.float32(1.0 / (1 << 23))
    for i in range(rows.shape[0]):
        h = _splitmix(base ^ np.uint64(rows[i]))
        for c in range(dim):
            z = _splitmix(h + np.uint64(c))
            out[i, c] = np.float32(z >> np.uint64(40)) * scale - np.float32(1.0)
    return out


def _table_base(seed: int, table: int) -> np.uint64:
    with np.errstate(over="ignore"):
        return np.uint64(seed) * _GOLDEN ^ (np.uint64(table + 1) * _MIX1) ^ _MIX2


def _to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float32 values to what a table of ``dtype`` stores, returned as float32."""
    if dtype == "float32":
        return values
    if dtype == "float16":
        return values.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = values.view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype == "int8":
        return np.rint(values * 127.0).astype(np.float32)
    raise NmpError(f"unsupported table dtype '{dtype}'")


def base_rows(seed: int, table: int, rows: np.ndarray, dim: int, dtype: str = "float32"):
    """Initial contents of ``rows`` of ``table``: float32 [len(rows), dim]."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return _to_dtype(_hash_rows(_table_base(seed, table), rows, dim), dtype)


class RowStore:
    """Table contents: hashed initial values plus an overlay of written rows per table."""

    def __init__(self, seed: int, dims: list[int], dtypes: list[str], num_rows: list[int]):
        self.seed = int(seed)
        self.dims = list(dims)
        self.dtypes = list(dtypes)
        self.num_rows = list(num_rows)
        self._keys = [np.empty(0, np.int64) for _ in dims]
        self._vals = [np.empty((0, d), np.float32) for d in dims]

    def read(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Current contents of ``rows`` of ``table`` (float32 [n, dim])."""
        rows = np.asarray(rows, dtype=np.int64)
        out = base_rows(self.seed, table, rows, self.dims[table], self.dtypes[table])
        keys = self._keys[table]
        if keys.size and rows.size:
            pos = np.minimum(np.searchsorted(keys, rows), keys.size - 1)
            hit = keys[pos] == rows
            out[hit] = self._vals[table][pos[hit]]
        return out

    def write(self, table: int, rows: np.ndarray, values: np.ndarray) -> None:
        """Store ``values`` (float32 [n, dim]) at ``rows``; with repeated rows the last wins."""
        rows = np.asarray(rows, dtype=np.int64)
        values = np.asarray(values, dtype=np.float32).reshape(rows.size, self.dims[table])
        # keep the last write of each row
        rev_rows = rows[::-1]
        uniq, first = np.unique(rev_rows, return_index=True)
        new_vals = values[::-1][first]
        keys, vals = self._keys[table], self._vals[table]
        merged = np.union1d(keys, uniq)
        out = np.empty((merged.size, self.dims[table]), np.float32)
        if keys.size:
            out[np.searchsorted(merged, keys)] = vals
        out[np.searchsorted(merged, uniq)] = new_vals
        self._keys[table], self._vals[table] = merged, out

    def written_rows(self, table: int) -> np.ndarray:
        return self._keys[table]

    def dense_table(self, table: int) -> np.ndarray:
        """The whole table (for tests and small tables only)."""
        return self.read(table, np.arange(self.num_rows[table], dtype=np.int64))


@njit(cache=True)
def _unit_hash(keys, seed):  # pragma: no cover - compiled
    out = np.empty(keys.shape[0], dtype=np.float64)
    base = _splitmix(np.uint64(seed))
    for i in range(keys.shape[0]):
        z = _splitmix(base ^ np.uint64(keys[i]))
        out[i] = np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return out


def unit_hash(keys: np.ndarray, seed: int) -> np.ndarray:
    """A deterministic uniform number in [0, 1) per non-negative int64 key."""
    return _unit_hash(np.ascontiguousarray(keys, dtype=np.int64), np.uint64(seed))


__all__ = ["RowStore", "base_rows", "unit_hash"]
