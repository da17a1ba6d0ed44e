"""Embedding servers: where each row lives, and each server's memory as an ``nmp.arch`` design.

The rows of all tables are numbered globally (table after table) and striped over the ``N``
servers by :func:`nmp.train.layout.stripe_positions` with ``k = N - parities`` data rows per
stripe, for every strategy (a strategy without parity leaves the parity positions empty): the
servers' partial sums, and so the bits of training, depend on where rows sit, so every strategy
of one configuration places them alike.

A server holds its rows of table ``t`` as a *shard table* (its rows of ``t`` in global order,
numbered ``0..n-1``). :class:`NodeMemory` is the server's memory: an ``nmp.arch`` design (a
preset or an ``--arch`` file) bound to the shard tables, whose units read the rows' current
values from the server's records. A lookup request (one worker's micro-batch) is gathered and
reduced by the design's functional path (``policy.execute``, the code ``nmp run`` times) and,
when asked, timed by the same DRAM model (``time_gather_reduce``).

The single-process trainer and the distributed one call the same functions in the same order
(per micro-batch: every server's partial sums, added in server order; per-row gradients per
micro-batch, combined in worker order), so the two agree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from nmp.train.layout import stripe_positions


def worker_slices(batch: int, workers: int) -> list[slice]:
    """The contiguous sample slices of the ``workers`` data-parallel workers (sizes differ by at
    most one, larger first, as ``numpy.array_split``)."""
    bounds = np.cumsum([0] + [len(a) for a in np.array_split(np.arange(batch), workers)])
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


class ShardMap:
    """Which server holds each global row, and the row's index in that server's shard table."""

    def __init__(self, table_rows: tuple[int, ...], nodes: int, parities: int) -> None:
        self.table_rows = tuple(int(n) for n in table_rows)
        self.nodes = nodes
        self.k, self.r = nodes - parities, parities
        self.offsets = np.concatenate([[0], np.cumsum(self.table_rows)]).astype(np.int64)
        total = int(self.offsets[-1])
        self.stripe_of, self.slot_of, self.node_of_pos = stripe_positions(
            total, nodes, self.k, parities
        )
        self.node_of_row = self.node_of_pos[self.stripe_of, self.slot_of]
        table = np.repeat(np.arange(len(self.table_rows)), self.table_rows)
        self.table_of_row = table
        # Index of each row among the rows of its table on its node (rows in global order).
        key = self.node_of_row * len(self.table_rows) + table
        order = np.argsort(key, kind="stable")
        counts = np.bincount(key, minlength=nodes * len(self.table_rows))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        local = np.empty(total, dtype=np.int64)
        local[order] = np.arange(total) - np.repeat(starts, counts)
        self.local_of_row = local
        self.shard_rows = counts.reshape(nodes, len(self.table_rows))  # [node, table]

    @property
    def total_rows(self) -> int:
        return int(self.offsets[-1])

    def rows_of_node(self, node: int) -> np.ndarray:
        """Global rows held by ``node``, sorted."""
        return np.flatnonzero(self.node_of_row == node)

    def global_rows(self, ids: np.ndarray) -> np.ndarray:
        """Global row of every lookup of ``ids`` [T, B, P] (rows within each table)."""
        return ids + self.offsets[:-1, None, None]


@dataclass
class Request:
    """One micro-batch's lookups on one server, in (table, sample, position) order."""

    pos: np.ndarray  # int64 flat position of each lookup in the micro-batch's [T, B, P]
    rows: np.ndarray  # int64 global row of each lookup
    shape: tuple[int, int, int]  # (T, B, P) of the micro-batch


def request_for(shard: ShardMap, node: int, g: np.ndarray) -> Request:
    """The lookups of the micro-batch with global rows ``g`` [T, B, P] that ``node`` serves."""
    flat = g.reshape(-1)
    pos = np.flatnonzero(shard.node_of_row[flat] == node)
    t_n, b_n, p_n = g.shape
    return Request(pos=pos, rows=flat[pos], shape=(int(t_n), int(b_n), int(p_n)))


class _RecordView:
    """What the design's units read: the current values of the shard tables' rows, supplied per
    request by ``values(global_rows) -> float32 [n, >= dim]`` (the server's records)."""

    def __init__(self, shard: ShardMap, node: int, dim: int) -> None:
        self.dim = dim
        self.global_of = [
            np.flatnonzero((shard.node_of_row == node) & (shard.table_of_row == t))
            for t in range(len(shard.table_rows))
        ]
        self.values: Any = None

        # the design's rows end to end (a table of no rows here holds one, never looked up)
        self.global_flat = np.concatenate(
            [np.concatenate([g, np.zeros(max(0, 1 - g.size), np.int64)]) for g in self.global_of]
        )

    def read(self, table: int, rows: np.ndarray) -> np.ndarray:
        got = self.values(self.global_of[table][np.asarray(rows, dtype=np.int64)])
        return np.ascontiguousarray(got[:, : self.dim], dtype=np.float32)

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """The rows of all tables at once, by the design's global row (table's first row +
        row): :func:`nmp.arch.functional.pool_tables` then gathers every table in one pass."""
        got = self.values(self.global_flat[np.asarray(rows, dtype=np.int64)])
        return np.ascontiguousarray(got[:, : self.dim], dtype=np.float32)

    def basis(self, table: int) -> None:
        return None  # the rows are real values, never the hashed initial contents


