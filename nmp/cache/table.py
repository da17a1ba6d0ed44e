"""The values of an untrained embedding table, for serving simulations without a trained model.

DLRM initializes every table uniformly in ±sqrt(1/rows) (facebookresearch/dlrm,
``create_emb``); row r of table t gets the same values whoever asks (a counter-based hash of
(seed, t, r, element)), so the rows a stream touches can be made without the whole table.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def init_rows(keys: np.ndarray, table_offsets: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """DLRM-initialized rows (float32 [n, dim]) of global rows ``keys``."""
    keys = np.asarray(keys, dtype=np.int64)
    t = np.searchsorted(table_offsets, keys, side="right") - 1
    rows_t = (table_offsets[1:] - table_offsets[:-1]).astype(np.float64)
    bound = np.sqrt(1.0 / rows_t[t])
    salt = np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x5EED) % (1 << 64))
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64)[:, None] * np.uint64(dim) + np.arange(dim, dtype=np.uint64)
        u = (_mix(z + salt) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return ((2.0 * u - 1.0) * bound[:, None]).astype(np.float32)
