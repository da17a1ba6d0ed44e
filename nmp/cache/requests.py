"""Inference request streams: one request = one sample of a lookup batch (its bag in every
table), as an EVStore inference request looks up one key per table.

Keys are global rows (table offset + row). :func:`request_stream` draws batches from a workload
spec's generator (Zipf, Pareto, uniform or the reuse levels; seeded) until ``requests`` samples
are there; :func:`stream_from_batches` takes any :class:`~nmp.workload.LookupBatch` list, e.g. a
user's index file (:func:`nmp.workload.load_index_file`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.errors import NmpError
from nmp.workload import LookupBatch, WorkloadSpec, generate_batch


@dataclass(frozen=True, eq=False)
class RequestStream:
    """Lookups in request order: ``keys[req_off[r]:req_off[r + 1]]`` are request r's global
    rows (table-major within the request); :meth:`tables_of` maps global rows to their tables."""

    keys: np.ndarray  # int64 [n]
    req_off: np.ndarray  # int64 [requests + 1]
    table_offsets: np.ndarray  # int64 [T + 1]: first global row of each table
    dims: np.ndarray  # int64 [T]
    row_bytes: np.ndarray  # int64 [T]: bytes of one full-precision row

    @property
    def requests(self) -> int:
        return int(self.req_off.shape[0]) - 1

    @property
    def lookups(self) -> int:
        return int(self.keys.shape[0])

    def tables_of(self, keys: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.table_offsets, keys, side="right") - 1

    def head(self, requests: int) -> RequestStream:
        """The first ``requests`` requests."""
        r = min(requests, self.requests)
        off = self.req_off[: r + 1]
        return RequestStream(
            self.keys[: off[-1]], off, self.table_offsets, self.dims, self.row_bytes
        )


def stream_from_batches(batches: list[LookupBatch], row_bytes_per_elem: int = 4) -> RequestStream:
    """Reorder the lookups of ``batches`` (EmbeddingBag CSR per table) into requests."""
    if not batches:
        raise NmpError("no batches to build requests from")
    first = batches[0]
    rows = np.array([t.num_rows for t in first.tables], dtype=np.int64)
    dims = np.array([t.dim for t in first.tables], dtype=np.int64)
    toff = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    keys_parts, req_parts, lengths = [], [], []
    base = 0
    for batch in batches:
        per_req = np.zeros(batch.batch, dtype=np.int64)
        for t, tl in enumerate(batch.tables):
            keys_parts.append(tl.indices + toff[t])
            req_parts.append(base + tl.bag_ids())
            per_req += tl.lengths
        lengths.append(per_req)
        base += batch.batch
    keys = np.concatenate(keys_parts)
    req = np.concatenate(req_parts)
    order = np.argsort(req, kind="stable")  # tables stay in order within a request
    req_off = np.zeros(base + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=req_off[1:])
    return RequestStream(keys[order], req_off, toff, dims, dims * row_bytes_per_elem)


def request_stream(spec: WorkloadSpec, requests: int, seed: int | None = None) -> RequestStream:
    """``requests`` inference requests of ``spec`` (batches with seeds seed, seed + 1, ...)."""
    if requests < 1:
        raise NmpError(f"requests must be >= 1, got {requests}")

    base = spec.seed if seed is None else int(seed)
    count = -(-requests // spec.batch)
    batches = [generate_batch(spec, base + i) for i in range(count)]
    elem = spec.tables[0].element.bytes
    return stream_from_batches(batches, elem).head(requests)