class NodeMemory:
    """One server's memory: an ``nmp.arch`` design holding the server's shard tables.

    ``gather`` executes one request on the design's units (the functional gather-reduce of
    ``nmp run``) and returns the partial sums [B, T, dim] of the server's rows per bag, plus the
    design's timing of the request when ``timed``.
    """

    def __init__(self, arch: str, memory: str, seed: int, shard: ShardMap, node: int, dim: int):
        from nmp.arch.point import load_arch
        from nmp.workload.spec import TableSpec

        self.shard, self.node, self.dim = shard, node, dim
        self.arch = load_arch(arch, memory or None, data_seed=seed)
        rows = shard.shard_rows[node]
        # A shard table may be empty (a tiny table on many servers); the design needs a row.
        self._table_rows = [max(1, int(n)) for n in rows]
        self.arch.bind([TableSpec(rows=n, dim=dim) for n in self._table_rows])
        self.view = _RecordView(shard, node, dim)
        self._primed = False  # (prime: the design's profile fixed; gather may go flat)
        # per shard table, its first row in the design and its row bytes (flat_lookups)
        rows = np.asarray(self.arch.table_rows, dtype=np.int64)
        self._first_row = np.cumsum(rows) - rows
        self._row_bytes = np.asarray(self.arch.table_row_bytes, dtype=np.int64)
        # the units read the server's records (a RowStore's read/basis interface)
        self.arch.store = cast(Any, self.view)

    # -- the rows it holds: data records and parity, updated by in-memory XOR -----------------

    def hold(self, records: np.ndarray, parity: np.ndarray, update_cost=None) -> None:
        """The server's data records (float32, its rows in order) and parity rows (bytes) live
        here; ``update_cost`` = (coded, plain) timing backends of the design's update
        (:mod:`nmp.train.hwcost`): the parity update's modeled time is recorded per step."""
        self.records, self.parity = records, parity
        self.update_cost = update_cost
        self.parity_update_ns: list[float] = []
        self.plain_update_ns: list[float] = []  # the same rows' plain read-modify-write

    def delta(self, idx: np.ndarray, new: np.ndarray) -> np.ndarray:
        """The data unit's in-memory XOR of the held records at ``idx`` with ``new``: the
        bytes ``old XOR new`` the parity's holder needs (the records are not written)."""
        old = self.records[idx]
        return (old.view(np.uint64) ^ np.ascontiguousarray(new).view(np.uint64)).view(np.uint8)

    def write(self, idx: np.ndarray, new: np.ndarray) -> None:
        self.records[idx] = new

    def parity_update(self, pos: np.ndarray, delta: np.ndarray, rows=None) -> None:
        """The parity unit's in-memory XOR of ``delta`` into the parity rows ``pos``; with
        ``rows`` (the step's updated data rows) the design's time for it is recorded: the
        coded update beyond a plain read-modify-write of the same rows."""
        from nmp.arch.parity import xor_into

        xor_into(self.parity, pos, delta)
        if rows is not None and self.update_cost is not None:
            coded, plain = self.update_cost
            plain_ns = plain.update(rows)[0]
            self.parity_update_ns.append(coded.update(rows)[0] - plain_ns)
            self.plain_update_ns.append(plain_ns)

    def lookup_batch(self, req: Request):
        """The request as the design's input: per shard table, CSR bags of local row ids."""
        from nmp.workload.batch import LookupBatch, TableLookups

        t_n, b_n, p_n = req.shape
        t_of = req.pos // (b_n * p_n)
        bag = (req.pos // p_n) % b_n
        local = self.shard.local_of_row[req.rows]
        starts = np.searchsorted(t_of, np.arange(t_n + 1)).tolist()
        # every table's bag offsets at once (a bincount per table took about a tenth of the
        # trainer's step on 26 small tables)
        offsets = np.zeros((t_n, b_n + 1), dtype=np.int64)
        np.cumsum(
            np.bincount(t_of * b_n + bag, minlength=t_n * b_n).reshape(t_n, b_n),
            axis=1,
            out=offsets[:, 1:],
        )
        return LookupBatch(
            tuple(
                TableLookups(
                    indices=local[starts[t] : starts[t + 1]],
                    offsets=offsets[t],
                    weights=None,
                    num_rows=self._table_rows[t],
                    dim=self.dim,
                )
                for t in range(t_n)
            )
        )

    def prime(self, req: Request) -> None:
        """Fix the design's profile-dependent state (hot-row profile, partition) on one request
        (the first of the run), so that every incarnation of the server places rows alike."""
        self.arch.prepare(self.lookup_batch(req))
        self._primed = True

    def flat_lookups(self, req: Request):
        """The request as the design's flattened lookups: what ``flatten`` makes of
        :meth:`lookup_batch` (table-major, each table's bags in order), built from the
        request's positions at once (per table, 26 bag arrays built and joined again were a
        third of a server's gather on the trainer's small tables)."""
        from nmp.arch.placement import FlatLookups

        t_n, b_n, p_n = req.shape
        t_of = req.pos // (b_n * p_n)
        local = self.shard.local_of_row[req.rows]
        return FlatLookups(
            table=t_of,
            row=local,
            bag=(req.pos // p_n) % b_n,
            weight=None,
            grow=self._first_row[t_of] + local,
            row_bytes=self._row_bytes[t_of],
            batch=b_n,
            num_tables=t_n,
        )

    def gather(self, req: Request, values, *, timed: bool = False):
        """(the server's partial sums, the design's OpResult or None). The partial sums are
        sparse, as the server sends them: the (sample, table) slots where it holds at least one
        lookup (``slot = sample * T + table``, ascending) and their vectors float32 [n, dim]."""
        t_n, b_n, p_n = req.shape
        if len(req.rows) == 0:
            return (np.empty(0, np.int64), np.empty((0, self.dim), np.float32)), None
        self.view.values = values
        if self._primed:
            flat = self.flat_lookups(req)
            plc, order = self.arch.place_lookups(flat)
        else:
            flat, plc, order = self.arch.prepare(self.lookup_batch(req))
        pooled = self.arch.policy.execute(self.arch, flat, plc)
        op = None
        if timed:
            from nmp.arch.timing import time_gather_reduce

            op = time_gather_reduce(self.arch, flat, plc, order, self.arch.tree_traffic(flat, plc))
        self.view.values = None
        # the distinct slots, ascending: a mark over the micro-batch's B x T slots (np.unique
        # sorted them, a tenth of a server's gather on the trainer's 26 small tables)
        held = np.zeros(b_n * t_n, dtype=bool)
        held[(req.pos // p_n) % b_n * t_n + req.pos // (b_n * p_n)] = True
        slots = np.flatnonzero(held)
        # slot = sample * T + table is row table * B + sample of the tables end to end (one
        # concatenation: a stack to [B, T, dim] cost more than the copy)
        by_table = np.concatenate(pooled).reshape(t_n * b_n, self.dim)
        return (slots, by_table[slots % t_n * b_n + slots // t_n]), op


def add_partials(parts: list, batch: int, tables: int, dim: int) -> np.ndarray:
    """The pooled vectors [B, T, dim]: the servers' sparse partial sums added in server order
    onto zeros (fixed, so that every path rounds alike)."""
    out = np.zeros((batch * tables, dim), dtype=np.float32)
    for slots, vectors in parts:
        out[slots] += vectors
    return out.reshape(batch, tables, dim)


def micro_row_grads(g: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row gradients of one micro-batch: ``g`` [T, B, P] global rows, ``grad`` [B, T, dim]
    the pooled gradients. Returns (sorted distinct rows, float32 [n, dim]): each lookup's bag
    gradient added in lookup order ((table, sample, position)), one add at a time."""
    from nmp.train._kernels import add_lookup_grads  # numba: loaded on use

    rows, inv = np.unique(g.reshape(-1), return_inverse=True)
    grad32 = np.ascontiguousarray(grad, dtype=np.float32)
    if grad32.shape[:2] != (g.shape[1], g.shape[0]):
        raise ValueError(f"pooled gradients {grad.shape} do not match the lookups {g.shape}")
    out = np.zeros((len(rows), grad32.shape[2]), dtype=np.float32)
    add_lookup_grads(out, inv.reshape(-1).astype(np.int64, copy=False), grad32)
    return rows, out


def combine_row_grads(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The workers' per-row gradients summed in worker order: (sorted rows, float32 [n, dim])."""
    if len(parts) == 1:
        # one worker: its rows are sorted and distinct already; adding 0.0 turns a -0.0 into
        # +0.0 as the sum onto zeros below does, so the bits are the same
        rows, g = parts[0]
        return np.asarray(rows, dtype=np.int64), g.astype(np.float32) + np.float32(0.0)
    rows = np.unique(np.concatenate([r for r, _ in parts])) if parts else np.empty(0, np.int64)
    dim = next((g.shape[1] for _, g in parts), 0)
    out = np.zeros((len(rows), dim), dtype=np.float32)
    for r, g in parts:
        out[np.searchsorted(rows, r)] += g
    return rows, out
