"""Lowering lookups to DRAM request streams, one stream per level (all its nodes at once).

Every lookup becomes ``ceil(row_bytes / tx_bytes)`` requests (the row's bursts, consecutive
columns of one page), at addresses built with ``nmp.memory.encode_address`` so that the row lands
on the bank(s) of the node that owns it. The nodes of a level work concurrently, each
with its own request buffer and command issue: each node's stream is replayed on its own on the
memory's *internal view* of that level (no shared bus above it); the level takes as long as its
slowest node. Power limits across the units of a rank (tRRD_S, tFAW) are a bound of the timing
layer, over all levels at once.

Subarray-level parallelism (bank units): the bank's subarrays are the banks of a virtual bank
group per bank unit, replayed on the bank-group view, so that per-subarray tRC overlaps while
the bank's single column path (tCCD_L) and tRRD_L still bind.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numba import njit

from nmp.arch import memview as mv
from nmp.arch.layout import LevelLayout
from nmp.arch.placement import FlatLookups, Placement, divmod_nonneg
from nmp.arch.spec import LEVELS, ArchSpec

SALP_TRACKED_SUBARRAYS = 8  # open subarrays tracked per bank (beyond this tCCD_L binds anyway)


@dataclass
class LevelStream:
    level: str
    addr: np.ndarray  # uint64 [m]
    node: np.ndarray  # int64 [m]: node of each request
    view: object  # the MemorySpec the stream is replayed on
    lookups_per_node: np.ndarray  # int64 [nodes]
    bytes_per_node: np.ndarray  # float64 [nodes]


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def _expand(lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For items with ``lines[i]`` requests: (item of each request, line index within item)."""
    if lines.size and lines.min() == lines.max():
        per = int(lines[0])  # every item the same size (one table width): no prefix sums
        item = np.repeat(np.arange(lines.size, dtype=np.int64), per)
        return item, np.tile(np.arange(per, dtype=np.int64), lines.size)
    item = np.repeat(np.arange(lines.size, dtype=np.int64), lines)
    starts = np.concatenate([[0], np.cumsum(lines)[:-1]])
    within = np.arange(item.size, dtype=np.int64) - np.repeat(starts, lines)
    return item, within


def _bits(a: np.ndarray) -> int:
    """Bits of the largest value; 64 (no packing) if any is negative."""
    if not a.size:
        return 0
    return 64 if int(a.min()) < 0 else int(a.max()).bit_length()


def _sort_order(*keys: np.ndarray) -> np.ndarray:
    """``np.lexsort(keys[::-1])`` (first key most significant) for non-negative int64 keys
    whose last key is unique: the keys packed into one int64 when they fit in 63 bits (one
    plain sort instead of a sort per key; the same order, as no two packed keys are equal)."""
    widths = [_bits(k) for k in keys]
    if sum(widths) > 63:
        return np.lexsort(keys[::-1])
    packed = np.zeros(keys[0].size, dtype=np.int64)
    for k, w in zip(keys, widths, strict=True):
        packed <<= w
        packed |= k
    return np.argsort(packed)


def _locality_order(node: np.ndarray, bank: np.ndarray, page: np.ndarray) -> np.ndarray:
    """Issue order, grouped by node: every bank's lookups in DRAM-row order (hits to an open
    row back to back), the banks taken in turn lookup by lookup (their activations and bursts
    overlap); ties in arrival order."""
    arrival = np.arange(node.size, dtype=np.int64)
    o = _sort_order(node, bank, page, arrival)
    ns, bs = node[o], bank[o]
    new_group = np.ones(o.size, dtype=bool)
    new_group[1:] = (ns[1:] != ns[:-1]) | (bs[1:] != bs[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, arrival, 0))
    rank_in_bank = np.empty(o.size, dtype=np.int64)
    rank_in_bank[o] = arrival - group_start
    # (node, rank in bank, bank) is unique per lookup: arrival never breaks a tie here
    return _sort_order(node, rank_in_bank, bank, arrival)


def unit_queue(mem, lines_per_lookup: int, overlap: int) -> int:
    """Request buffer of one unit: two lookups in flight per bank (or subarray) whose
    activations it can overlap, at most the controller's own buffer (Ramulator's 32)."""
    return int(min(mem.controller.read_queue, max(8, 2 * lines_per_lookup * overlap)))


def _view(mem, level: str, queue: int | None = None, **org_changes):
    """The memory as one unit sees it: a channel of its own (its own request buffer, command
    issue and data path) with one rank, and the constraints of the shared buses above ``level``
    dropped (``nmp.memory.internal_view``). Each node's stream is replayed on it separately;
    activation power limits across the units of a rank are enforced by the timing layer
    (``act_window``)."""
    from nmp.memory import internal_view

    q = mem.controller.read_queue if queue is None else queue
    key = (id(mem), level, q, tuple(sorted(org_changes.items())))
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is mem:
        return hit[1]
    spec = mem.with_org(channels=1, ranks=1, **org_changes)
    ctrl = dataclasses.replace(
        spec.controller,
        read_queue=q,
        write_queue=min(spec.controller.write_queue, q),
        channel_interleave_bits=0,
    )
    view = internal_view(dataclasses.replace(spec, controller=ctrl), level)
    if len(_VIEWS) > 256:
        _VIEWS.clear()
    _VIEWS[key] = (mem, view)
    return view


