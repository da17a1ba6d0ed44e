"""In-memory parity updates: the data's unit computes ``old XOR new`` and writes ``new``; the
parity's unit applies the delta in place (``parity_i ^= g_ij * delta``, GF(2^8) for
Reed-Solomon), as in ECRec's difference propagation but on raw bits, so recovery is exact.

Rows of a table are striped over the nodes of ``parity.level`` by
:class:`nmp.coding.StripeLayout` (k data rows + r parity rows on k + r distinct nodes). Parity
of a stripe is materialized when a stripe is first touched, as the encode of its current rows
(the parity the system wrote when the table was loaded); afterwards it only changes in place.

The timing of an update is :mod:`nmp.arch.parity_timing`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nmp.arch.parity_timing import XOR_WIDTH_BYTES, parity_nodes, time_parity
from nmp.coding import ReedSolomonCode, StripeLayout, XorCode, gf_mul
from nmp.errors import NmpError
from nmp.jit import njit
from nmp.parity_codes import PARITY_CODES
from nmp.results import OpResult

if TYPE_CHECKING:
    from nmp.coding import ReedSolomonCode, StripeLayout, XorCode


@dataclass
class ParityState:
    code: XorCode | ReedSolomonCode
    layout: StripeLayout
    nodes: int
    stripes: list[np.ndarray]  # per table: sorted stripe ids with materialized parity
    parity: list[np.ndarray]  # per table: uint8 [m, r, row_bytes]


def _state(arch) -> ParityState:
    if arch._parity_state is None:
        p = arch.spec.parity
        nodes, _, _ = parity_nodes(arch)
        if p.k + p.r > nodes:
            raise NmpError(
                f"arch.parity: a stripe of k + r = {p.k + p.r} rows needs as many nodes; "
                f"level '{p.level}' has {nodes}"
            )
        code = PARITY_CODES.get(p.code).build(p.k, p.r)
        ntab = len(arch.tables)
        arch._parity_state = ParityState(
            code,
            StripeLayout(nodes, p.k, p.r, rotating=p.rotating),
            nodes,
            [np.empty(0, np.int64) for _ in range(ntab)],
            [np.empty((0, p.r, 4 * arch.tables[t].dim), np.uint8) for t in range(ntab)],
        )
    return arch._parity_state


@njit(cache=True, nogil=True)
def _xor_rows(parity, index, delta):  # pragma: no cover - compiled
    for i in range(index.shape[0]):
        p = index[i]
        for w in range(delta.shape[1]):
            parity[p, w] ^= delta[i, w]


def xor_into(parity: np.ndarray, index: np.ndarray, delta: np.ndarray) -> None:
    """The parity unit's read-modify-write, in place: ``parity[index[i]] ^= delta[i]`` in order
    (a repeated index accumulates), on 64-bit words (the unit's datapath width,
    ``XOR_WIDTH_BYTES``) where the rows are whole words, else on bytes. ``parity`` is a
    C-contiguous 2-D array of parity rows; ``delta`` holds as many bytes per row. The one XOR
    of the kit: :func:`parity_update` and the trainer's parity (``nmp.train``) both call it."""
    rows = parity.shape[0]
    pb = parity.view(np.uint8).reshape(rows, -1)
    db = np.ascontiguousarray(delta).view(np.uint8).reshape(len(index), -1)
    if db.shape[1] != pb.shape[1]:
        raise NmpError(f"xor_into: {db.shape[1]} delta bytes per row, parity has {pb.shape[1]}")
    word = XOR_WIDTH_BYTES if pb.shape[1] % XOR_WIDTH_BYTES == 0 else 1
    dt = np.uint64 if word == XOR_WIDTH_BYTES else np.uint8
    _xor_rows(pb.view(dt), np.ascontiguousarray(index, dtype=np.int64), db.view(dt))


def _row_bytes(values: np.ndarray) -> np.ndarray:
    """The raw bytes of float32 rows: uint8 [n, 4 * dim]."""
    v = np.ascontiguousarray(values, dtype=np.float32)
    return v.view(np.uint8).reshape(v.shape[0], -1)


def stripe_data(arch, table: int, stripes: np.ndarray) -> np.ndarray:
    """Current data rows of ``stripes`` as bytes: uint8 [len(stripes), k, row_bytes]; rows past
    the table's end (a last partial stripe) are zeros."""
    k = arch.spec.parity.k
    rows = stripes[:, None] * k + np.arange(k)[None, :]
    valid = rows < arch.tables[table].rows
    out = np.zeros((stripes.size, k, 4 * arch.tables[table].dim), np.uint8)
    if valid.any():
        out[valid] = _row_bytes(arch.store.read(table, rows[valid]))
    return out


def _encode(code, data: np.ndarray) -> np.ndarray:
    """Fresh parity of many stripes at once: uint8 [m, r, row_bytes] (bytewise code)."""
    m, k, rb = data.shape
    flat = np.ascontiguousarray(data.transpose(1, 0, 2)).reshape(k, m * rb)
    par = code.encode(flat)
    return par.reshape(code.r, m, rb).transpose(1, 0, 2).copy()


