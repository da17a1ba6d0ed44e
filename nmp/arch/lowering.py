"""Lowering lookups to DRAM request streams, one stream per level (all its nodes at once).

Every lookup becomes ``ceil(row_bytes / tx_bytes)`` requests (the row's bursts, consecutive
columns of one page), at addresses built with ``nmp.memory.encode_address`` so that the row lands
on the bank(s) of the node that owns it. The nodes of a level work concurrently, each
with its own request buffer and command issue: each node's stream is replayed on its own on the
memory's *internal view* of that level (no shared bus above it); the level takes as long as its
slowest node. Power limits across the units of a rank (tRRD_S, tFAW) are a bound of the timing
layer, over all levels at once.

Subarray-level parallelism (bank units, ``arch.bank.salp``; Kim et al., ISCA'12): with "salp2"
(two subarrays activated at once) and "masa" (up to SALP_TRACKED_SUBARRAYS open) the bank's
subarrays are the banks of a virtual bank group per bank unit, replayed on the bank-group view,
so that per-subarray tRC overlaps while the bank's single column path (tCCD_L) and tRRD_L still
bind; "salp1" replays the bank itself with its precharge hidden behind the next activation.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.layout import LevelLayout
from nmp.arch.locality import windowed_locality_order
from nmp.arch.placement import FlatLookups, Placement, divmod_nonneg
from nmp.arch.salp import (
    SALP_TRACKED_SUBARRAYS,
    clear_slots,
    precharge_hidden,
    subarray_slots,
    take_slot,
)
from nmp.arch.salp_readings import SALP_READINGS_REGISTRY
from nmp.arch.spec import LEVELS, ArchSpec
from nmp.identity_cache import IdentityCache
from nmp.jit import njit
from nmp.memory import encode_address, internal_view

# Work arrays of the timing path (valid until the same thread lowers again) are kept per thread
# up to this many elements each, rather than freshly mapped (page faults) at every batch.
SCRATCH_MAX = 1 << 22
_SCRATCH = threading.local()


def _scratch(name: str, size: int, dtype=np.int64) -> np.ndarray:
    """``size`` elements of this thread's buffer ``name`` (a fresh array if above SCRATCH_MAX)."""
    if size > SCRATCH_MAX:
        return np.empty(size, dtype=dtype)
    buf = _SCRATCH.__dict__.get(name)
    if buf is None or buf.size < size:
        buf = np.empty(max(size + size // 4, 1 << 12), dtype=dtype)  # headroom: sizes vary
        _SCRATCH.__dict__[name] = buf
    return buf[:size]


@dataclass
class LevelStream:
    level: str
    addr: np.ndarray  # uint64 [m]
    node: np.ndarray | None  # int64 [m]: node of each request (None: see node_lines)
    view: object  # the MemorySpec the stream is replayed on
    lookups_per_node: np.ndarray  # int64 [nodes]
    bytes_per_node: np.ndarray  # float64 [nodes]
    # int64 [nodes]: requests per node when the stream is grouped by node (node 0's first)
    node_lines: np.ndarray | None = None

    def node_ids(self) -> np.ndarray:
        """The node of each request."""
        if self.node is not None:
            return self.node
        assert self.node_lines is not None
        return np.repeat(np.arange(self.node_lines.size, dtype=np.int64), self.node_lines)


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def expand_lines(lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For items with ``lines[i]`` requests: (item of each request, line index within item)."""
    if not lines.size:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if lines.min() == lines.max():
        per = int(lines[0])  # every item the same size (one table width): no prefix sums
        item = np.repeat(np.arange(lines.size, dtype=np.int64), per)
        return item, np.tile(np.arange(per, dtype=np.int64), lines.size)
    item = np.repeat(np.arange(lines.size, dtype=np.int64), lines)
    starts = np.concatenate([[0], np.cumsum(lines)[:-1]])
    within = np.arange(item.size, dtype=np.int64) - np.repeat(starts, lines)
    return item, within


def unit_queue(mem, lines_per_lookup: int, overlap: int) -> int:
    """Request buffer of one unit: two lookups in flight per bank (or subarray) whose
    activations it can overlap, at most the controller's own buffer (Ramulator's 32)."""
    return int(min(mem.controller.read_queue, max(8, 2 * lines_per_lookup * overlap)))


def subarray_queue(mem, lines_per_lookup: int, slots: int) -> int:
    """Request buffer of a bank unit whose ``slots`` activated subarrays are replayed as banks
    (SALP-2, MASA): half the slots' lookups. A lookup whose row the controller has opened
    leaves the read buffer for its active buffer, so about as many again are in flight: one
    per slot. A deeper buffer admits the lookup that takes a slot back
    (:func:`nmp.arch.salp.take_slot`, least recently used) while the slot's last lookup still
    reads; FR-FCFS then precharges that row whenever its read waits for the shared column path,
    and opens it again. Measured on one recross bank unit (dlrm-benchmark, 8 slots, 4-line
    lookups): 1.03 activations per lookup at 16 lines, 2.0 at 28, 2.36 at 32, the same cycles
    from 8 lines up. The price where the bank level binds (recross-eval with a column path per
    bank unit): its time 118.2 -> 120.5 us, fewer lookups overlapping. (Measured with the
    host's FR-FCFS; a unit that holds its rows, ``arch.units_hold_rows``, the default, no
    longer closes that row: 1.04 activations per lookup at 32 lines, and the bank level takes
    119.7 us at 32 lines, 119.8 us at 16.)"""
    return int(min(mem.controller.read_queue, max(lines_per_lookup, slots // 2 * lines_per_lookup)))


def unit_view(mem, level: str, queue: int | None = None, *, hold_rows: bool = True, **org_changes):
    """The memory as one unit sees it: a channel of its own (its own request buffer, command
    issue and data path) with one rank, and the constraints of the shared buses above ``level``
    dropped (``nmp.memory.internal_view``). Each node's stream is replayed on it separately;
    activation power limits across the units of a rank are enforced by the timing layer
    (``act_window``). ``hold_rows`` (``arch.units_hold_rows``): the unit's controller keeps a
    row open while hits to it are queued (``controller.hold_hit_rows``)."""
    q = mem.controller.read_queue if queue is None else queue
    org = tuple(sorted(org_changes.items()))
    build = lambda: _build_unit_view(mem, level, q, hold_rows, org_changes)  # noqa: E731
    return _VIEWS.get(mem, build, level, q, hold_rows, org)


def _build_unit_view(mem, level: str, q: int, hold_rows: bool, org_changes: dict):
    spec = mem.with_org(channels=1, ranks=1, **org_changes)
    ctrl = dataclasses.replace(
        spec.controller,
        read_queue=q,
        write_queue=min(spec.controller.write_queue, q),
        channel_interleave_bits=0,
        hold_hit_rows=hold_rows,
    )
    return internal_view(dataclasses.replace(spec, controller=ctrl), level)


_VIEWS: IdentityCache = IdentityCache(256)  # (mem, level, queue, org) -> view: specs are frozen


def slot_locations(slot, nbanks, lpr, lpp, rows):
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


# Quotients of dividends below 2^31 by a divisor below 2^31 known only at run time (a
# bank-group unit's 3 banks) are taken by a multiply and a shift: an int64 division by such a
# divisor took half of _split_levels' time.
_MAGIC_BITS = 31


@njit(cache=True)
def _magic(d):  # pragma: no cover - compiled
    """(m, shift) with ``(s * m) >> shift == s // d`` for every 0 <= s < 2^31 (unsigned 64-bit
    product), 1 <= d < 2^31: shift = 31 + ceil(log2 d), m = ceil(2^shift / d), so that
    m d - 2^shift < d <= 2^(shift - 31) (Granlund and Montgomery, PLDI'94, theorem 4.2)."""
    lg = 0
    while (1 << lg) < d:
        lg += 1
    shift = _MAGIC_BITS + lg
    m = ((np.uint64(1) << np.uint64(shift)) + np.uint64(d - 1)) // np.uint64(d)
    return m, np.uint64(shift)


@njit(cache=True)
def _split_levels(
    order, level, hit, node_all, slot_all, row_bytes, want, tx, nbanks, lpp, max_nodes, buf
):  # pragma: no cover - compiled
    """The lookups of every wanted level in issue order (not SRAM hits), levels one after
    another (``offsets``): their node, lines per row, bank in the node, page and first column
    (as :func:`slot_locations`; the m lookups' fields one after another in ``buf``, at least
    5 m long), per level and node the lookups and lines, and per level the most lines of a
    row. Divisions by powers of two are shifts (slots are non-negative)."""
    nlev = want.shape[0]
    offsets = np.zeros(nlev + 1, dtype=np.int64)
    whole = order.shape[0] == level.shape[0]  # an order of every lookup: count in place
    for i in range(order.shape[0]):
        j = i if whole else order[i]
        li = level[j]
        if li >= 0 and want[li] and not hit[j]:
            offsets[li + 1] += 1
    for li in range(nlev):
        offsets[li + 1] += offsets[li]
    m = offsets[nlev]
    node = buf[:m]
    lpr = buf[m : 2 * m]
    bank = buf[2 * m : 3 * m]
    page = buf[3 * m : 4 * m]
    col0 = buf[4 * m : 5 * m]
    lookups = np.zeros((nlev, max_nodes), dtype=np.int64)
    lines = np.zeros((nlev, max_nodes), dtype=np.int64)
    lpr_top = np.zeros(nlev, dtype=np.int64)
    b_sh = np.empty(nlev, dtype=np.int64)
    b_m = np.zeros(nlev, dtype=np.uint64)
    b_msh = np.zeros(nlev, dtype=np.uint64)
    for li in range(nlev):
        b_sh[li] = _shift_of(nbanks[li])
        if nbanks[li] < (1 << _MAGIC_BITS):
            b_m[li], b_msh[li] = _magic(nbanks[li])
    fill = offsets[:-1].copy()
    last_bytes, r, per_page, p_sh, span = -1, 1, 1, 0, 1
    # (indices unsigned past the test for a negative level: numba adds a wrap-around of
    # negative indices to each signed one; a point's call took 0.75 instead of 0.96 ms,
    # captured, alternating, best of 300, 2-core AMD EPYC. The node's counts stay signed:
    # 0.72 ms unsigned, but a node id of -1, which no placement gives a split lookup, would
    # then write outside them.)
    for i in range(order.shape[0]):
        j = np.uint64(order[i])
        li = level[j]
        if li < 0:
            continue
        li = np.uint64(li)
        if not want[li] or hit[j]:
            continue
        if row_bytes[j] != last_bytes:  # rows of one table share these
            last_bytes = row_bytes[j]
            r = -(-last_bytes // tx)
            per_page = lpp // max(r, 1) if r <= lpp else 1
            p_sh = _shift_of(per_page)
            span = -(-r // lpp)
        k = fill[li]
        fill[li] = k + 1
        k = np.uint64(k)
        s = slot_all[j]
        d = nbanks[li]
        # the same multiply on every level (a power of two too): which level a lookup
        # belongs to changes from lookup to lookup, and a branch on it mispredicted
        if s < (1 << _MAGIC_BITS) and b_m[li] > 0:
            q = np.int64((np.uint64(s) * b_m[li]) >> b_msh[li])
        elif b_sh[li] >= 0:
            q = s >> b_sh[li]
        else:
            q = s // d
        bank[k] = s - q * d
        if r <= lpp:
            pg = q >> p_sh if p_sh >= 0 else q // per_page
            page[k] = pg
            col0[k] = (q - pg * per_page) * r
        else:
            page[k] = q * span
            col0[k] = 0
        nd = node_all[j]
        node[k], lpr[k] = nd, r
        lookups[li, nd] += 1
        lines[li, nd] += r
        if lpr_top[li] < r:  # (a store only when it grows: no chain through memory)
            lpr_top[li] = r
    return offsets, lookups, lines, lpr_top


@dataclass
class LevelLookups:
    """Every data level's lookups in issue order (:func:`split_levels`), levels one after
    another: level ``li``'s are ``offsets[li]:offsets[li + 1]``."""

    offsets: np.ndarray
    node: np.ndarray
    lpr: np.ndarray  # lines per row
    bank: np.ndarray  # bank within the node
    page: np.ndarray
    col0: np.ndarray  # first column
    lookups: np.ndarray  # int64 [levels, max nodes]
    lines: np.ndarray  # int64 [levels, max nodes]
    lpr_top: np.ndarray  # int64 [levels]: the most lines per row (0: no lookup)

    def level(self, li: int, nodes: int) -> tuple[np.ndarray, ...]:
        a, b = int(self.offsets[li]), int(self.offsets[li + 1])
        return (
            self.node[a:b],
            self.lpr[a:b],
            self.bank[a:b],
            self.page[a:b],
            self.col0[a:b],
            self.lookups[li, :nodes],
            self.lines[li, :nodes],
        )


def split_levels(
    layouts: dict[str, LevelLayout],
    mem,
    flat: FlatLookups,
    plc: Placement,
    order: np.ndarray,
    levels: tuple[str, ...] | None = None,
    *,
    scratch: bool = False,
) -> LevelLookups:
    """One pass over the lookups in issue order, split by level (``levels``: those of
    ``layouts`` by default) for :func:`lower_level`. ``scratch``: the arrays are views of
    this thread's work buffers, valid until its next ``scratch`` lowering."""
    want = np.zeros(len(LEVELS), dtype=np.bool_)
    nbanks = np.ones(len(LEVELS), dtype=np.int64)
    for li, lv in enumerate(LEVELS):
        if lv in layouts and (levels is None or lv in levels):
            want[li] = True
            nbanks[li] = max(layouts[lv].banks_per_unit, 1)
    max_nodes = max((layouts[lv].nodes for lv in layouts), default=1)
    n = 5 * int(order.size)  # room for every lookup's five fields
    buf = _scratch("split", n) if scratch else np.empty(n, dtype=np.int64)
    offsets, lookups, lines, lpr_top = _split_levels(
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(plc.level, dtype=np.int64),
        np.ascontiguousarray(plc.hit, dtype=np.bool_),
        np.ascontiguousarray(plc.node, dtype=np.int64),
        np.ascontiguousarray(plc.slot, dtype=np.int64),
        np.ascontiguousarray(flat.row_bytes, dtype=np.int64),
        want,
        mv.tx_bytes(mem),
        nbanks,
        mv.lines_per_page(mem),
        max_nodes,
        buf,
    )
    m = int(offsets[-1])
    node, lpr, bank, page, col0 = (buf[f * m : (f + 1) * m] for f in range(5))
    return LevelLookups(offsets, node, lpr, bank, page, col0, lookups, lines, lpr_top)


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
    row_code_shift,
    addr,
):  # pragma: no cover - compiled
    """Every lookup's requests into ``addr``, lookup by lookup in ``perm`` order: the address
    OR of its fields' encodings (bank group, bank, DRAM row, column ``col0 + line``). With
    ``salp`` > 0 the bank is the lookup's activated-subarray slot, as
    :func:`nmp.arch.salp.subarray_slots` gives it over the lookups in this order (computed
    here, in the same pass: a row held by one of the node's ``salp`` slots keeps it, a new row
    takes the least recently used slot), in bank group 0; else the node's bank. With
    ``row_code_shift`` >= 0 a row's code is ``row << row_code_shift`` (equal to ``e_row[row]``,
    without reading the large table)."""
    r_sh, u_sh = _shift_of(rows_mod), _shift_of(units)
    held = np.empty(SALP_TRACKED_SUBARRAYS, dtype=np.int64)  # the row each slot holds
    key = np.empty(SALP_TRACKED_SUBARRAYS, dtype=np.int64)  # when it was used last
    prev = -1
    # Indices are unsigned (every one here is non-negative): numba adds a wrap-around of
    # negative indices to each signed one. A design point's three calls took 0.65 instead of
    # 0.94 ms (captured calls alternating, best of 300, 2-core AMD EPYC).
    k, one = np.uint64(0), np.uint64(1)
    for j in range(perm.shape[0]):
        i = np.uint64(perm[j])
        row = page[i] & (rows_mod - 1) if r_sh >= 0 else page[i] % rows_mod
        if row_code_shift >= 0:
            row_code = np.uint64(row) << np.uint64(row_code_shift)
        else:
            row_code = e_row[np.uint64(row)]
        if salp > 0:
            if node[i] != prev:  # a node's slots start empty
                clear_slots(held, key, salp)
                prev = node[i]
            base = e_bg[0] | e_bank[np.uint64(take_slot(held, key, row, j))] | row_code
        else:
            u = np.uint64(node[i] & (units - 1) if u_sh >= 0 else node[i] % units)
            b = np.uint64(bank[i])
            base = e_bg[np.uint64(unit_bg[u, b])] | e_bank[np.uint64(unit_bank[u, b])] | row_code
        c = np.uint64(col0[i])
        for _ in range(lpr[i]):
            addr[k] = base | e_col[c]
            k += one
            c += one


def _field_codes(view) -> tuple[tuple[np.ndarray, ...], bool, int]:
    """Encodings of every bank group, bank, row and column of ``view`` alone (the others 0),
    whether addresses are the OR of their fields' codes, and s if every row's code is
    ``row << s`` (else -1). Specs are frozen: kept per view."""
    return _FIELD_CODES.get(view, lambda: _build_field_codes(view))


def _build_field_codes(view) -> tuple[tuple[np.ndarray, ...], bool, int]:
    fields = (
        ("bankgroup", "bankgroups"),
        ("bank", "banks"),
        ("row", "rows"),
        ("column", "column_addrs"),
    )
    codes = tuple(
        encode_address(view, **{f: np.arange(mv.org(view, lim), dtype=np.int64)})
        for f, lim in fields
    )
    # an address mapping places each field in bits of its own, so that an address is the OR of
    # its fields' codes: checked on the extremes and a seeded sample of field tuples
    rng = np.random.default_rng(0)
    sample = {
        f: np.concatenate([[0, c.size - 1], rng.integers(0, c.size, 253)])
        for (f, _), c in zip(fields, codes, strict=True)
    }
    ored = np.zeros(255, dtype=np.uint64)
    for (f, _), c in zip(fields, codes, strict=True):
        ored |= c[sample[f]]
    composes = bool(np.array_equal(encode_address(view, **sample), ored))
    e_row = codes[2]
    row_shift = int(e_row[1]).bit_length() - 1 if e_row.size > 1 else -1
    if row_shift < 0 or not np.array_equal(
        e_row, np.arange(e_row.size, dtype=np.uint64) << np.uint64(row_shift)
    ):
        row_shift = -1
    return codes, composes, row_shift


_FIELD_CODES: IdentityCache[tuple] = IdentityCache(64)


def lower_level(
    spec: ArchSpec,
    level: str,
    lay: LevelLayout,
    mem,
    flat: FlatLookups,
    plc: Placement,
    order: np.ndarray,
    split: LevelLookups | None = None,
    *,
    scratch: bool = False,
) -> LevelStream:
    """The request streams of ``level``'s nodes (rows placed whole), grouped by node, each in
    the order its unit issues them. ``split``: :func:`split_levels` of these lookups, done once
    for all levels (else done here for this one). ``scratch``: the addresses are a view of
    this thread's work buffer for ``level``, valid until its next ``scratch`` lowering of it."""
    li = LEVELS.index(level)
    tx, lpp, rows = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    if split is None:
        split = split_levels({level: lay}, mem, flat, plc, order)
    node, lpr, b, page, col0, lookups, lines = split.level(li, lay.nodes)
    if spec.locality_aware_scheduling:
        # the unit reorders the lookups its queue holds: each bank's by DRAM row (hits to an
        # open row together), its banks in turn so that their activations overlap
        perm = windowed_locality_order(
            node, b, page, lay.nodes, lay.banks_per_unit, spec.scheduling_window
        )
    else:
        perm = np.argsort(node, kind="stable")  # grouped by node, each in its issue order
    # (the most lines of a row from the split's pass, not a pass of its own)
    lpr_max = int(split.lpr_top[li]) if lpr.size else 1
    # no row straddles a page: all lines of a lookup share its page (per-lookup fields). A
    # row of r <= lpp lines starts at a multiple of r below lpp // r * r, so it ends in its
    # page; a longer row starts a page of its own and leaves it
    one_page = bool(lpr.size) and lpr_max <= lpp
    salp_level = level == "bank" and spec.subarray_parallelism
    activated = SALP_READINGS_REGISTRY.get(spec.bank.salp).activated_subarrays
    if salp_level and activated:
        # the subarrays activated at once (two: salp2; up to SALP_TRACKED_SUBARRAYS: masa)
        salp = min(_next_pow2(spec.bank.subarrays), activated)
        view = unit_view(
            mem,
            "bankgroup",
            subarray_queue(mem, lpr_max, salp),
            hold_rows=spec.units_hold_rows,
            bankgroups=1,
            banks=salp,
        )
    else:
        salp = 0
        queue = unit_queue(mem, lpr_max, lay.banks_per_unit)
        view = unit_view(mem, level, queue, hold_rows=spec.units_hold_rows)
        if salp_level:
            view = precharge_hidden(view)
        salp_level = False  # one bank: rows as in the node's own bank
    rows_mod = mv.org(view, "rows") if salp_level else rows
    # the requests come grouped by node (perm is), `lines[k]` of node k
    if one_page:
        (e_bg, e_bank, e_row, e_col), composes, row_shift = _field_codes(view)
        if composes and rows_mod <= e_row.size and lpp <= e_col.size:
            total = int(lines.sum())  # (lines per node: the lines of its lookups)
            # a buffer per level: one level's replays may still read theirs while the next
            # level is lowered
            buf = "addr." + level
            addr = _scratch(buf, total, np.uint64) if scratch else np.empty(total, np.uint64)
            _emit_lines(
                perm, node, b, page, col0, lpr, lay.units, lay.unit_bg, lay.unit_bank,
                rows_mod, salp, spec.bank.subarrays, e_bg, e_bank, e_row, e_col, row_shift,
                addr,
            )  # fmt: skip
            return LevelStream(level, addr, None, view, lookups, lines * float(tx), lines)
    addr, node_req = _lower_direct(
        spec, lay, view, perm, node, b, page, col0, lpr, lpp, rows_mod, salp
    )
    return LevelStream(level, addr, node_req, view, lookups, lines * float(tx), lines)


def _direct_fields(lay, perm, node, b, page, col0, lpr, lpp, rows_mod, salp, spec):
    """(item of each request, fields of each request) of the lookups ``perm``, for a direct
    ``encode_address`` of every request."""
    node, b, page, col0, lpr = node[perm], b[perm], page[perm], col0[perm], lpr[perm]
    item, within = expand_lines(lpr)
    line_page = page[item] + (col0[item] + within) // lpp
    row = line_page % rows_mod
    column = (col0[item] + within) % lpp
    if salp:
        fields = dict(bankgroup=0, bank=subarray_slots(node[item], row, salp))
    else:
        unit = node % lay.units
        fields = dict(bankgroup=lay.unit_bg[unit, b][item], bank=lay.unit_bank[unit, b][item])
    return node[item], dict(fields, row=row, column=column)


def _lower_direct(
    spec, lay, view, perm, node, b, page, col0, lpr, lpp, rows_mod, salp, rotate=False
):
    """Every request encoded on its own (rows that straddle pages, or a mapping whose fields
    share bits)."""
    node_req, fields = _direct_fields(
        lay, perm, node, b, page, col0, lpr, lpp, rows_mod, salp, spec
    )
    return encode_address(view, **fields), node_req


__all__ = [
    "LevelLookups",
    "LevelStream",
    "lower_level",
    "split_levels",
]