_VIEWS: dict[tuple, tuple] = {}  # (id(mem), level, queue, org) -> (mem, view): specs are frozen


def _slot_location(slot, nbanks, lpr, lpp, rows):
    q, b = divmod_nonneg(slot, nbanks)
    if lpr.size and lpr.min() == lpr.max():
        r = int(lpr[0])  # one row size: the same arithmetic on scalars
        if r <= lpp:
            page, within = divmod_nonneg(q, lpp // max(r, 1))
            return b, page, within * r
        return b, q * -(-r // lpp), np.zeros_like(q)
    small = lpr <= lpp
    per_page = np.where(small, lpp // np.maximum(lpr, 1), 1)
    pages = np.where(small, 1, -(-lpr // lpp))
    page = np.where(small, q // per_page, q * pages)
    col = np.where(small, (q % per_page) * lpr, 0)
    return b, page, col


def lower_level(
    spec: ArchSpec,
    level: str,
    lay: LevelLayout,
    mem,
    flat: FlatLookups,
    plc: Placement,
    order: np.ndarray,
) -> LevelStream:
    """The request streams of ``level``'s nodes (rows placed whole), grouped by node, each in
    the order its unit issues them."""
    from nmp.memory import encode_address

    li = LEVELS.index(level)
    tx, lpp, rows = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    idx = order[(plc.level[order] == li) & ~plc.hit[order]]
    node = plc.node[idx]
    lpr = -(-flat.row_bytes[idx] // tx)
    b, page, col0 = _slot_location(plc.slot[idx], lay.banks_per_unit, lpr, lpp, rows)
    if spec.locality_aware_scheduling:
        # the unit sees the whole batch: it serves each bank's lookups row by row (all hits to
        # an open row together) and rotates over its banks so their activations overlap
        perm = _locality_order(node, b, page)
    else:
        perm = np.argsort(node, kind="stable")  # grouped by node, each in its issue order
    idx, node, lpr, b, page, col0 = (
        idx[perm],
        node[perm],
        lpr[perm],
        b[perm],
        page[perm],
        col0[perm],
    )
    _, _, unit = lay.node_coords(node)
    lpr_max = int(lpr.max()) if lpr.size else 1
    # no row straddles a page: all lines of a lookup share its page (per-lookup fields)
    one_page = bool(lpr.size) and int((col0 + lpr).max()) <= lpp
    if level == "bank" and spec.subarray_parallelism:
        salp = min(_next_pow2(spec.bank.subarrays), SALP_TRACKED_SUBARRAYS)
        view = _view(mem, "bankgroup", unit_queue(mem, lpr_max, salp), bankgroups=1, banks=salp)
        rows_v = mv.org(view, "rows")
        if one_page:
            row_v = page % rows_v
            bank = row_v * spec.bank.subarrays // rows_v % salp
            addr, node_req = _encode_lines(view, node, col0, lpr, bank=bank, row=row_v)
        else:
            item, within = _expand(lpr)
            line_page = page[item] + (col0[item] + within) // lpp
            row_v = line_page % rows_v
            subarray = row_v * spec.bank.subarrays // rows_v
            addr = encode_address(
                view,
                bankgroup=0,
                bank=subarray % salp,
                row=row_v,
                column=(col0[item] + within) % lpp,
            )
            node_req = node[item]
    else:
        view = _view(mem, level, unit_queue(mem, lpr_max, lay.banks_per_unit))
        bg = lay.unit_bg[unit, b]
        bk = lay.unit_bank[unit, b]
        if one_page:
            addr, node_req = _encode_lines(
                view, node, col0, lpr, bankgroup=bg, bank=bk, row=page % rows
            )
        else:
            item, within = _expand(lpr)
            line_page = page[item] + (col0[item] + within) // lpp
            addr = encode_address(
                view,
                bankgroup=bg[item],
                bank=bk[item],
                row=line_page % rows,
                column=(col0[item] + within) % lpp,
            )
            node_req = node[item]
    lookups = np.bincount(node, minlength=lay.nodes)
    bytes_node = np.bincount(node, weights=lpr, minlength=lay.nodes) * tx
    return LevelStream(level, addr, node_req, view, lookups, bytes_node)


@njit(cache=True)
def _or_lines(base, colenc, col0, lpr, node):  # pragma: no cover - compiled
    """Every lookup's ``lpr`` requests, in order: ``base | colenc[col0 + line]``, and the
    node of each request."""
    total = 0
    for i in range(lpr.shape[0]):
        total += lpr[i]
    addr = np.empty(total, dtype=np.uint64)
    node_req = np.empty(total, dtype=np.int64)
    k = 0
    for i in range(lpr.shape[0]):
        b, c0, nd = base[i], col0[i], node[i]
        for w in range(lpr[i]):
            addr[k] = b | colenc[c0 + w]
            node_req[k] = nd
            k += 1
    return addr, node_req


def _encode_lines(
    view,
    node: np.ndarray,
    col0: np.ndarray,
    lpr: np.ndarray,
    **fields: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(addresses, node) of every request, lookup by lookup: a lookup's ``lpr`` requests have
    its ``fields`` (all but the column) and columns ``col0 .. col0 + lpr - 1``.

    An address mapping places each field in bits of its own (``nmp.memory.mapping``), so the
    address is the lookup's address at column 0 OR'ed with the column's bits: encoded per
    lookup and per distinct column instead of per request. Checked against a direct encode
    of every request of a sample of the lookups; a mapping that mixes fields falls back to
    encoding all."""
    from nmp.memory import encode_address

    cols = int((col0 + lpr).max())  # the columns used: 0 .. max(col0 + lpr) - 1
    base = encode_address(view, **fields)
    colenc = encode_address(view, column=np.arange(cols, dtype=np.int64))
    lpr = np.ascontiguousarray(lpr, dtype=np.int64)
    addr, node_req = _or_lines(
        np.ascontiguousarray(base, dtype=np.uint64),
        colenc,
        np.ascontiguousarray(col0, dtype=np.int64),
        lpr,
        np.ascontiguousarray(node, dtype=np.int64),
    )
    first = np.cumsum(lpr) - lpr  # each lookup's first request
    probe = np.unique(np.linspace(0, lpr.size - 1, min(lpr.size, 97)).astype(np.int64))
    p_item, p_within = _expand(lpr[probe])
    p_item = probe[p_item]
    direct = encode_address(
        view,
        column=col0[p_item] + p_within,
        **{k: np.broadcast_to(v, lpr.shape)[p_item] for k, v in fields.items()},
    )
    if np.array_equal(direct, addr[first[p_item] + p_within]):
        return addr, node_req
    item, within = _expand(lpr)
    addr = encode_address(
        view,
        column=col0[item] + within,
        **{k: np.broadcast_to(v, lpr.shape)[item] for k, v in fields.items()},
    )
    return addr, node[item]


def lower_vertical(
    spec: ArchSpec, lay: LevelLayout, mem, flat: FlatLookups, order: np.ndarray
) -> LevelStream:
    """TensorDIMM: each lookup reads its column slice on every rank node (whole bursts)."""
    from nmp.memory import encode_address

    tx, lpp, rows = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    nodes = lay.nodes
    slice_bytes = -(-flat.row_bytes[order] // nodes)
    lpr = -(-slice_bytes // tx)
    # every node stores every row's slice at slot = global row id
    b, page, col0 = _slot_location(flat.grow[order], lay.banks_per_unit, lpr, lpp, rows)
    n = order.size
    node = np.tile(np.arange(nodes, dtype=np.int64), n)
    rep = np.repeat(np.arange(n, dtype=np.int64), nodes)
    item, within = _expand(lpr[rep])
    src = rep[item]
    _, _, unit = lay.node_coords(node[item])
    view = _view(mem, "rank")
    line_page = page[src] + (col0[src] + within) // lpp
    addr = encode_address(
        view,
        bankgroup=lay.unit_bg[unit, b[src]],
        bank=lay.unit_bank[unit, b[src]],
        row=line_page % rows,
        column=(col0[src] + within) % lpp,
    )
    node_req = node[item]
    return LevelStream(
        "rank",
        addr,
        node_req,
        view,
        np.full(nodes, n, dtype=np.int64),
        np.bincount(node_req, minlength=nodes).astype(np.float64) * tx,
    )


def lower_host(
    mem, flat: FlatLookups, order: np.ndarray, table_rows: list[int], table_row_bytes: list[int]
) -> np.ndarray:
    """Physical addresses of a host CPU reading every row (tables packed line-aligned, one
    after another, folded into the memory's capacity), in issue order."""
    tx = mv.tx_bytes(mem)
    t_lpr = -(-np.asarray(table_row_bytes, dtype=np.int64) // tx)
    t_base = np.concatenate([[0], np.cumsum(np.asarray(table_rows, dtype=np.int64) * t_lpr)])
    lpr = t_lpr[flat.table[order]]
    item, within = _expand(lpr)
    src = order[item]
    line = t_base[flat.table[src]] + flat.row[src] * t_lpr[flat.table[src]] + within
    capacity_lines = mem.capacity_bytes // tx
    return ((line % capacity_lines) * tx).astype(np.uint64)


__all__ = ["LevelStream", "lower_host", "lower_level", "lower_vertical"]