def _ensure_stripes(arch, table: int, stripes: np.ndarray) -> np.ndarray:
    """Positions of ``stripes`` in the table's parity array, materializing new ones."""
    st = _state(arch)
    known = st.stripes[table]
    uniq = np.unique(stripes)
    new = np.setdiff1d(uniq, known, assume_unique=True)
    if new.size:
        par_new = _encode(st.code, stripe_data(arch, table, new))
        merged = np.union1d(known, new)
        par = np.empty((merged.size,) + st.parity[table].shape[1:], np.uint8)
        par[np.searchsorted(merged, known)] = st.parity[table]
        par[np.searchsorted(merged, new)] = par_new
        st.stripes[table], st.parity[table] = merged, par
    return np.searchsorted(st.stripes[table], stripes)


def parity_update(arch, rows: np.ndarray, new_values: np.ndarray, table: int = 0) -> OpResult:
    """Write ``new_values`` (float32 [n, dim]) to ``rows`` of ``table`` and update the parity
    in place, in order (a row written twice sees its first write as old value)."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    dim = arch.tables[table].dim
    new = np.ascontiguousarray(new_values, dtype=np.float32).reshape(rows.size, dim)
    if rows.size and (rows.min() < 0 or rows.max() >= arch.tables[table].rows):
        raise NmpError(f"parity_update: row out of range for table {table}")
    st = _state(arch)
    k = arch.spec.parity.k
    stripe, node, slot = st.layout.locate(rows)
    pos = _ensure_stripes(arch, table, stripe)
    # old value of each update: the previous update of the same row in this call, else memory
    n = rows.size
    order = np.lexsort((np.arange(n), rows))
    old = np.empty_like(new)
    same = np.zeros(n, dtype=bool)
    same[1:] = rows[order][1:] == rows[order][:-1]
    first = order[~same]
    old[first] = arch.store.read(table, rows[first])
    old[order[same]] = new[order[np.flatnonzero(same) - 1]]
    # data unit: delta = old XOR new (raw bits)
    delta = _row_bytes(old) ^ _row_bytes(new)
    # parity unit(s): parity_i ^= g_ij * delta, in place
    j = rows % k
    coef = st.code.coefficients
    for i in range(st.code.r):
        g = coef[i, j]
        term = delta if np.all(g == 1) else gf_mul(g[:, None], delta)
        xor_into(st.parity[table].reshape(-1, delta.shape[1]), pos * st.code.r + i, term)
    arch.store.write(table, rows, new)
    return time_parity(arch, st.layout, table, rows, stripe, node, slot)


def parity_consistent(arch, table: int = 0) -> bool:
    """Whether every materialized parity equals a fresh encode of the current rows, bit for bit."""
    st = _state(arch)
    if st.stripes[table].size == 0:
        return True
    fresh = _encode(st.code, stripe_data(arch, table, st.stripes[table]))
    return bool(np.array_equal(fresh, st.parity[table]))


def recover_node(arch, lost_node: int, table: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Decode the rows that ``lost_node`` holds in the materialized stripes from the survivors.

    Returns (rows, values float32 [n, dim]); the lost node's own bytes are never read."""
    st = _state(arch)
    k, r = arch.spec.parity.k, arch.spec.parity.r
    stripes = st.stripes[table]
    if stripes.size == 0:
        return np.empty(0, np.int64), np.empty((0, arch.tables[table].dim), np.float32)
    all_rows = stripes[:, None] * k + np.arange(k)[None, :]
    _, dnode, _ = st.layout.locate(all_rows.ravel())
    dnode = dnode.reshape(all_rows.shape)
    out_rows, out_vals = [], []
    data = stripe_data(arch, table, stripes)
    for jj in range(k):
        m = (dnode[:, jj] == lost_node) & (all_rows[:, jj] < arch.tables[table].rows)
        if not m.any():
            continue
        shards = np.concatenate([data[m], st.parity[table][m]], axis=1)  # [mm, k + r, rb]
        erased = [jj]
        shards[:, jj] = 0xA5  # the lost node's bytes are gone
        mm, _, rb = shards.shape
        flat = np.ascontiguousarray(shards.transpose(1, 0, 2)).reshape(k + r, mm * rb)
        dec = st.code.decode(flat, erased).reshape(k, mm, rb)[jj]
        out_rows.append(all_rows[m, jj])
        out_vals.append(dec.view(np.float32).reshape(mm, -1))
    if not out_rows:
        return np.empty(0, np.int64), np.empty((0, arch.tables[table].dim), np.float32)
    return np.concatenate(out_rows), np.concatenate(out_vals)


__all__ = ["parity_consistent", "parity_nodes", "parity_update", "recover_node", "xor_into"]
