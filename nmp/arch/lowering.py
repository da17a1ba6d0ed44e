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


def _locality_order_reference(node: np.ndarray, bank: np.ndarray, page: np.ndarray) -> np.ndarray:
    """Pure-numpy :func:`_locality_order` (two packed-key sorts), the kernel's test oracle."""
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


@njit(cache=True)
def _locality_kernel(node, bank, page, nodes, banks):  # pragma: no cover - compiled
    """Counting sort into (node, bank) groups (arrival order kept), a stable sort by page
    inside each group, then per node the banks taken in turn: the i-th lookup of every bank
    before the (i+1)-th of any."""
    n = node.shape[0]
    groups = nodes * banks
    start = np.zeros(groups + 1, dtype=np.int64)
    for i in range(n):
        start[node[i] * banks + bank[i] + 1] += 1
    for g in range(groups):
        start[g + 1] += start[g]
    fill = start[:-1].copy()
    grouped = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = node[i] * banks + bank[i]
        grouped[fill[g]] = i
        fill[g] += 1
    shift = 0
    while (1 << shift) < n:
        shift += 1
    pmax = 0
    for i in range(n):
        pmax = max(pmax, page[i])
    packed_fits = pmax < (1 << (62 - shift))
    for g in range(groups):
        a, b = start[g], start[g + 1]
        if b - a > 1:
            members = grouped[a:b].copy()
            if packed_fits:
                # (page, arrival) packed into one key: one plain sort, ties impossible
                key = np.empty(b - a, dtype=np.int64)
                for k in range(b - a):
                    key[k] = (page[members[k]] << shift) | members[k]
                key.sort()
                mask = (1 << shift) - 1
                for k in range(b - a):
                    grouped[a + k] = key[k] & mask
            else:
                o = np.argsort(page[members], kind="mergesort")
                for k in range(b - a):
                    grouped[a + k] = members[o[k]]
    out = np.empty(n, dtype=np.int64)
    k = 0
    for nd in range(nodes):
        longest = 0
        for bk in range(banks):
            g = nd * banks + bk
            longest = max(longest, start[g + 1] - start[g])
        for r in range(longest):
            for bk in range(banks):
                g = nd * banks + bk
                if start[g] + r < start[g + 1]:
                    out[k] = grouped[start[g] + r]
                    k += 1
    return out


def _locality_order(
    node: np.ndarray, bank: np.ndarray, page: np.ndarray, nodes: int = 0, banks: int = 0
) -> np.ndarray:
    """Issue order, grouped by node: every bank's lookups in DRAM-row order (hits to an open
    row back to back), the banks taken in turn lookup by lookup (their activations and bursts
    overlap); ties in arrival order. ``nodes`` and ``banks`` bound the node and bank ids
    (taken from the data when 0)."""
    if not node.size:
        return np.empty(0, dtype=np.int64)
    if min(int(node.min()), int(bank.min())) < 0:
        return _locality_order_reference(node, bank, page)
    nodes = max(nodes, int(node.max()) + 1)
    banks = max(banks, int(bank.max()) + 1)
    return _locality_kernel(
        np.ascontiguousarray(node, dtype=np.int64),
        np.ascontiguousarray(bank, dtype=np.int64),
        np.ascontiguousarray(page, dtype=np.int64),
        nodes,
        banks,
    )


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


@njit(cache=True)
def _shift_of(d):  # pragma: no cover - compiled
    """log2(d) when ``d`` is a power of two, else -1 (divide then)."""
    if d > 0 and (d & (d - 1)) == 0:
        sh = 0
        while (1 << sh) < d:
            sh += 1
        return sh
    return -1


