"""The embedding table in a real embedded key-value store on disk; cache misses read from it.

Two backends behind one small interface (``put_rows``, ``get_rows``, ``close``), registered by
name:

* ``lmdb`` (the default): LMDB through the ``lmdb`` binding (py-lmdb, maintained, manylinux
  wheels). A B+tree in one memory-mapped file; a read is a lookup in the mapped pages with no
  copy into a buffer cache of its own and no SQL layer: ``benchmarks/cache.py`` measures it
  several times faster per lookup than SQLite here, which is why it is the default.
* ``sqlite``: SQLite from the standard library (one table, the key as INTEGER PRIMARY KEY so a
  lookup is one rowid B-tree search), for a dependency-free install and as the comparison.

Keys are global row ids (int64); values are float32 rows stored as raw bytes. Both stores are
opened on a file in a folder the caller owns (a temporary one by default), and
:func:`measure_reads` times real lookups: lookups/s and per-request latency percentiles. The
file is fresh and in the OS page cache, so these are the software path of each store on this
machine; an SSD read is modeled separately (:mod:`nmp.cache.tiers`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from nmp.errors import NmpError
from nmp.registry import Registry


class KVStore(Protocol):
    name: str

    def put_rows(self, keys: np.ndarray, rows: np.ndarray) -> None: ...

    def get_rows(self, keys: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


class SqliteStore:
    """SQLite from the standard library: one rowid B-tree search a lookup."""

    name = "sqlite"

    def __init__(self, folder: Path, dim: int, rows: int = 0) -> None:
        self.dim = dim
        self._db = sqlite3.connect(str(folder / "table.sqlite"))
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("CREATE TABLE IF NOT EXISTS emb (k INTEGER PRIMARY KEY, v BLOB)")

    def put_rows(self, keys: np.ndarray, rows: np.ndarray) -> None:
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO emb VALUES (?, ?)",
                ((int(k), rows[i].tobytes()) for i, k in enumerate(keys)),
            )

    def get_rows(self, keys: np.ndarray) -> np.ndarray:
        out = np.empty((len(keys), self.dim), dtype=np.float32)
        cur = self._db.cursor()
        for i, k in enumerate(keys):
            row = cur.execute("SELECT v FROM emb WHERE k = ?", (int(k),)).fetchone()
            if row is None:
                raise NmpError(f"sqlite store: key {int(k)} is not in the table")
            out[i] = np.frombuffer(row[0], dtype=np.float32)
        return out

    def close(self) -> None:
        self._db.close()


# An LMDB entry's bytes beside its value (key, node header, page slack; chosen above lmdb's
# 16-byte node header and 8-byte key), the map's room over that, and its least size
LMDB_ENTRY_BYTES = 64
LMDB_MAP_SLACK = 4
LMDB_MIN_MAP_BYTES = 1 << 24


class LmdbStore:
    """LMDB (py-lmdb): a B+tree in one memory-mapped file, no copy, no SQL layer."""

    name = "lmdb"

    def __init__(self, folder: Path, dim: int, rows: int = 0) -> None:
        try:
            import lmdb  # an optional dependency: only this backend needs it
        except ImportError:
            raise NmpError("backend 'lmdb' needs the lmdb package (pip install lmdb)") from None
        self.dim = dim
        # the map is address space reserved up front: sized to the rows (a fixed 16 GiB failed
        # under `ulimit -v 8000000` with lmdb's MemoryError)
        map_bytes = max(LMDB_MIN_MAP_BYTES, LMDB_MAP_SLACK * rows * (4 * dim + LMDB_ENTRY_BYTES))
        try:
            self._env = lmdb.open(
                str(folder / "table.lmdb"), map_size=map_bytes, sync=False, metasync=False
            )
        except lmdb.Error as exc:
            raise NmpError(
                f"backend 'lmdb': cannot map {map_bytes:,} bytes for {rows:,} rows ({exc}); "
                "--backend sqlite needs no map"
            ) from None

    def put_rows(self, keys: np.ndarray, rows: np.ndarray) -> None:
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        kb = np.asarray(keys, dtype=">u8")  # big-endian: byte order = numeric order
        with self._env.begin(write=True) as txn:
            for i in range(len(kb)):
                txn.put(kb[i].tobytes(), rows[i].tobytes())

    def get_rows(self, keys: np.ndarray) -> np.ndarray:
        out = np.empty((len(keys), self.dim), dtype=np.float32)
        kb = np.asarray(keys, dtype=">u8")
        with self._env.begin(buffers=True) as txn:
            for i in range(len(kb)):
                v = txn.get(kb[i].tobytes())
                if v is None:
                    raise NmpError(f"lmdb store: key {int(keys[i])} is not in the table")
                out[i] = np.frombuffer(v, dtype=np.float32)
        return out

    def close(self) -> None:
        self._env.close()


#: The key-value stores ``nmp cache --backend`` measures, by name.
BACKENDS: Registry[Callable[[Path, int, int], KVStore]] = Registry("backend")
BACKENDS.register(LmdbStore, name="lmdb")
BACKENDS.register(SqliteStore, name="sqlite")


def open_store(name: str, folder: str | Path, dim: int, rows: int = 0) -> KVStore:
    """Backend ``name`` in ``folder`` for ``rows`` rows of ``dim`` floats."""
    cls = BACKENDS.get(name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return cls(folder, dim, rows)


def measure_reads(
    store: KVStore, keys: np.ndarray, req_off: np.ndarray, max_requests: int = 2000
) -> dict[str, Any]:
    """Read the keys of up to ``max_requests`` requests, one ``get_rows`` per request, and
    time it (wall clock): lookups/s, and mean / median / p90 latency per request and the mean
    per lookup in us. On a shared machine the mean carries the neighbours' preemptions; the
    median does not."""
    r = min(max_requests, len(req_off) - 1)
    t_req = np.empty(r)
    for i in range(r):
        ks = keys[req_off[i] : req_off[i + 1]]
        if ks.size == 0:
            t_req[i] = 0.0
            continue
        t0 = time.perf_counter()
        store.get_rows(ks)
        t_req[i] = time.perf_counter() - t0
    n = int(req_off[r])
    total = float(t_req.sum())
    return {
        "backend": store.name,
        "lookups_measured": n,
        # no lookup reached the store (every request hit the cache): nothing was measured,
        # not an infinite rate (it printed "inf lookups/s, 0.00 us per lookup")
        "lookups_per_s": n / total if n and total > 0 else None,
        "lookup_us": 1e6 * total / n if n else None,
        "request_avg_us": 1e6 * float(t_req.mean()) if r else 0.0,
        "request_p50_us": 1e6 * float(np.percentile(t_req, 50)) if r else 0.0,
        "request_p90_us": 1e6 * float(np.percentile(t_req, 90)) if r else 0.0,
    }