@njit(cache=True)
def _level_lookups(
    order, level, hit, node_all, slot_all, row_bytes, li, tx, nbanks, lpp, nodes
):  # pragma: no cover - compiled
    """The level's lookups in issue order (not SRAM hits): their node, lines per row, bank in
    the node, page and first column (as :func:`_slot_location`), and per node the lookups and
    lines. Divisions by powers of two are shifts (slots are non-negative)."""
    m = 0
    for i in range(order.shape[0]):
        j = order[i]
        if level[j] == li and not hit[j]:
            m += 1
    node = np.empty(m, dtype=np.int64)
    lpr = np.empty(m, dtype=np.int64)
    bank = np.empty(m, dtype=np.int64)
    page = np.empty(m, dtype=np.int64)
    col0 = np.empty(m, dtype=np.int64)
    lookups = np.zeros(nodes, dtype=np.int64)
    lines = np.zeros(nodes, dtype=np.int64)
    b_sh = _shift_of(nbanks)
    last_bytes, r, per_page, p_sh, span = -1, 1, 1, 0, 1
    k = 0
    for i in range(order.shape[0]):
        j = order[i]
        if level[j] != li or hit[j]:
            continue
        if row_bytes[j] != last_bytes:  # rows of one table share these
            last_bytes = row_bytes[j]
            r = -(-last_bytes // tx)
            per_page = lpp // max(r, 1) if r <= lpp else 1
            p_sh = _shift_of(per_page)
            span = -(-r // lpp)
        s = slot_all[j]
        if b_sh >= 0:
            q = s >> b_sh
            bank[k] = s - (q << b_sh)
        else:
            q = s // nbanks
            bank[k] = s - q * nbanks
        if r <= lpp:
            pg = q >> p_sh if p_sh >= 0 else q // per_page
            page[k] = pg
            col0[k] = (q - pg * per_page) * r
        else:
            page[k] = q * span
            col0[k] = 0
        nd = node_all[j]
        node[k], lpr[k] = nd, r
        lookups[nd] += 1
        lines[nd] += r
        k += 1
    return node, lpr, bank, page, col0, lookups, lines


@njit(cache=True)
def _emit_lines(
    perm,
    node,
    bank,
    page,
    col0,
    lpr,
    units,
    unit_bg,
    unit_bank,
    rows_mod,
    salp,
    subarrays,
    e_bg,
    e_bank,
    e_row,
    e_col,
):  # pragma: no cover - compiled
    """Every lookup's requests, lookup by lookup in ``perm`` order: the address OR of its
    fields' encodings (bank group, bank, DRAM row, column ``col0 + line``) and its node. With
    ``salp`` > 0 the bank is the row's subarray (bank group 0), else the node's bank."""
    total = 0
    for j in range(perm.shape[0]):
        total += lpr[perm[j]]
    addr = np.empty(total, dtype=np.uint64)
    node_req = np.empty(total, dtype=np.int64)
    r_sh, u_sh = _shift_of(rows_mod), _shift_of(units)
    k = 0
    for j in range(perm.shape[0]):
        i = perm[j]
        row = page[i] & (rows_mod - 1) if r_sh >= 0 else page[i] % rows_mod
        if salp > 0:
            # the row's subarray, folded onto the tracked ones (salp is a power of two)
            sub = (row * subarrays) >> r_sh if r_sh >= 0 else row * subarrays // rows_mod
            base = e_bg[0] | e_bank[sub & (salp - 1)] | e_row[row]
        else:
            u = node[i] & (units - 1) if u_sh >= 0 else node[i] % units
            base = e_bg[unit_bg[u, bank[i]]] | e_bank[unit_bank[u, bank[i]]] | e_row[row]
        nd = node[i]
        for w in range(lpr[i]):
            addr[k] = base | e_col[col0[i] + w]
            node_req[k] = nd
            k += 1
    return addr, node_req


def _field_codes(view) -> tuple[np.ndarray, ...]:
    """Encodings of every bank group, bank, row and column of ``view`` alone (the others 0).
    Specs are frozen: kept per view."""
    from nmp.memory import encode_address

    hit = _FIELD_CODES.get(id(view))
    if hit is not None and hit[0] is view:
        return hit[1]
    codes = tuple(
        encode_address(view, **{f: np.arange(mv.org(view, lim), dtype=np.int64)})
        for f, lim in (
            ("bankgroup", "bankgroups"),
            ("bank", "banks"),
            ("row", "rows"),
            ("column", "column_addrs"),
        )
    )
    if len(_FIELD_CODES) > 64:
        _FIELD_CODES.clear()
    _FIELD_CODES[id(view)] = (view, codes)
    return codes


_FIELD_CODES: dict[int, tuple] = {}


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
    li = LEVELS.index(level)
    tx, lpp, rows = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    node, lpr, b, page, col0, lookups, lines = _level_lookups(
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(plc.level, dtype=np.int64),
        np.ascontiguousarray(plc.hit, dtype=np.bool_),
        np.ascontiguousarray(plc.node, dtype=np.int64),
        np.ascontiguousarray(plc.slot, dtype=np.int64),
        np.ascontiguousarray(flat.row_bytes, dtype=np.int64),
        li,
        tx,
        max(lay.banks_per_unit, 1),
        lpp,
        lay.nodes,
    )
    if spec.locality_aware_scheduling:
        # the unit sees the whole batch: it serves each bank's lookups row by row (all hits to
        # an open row together) and rotates over its banks so their activations overlap
        perm = _locality_order(node, b, page, lay.nodes, lay.banks_per_unit)
    else:
        perm = np.argsort(node, kind="stable")  # grouped by node, each in its issue order
    lpr_max = int(lpr.max()) if lpr.size else 1
    # no row straddles a page: all lines of a lookup share its page (per-lookup fields)
    one_page = bool(lpr.size) and int((col0 + lpr).max()) <= lpp
    salp_level = level == "bank" and spec.subarray_parallelism
    if salp_level:
        salp = min(_next_pow2(spec.bank.subarrays), SALP_TRACKED_SUBARRAYS)
        view = _view(mem, "bankgroup", unit_queue(mem, lpr_max, salp), bankgroups=1, banks=salp)
    else:
        salp = 0
        view = _view(mem, level, unit_queue(mem, lpr_max, lay.banks_per_unit))
    rows_mod = mv.org(view, "rows") if salp_level else rows
    if one_page:
        e_bg, e_bank, e_row, e_col = _field_codes(view)
        if rows_mod <= e_row.size and lpp <= e_col.size:
            addr, node_req = _emit_lines(
                perm, node, b, page, col0, lpr, lay.units, lay.unit_bg, lay.unit_bank,
                rows_mod, salp, spec.bank.subarrays, e_bg, e_bank, e_row, e_col,
            )  # fmt: skip
            if _probe_ok(
                view, perm, node, b, page, col0, lpr, lay, lpp, rows_mod, salp, spec, addr
            ):
                return LevelStream(level, addr, node_req, view, lookups, lines * float(tx))
    addr, node_req = _lower_direct(
        spec, lay, view, perm, node, b, page, col0, lpr, lpp, rows_mod, salp
    )
    return LevelStream(level, addr, node_req, view, lookups, lines * float(tx))


def _direct_fields(lay, perm, node, b, page, col0, lpr, lpp, rows_mod, salp, spec):
    """(item of each request, fields of each request) of the lookups ``perm``, for a direct
    ``encode_address`` of every request."""
    node, b, page, col0, lpr = node[perm], b[perm], page[perm], col0[perm], lpr[perm]
    item, within = _expand(lpr)
    line_page = page[item] + (col0[item] + within) // lpp
    row = line_page % rows_mod
    column = (col0[item] + within) % lpp
    if salp:
        fields = dict(bankgroup=0, bank=row * spec.bank.subarrays // rows_mod % salp)
    else:
        unit = node % lay.units
        fields = dict(bankgroup=lay.unit_bg[unit, b][item], bank=lay.unit_bank[unit, b][item])
    return node[item], dict(fields, row=row, column=column)


def _lower_direct(spec, lay, view, perm, node, b, page, col0, lpr, lpp, rows_mod, salp):
    """Every request encoded on its own (rows that straddle pages, or a mapping whose fields
    share bits)."""
    from nmp.memory import encode_address

    node_req, fields = _direct_fields(
        lay, perm, node, b, page, col0, lpr, lpp, rows_mod, salp, spec
    )
    return encode_address(view, **fields), node_req


def _probe_ok(view, perm, node, b, page, col0, lpr, lay, lpp, rows_mod, salp, spec, addr) -> bool:
    """Whether the OR of per-field encodings equals a direct ``encode_address`` on every
    request of a sample of the lookups (an address mapping places each field in bits of its
    own, which this checks)."""
    from nmp.memory import encode_address

    probe = np.unique(np.linspace(0, perm.size - 1, min(perm.size, 97)).astype(np.int64))
    first = np.cumsum(lpr[perm]) - lpr[perm]  # each lookup's first request
    _, fields = _direct_fields(
        lay, perm[probe], node, b, page, col0, lpr, lpp, rows_mod, salp, spec
    )
    p_item, p_within = _expand(lpr[perm[probe]])
    return bool(
        np.array_equal(encode_address(view, **fields), addr[first[probe][p_item] + p_within])
    )


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
