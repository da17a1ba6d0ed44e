"""In-memory parity updates: the data's unit computes ``old XOR new`` and writes ``new``; the
parity's unit applies the delta in place (``parity_i ^= g_ij * delta``, GF(2^8) for
Reed-Solomon), as in ECRec's difference propagation but on raw bits, so recovery is exact.

Rows of a table are striped over the nodes of ``parity.level`` by
:class:`nmp.coding.StripeLayout` (k data rows + r parity rows on k + r distinct nodes). Parity
of a stripe is materialized when a stripe is first touched, as the encode of its current rows
(the parity the system wrote when the table was loaded); afterwards it only changes in place.

Timing: per update, the data node reads the old row and writes the new one, each parity node
reads and writes its parity row; these requests are lowered to the nodes' banks and replayed on
the internal view of the executing unit's level. The delta travels from the data node to each
parity node: through the buffer chip over the rank bus twice (same rank), or up to the host and
back over the channel (another rank). XOR throughput is the unit's width at its clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.area import parity_unit_figures
from nmp.arch.lowering import slot_locations, unit_queue, unit_view
from nmp.arch.timing import dram_energy
from nmp.coding import ReedSolomonCode, StripeLayout, XorCode, gf_mul
from nmp.errors import NmpError
from nmp.jit import njit
from nmp.memory import encode_address, make_requests, replay
from nmp.parity_codes import PARITY_CODES
from nmp.results import OpResult

if TYPE_CHECKING:
    from nmp.coding import ReedSolomonCode, StripeLayout, XorCode

XOR_WIDTH_BYTES = 8  # the parity unit's datapath: 64 bits per cycle (nmp rtl report width 64)


@dataclass
class ParityState:
    code: XorCode | ReedSolomonCode
    layout: StripeLayout
    nodes: int
    stripes: list[np.ndarray]  # per table: sorted stripe ids with materialized parity
    parity: list[np.ndarray]  # per table: uint8 [m, r, row_bytes]


def parity_nodes(arch) -> tuple[int, int, str]:
    """(nodes, banks per node, executing level or 'host') of the design's parity level."""
    spec, mem = arch.spec, arch.mem
    lv = spec.parity.level
    if lv in arch.layouts and arch.layouts[lv].capacity_banks > 0:
        lay = arch.layouts[lv]
        return lay.nodes, lay.banks_per_unit, lv
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    bgs, banks = mv.org(mem, "bankgroups"), mv.org(mem, "banks")
    nodes = {"rank": ranks, "bankgroup": ranks * bgs, "bank": ranks * bgs * banks}[lv]
    per = {"rank": bgs * banks, "bankgroup": banks, "bank": 1}[lv]
    execu = next((x for x in ("rank",) if x in arch.layouts), "host")
    return nodes, per, execu


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
    return _time_parity(arch, table, rows, stripe, node, slot)


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


def _time_parity(arch, table, rows, stripe, node, slot) -> OpResult:
    spec, mem = arch.spec, arch.mem
    st = _state(arch)
    p = spec.parity
    tx, lpp, nrows_dram = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    tck = mv.tck_ns(mem)
    rb = 4 * arch.tables[table].dim
    lpr = -(-rb // tx)
    nodes, banks_per_node, exec_level = parity_nodes(arch)
    pnode, pslot = st.layout.parity_location(stripe)  # [n, r]
    n, r = rows.size, p.r
    # requests: per update, data RD + WR (lpr lines each), then per parity RD + WR
    upd_node = np.concatenate([node, pnode.ravel()])
    upd_slot = np.concatenate([slot, pslot.ravel()])
    upd_id = np.concatenate([np.arange(n), np.repeat(np.arange(n), r)])
    is_parity = np.concatenate([np.zeros(n, bool), np.ones(n * r, bool)])
    b, page, col0 = slot_locations(
        upd_slot, banks_per_node, np.full(upd_slot.size, lpr), lpp, nrows_dram
    )
    # each access = lpr reads then lpr writes of the same lines
    acc = np.repeat(np.arange(upd_node.size), 2 * lpr)
    within = np.tile(np.concatenate([np.arange(lpr), np.arange(lpr)]), upd_node.size)
    is_write = np.tile(np.concatenate([np.zeros(lpr, bool), np.ones(lpr, bool)]), upd_node.size)
    coords = _node_coords(arch, exec_level, upd_node[acc], b[acc])
    view, unit_of = _parity_view(arch, exec_level, unit_queue(mem, 2 * lpr, banks_per_node))
    unit_id = unit_of(upd_node[acc], coords)
    addr = encode_address(
        view,
        channel=0 if exec_level != "host" else coords[0],
        rank=0 if exec_level != "host" else coords[1],
        bankgroup=coords[2],
        bank=coords[3],
        row=(page[acc] + (col0[acc] + within) // lpp) % nrows_dram,
        column=(col0[acc] + within) % lpp,
    )
    # units work concurrently, each on its own stream in update order
    if exec_level == "host":
        perm = np.argsort(upd_id[acc] * 2 * lpr * (r + 1) + np.arange(acc.size), kind="stable")
        stats = [replay(make_requests(addr[perm], is_write[perm]), view)]
    else:
        perm = np.lexsort((np.arange(acc.size), upd_id[acc], unit_id))
        u_sorted = unit_id[perm]
        bounds_idx = np.flatnonzero(np.diff(u_sorted)) + 1
        stats = [
            replay(make_requests(addr[seg], is_write[seg]), view)
            for seg in np.split(perm, bounds_idx)
            if seg.size
        ]
    t_dram = max(st_.cycles_drained for st_ in stats) * tck
    stt = _merge_stats(stats)
    # the delta's trip from the data node to each parity node
    ranks_per_ch = mv.org(mem, "ranks")
    d_rank = _node_rank(arch, exec_level, node)
    p_rank = _node_rank(arch, exec_level, pnode.ravel())
    d_rank_r = np.repeat(d_rank, r)
    same_rank = d_rank_r == p_rank
    ranks_total = mv.org(mem, "channels") * ranks_per_ch
    peak = mv.channel_peak_gbps(mem)
    in_dram = exec_level in ("bankgroup", "bank")
    rank_bus = np.zeros(ranks_total)
    if in_dram:
        np.add.at(rank_bus, d_rank_r[same_rank], rb)
        np.add.at(rank_bus, p_rank[same_rank], rb)
    cross = ~same_rank
    chan_bytes = np.zeros(mv.org(mem, "channels"))
    if exec_level != "host":
        np.add.at(chan_bytes, d_rank_r[cross] // ranks_per_ch, rb)
        np.add.at(chan_bytes, p_rank[cross] // ranks_per_ch, rb)
        if in_dram:
            np.add.at(rank_bus, d_rank_r[cross], rb)
            np.add.at(rank_bus, p_rank[cross], rb)
    t_rank_bus = float(rank_bus.max()) / peak if rank_bus.size else 0.0
    t_chan = float(chan_bytes.max()) / peak
    # XOR throughput: data unit XORs old/new, parity unit XORs the delta into the parity (a
    # Reed-Solomon parity unit multiplies it by its GF(2^8) coefficient first: the gf datapath)
    multiplies = PARITY_CODES.get(p.code).unit_multiplies
    area, clock, _ = parity_unit_figures(gf=multiplies)
    # the parity datapath runs in its host's clock domain: the unit's, or the CPU's
    domain = (
        spec.host.clock_ghz * 1000.0 if exec_level == "host" else spec.level(exec_level).clock_mhz
    )
    clock = p.unit_clock_mhz if p.unit_clock_mhz > 0 else min(clock, domain)
    xor_bytes = np.bincount(upd_node, minlength=nodes).astype(np.float64) * rb
    t_xor = float(xor_bytes.max()) / XOR_WIDTH_BYTES * 1000.0 / clock
    # pj_per_byte_xor is the XOR's (8 gates and a register a byte); a multiplying parity unit
    # switches more logic a byte: its energy taken as the XOR's scaled by the two datapaths'
    # synthesized areas (nmp rtl report: 3.6x at 64 bits), the data side's stays the XOR's
    gf_energy_scale = area / parity_unit_figures()[0] if multiplies else 1.0
    bounds = {"dram": t_dram, "rank_bus": t_rank_bus, "channel": t_chan, "xor": t_xor}
    bottleneck = max(bounds, key=lambda x: bounds[x])
    latency = bounds[bottleneck]
    e = dram_energy(mem, [stt], latency / tck)
    io_bit = mv.io_pj_per_bit(mem)
    dram_bytes = float(addr.size * tx)
    io_bytes = float(rank_bus.sum() + chan_bytes.sum())
    if not in_dram:
        io_bytes += dram_bytes  # the rank unit or the host reads and writes over the rank bus
    energy = {
        "dram_core": float(sum(v for kk, v in e.items() if kk != "io")),
        "dram_io": io_bytes * 8 * io_bit,
        "units": (n + n * r * gf_energy_scale) * rb * p.pj_per_byte_xor,
        "sram": 0.0,
    }
    data_share = float((~is_parity).sum()) / max(1, is_parity.size)
    bd = {
        "bottleneck": bottleneck,
        "bounds_ns": bounds,
        "executing_level": exec_level,
        "updates": int(n),
        "data_side": {
            "bytes": 2.0 * n * lpr * tx,
            "dram_energy_pj": energy["dram_core"] * data_share,
        },
        "parity_side": {
            "bytes": 2.0 * n * r * lpr * tx,
            "dram_energy_pj": energy["dram_core"] * (1 - data_share),
        },
        "transfer_bytes": {"rank_bus": float(rank_bus.sum()), "channel": float(chan_bytes.sum())},
        "row_hit_rate": stt.row_hits / max(1, stt.row_hits + stt.row_misses + stt.row_conflicts),
        "parity_unit_area_mm2": area,
        "parity_unit_energy_scale": gf_energy_scale,
    }
    return OpResult(
        latency / tck,
        latency,
        energy,
        {"dram": dram_bytes, "rank": float(rank_bus.sum()), "channel": float(chan_bytes.sum())},
        bd,
        float(xor_bytes.max() / xor_bytes.mean()) if xor_bytes.mean() > 0 else 1.0,
    )


def _node_coords(arch, level: str, node: np.ndarray, b: np.ndarray):
    """(channel, rank, bankgroup, bank) of bank ``b`` of parity-level ``node``."""
    mem = arch.mem
    ranks, bgs, banks = mv.org(mem, "ranks"), mv.org(mem, "bankgroups"), mv.org(mem, "banks")
    lv = arch.spec.parity.level
    if lv in arch.layouts and arch.layouts[lv].capacity_banks > 0:
        lay = arch.layouts[lv]
        ch, rk, unit = lay.node_coords(node)
        return ch, rk, lay.unit_bg[unit, b], lay.unit_bank[unit, b]
    if lv == "rank":
        rid = node
        bg, bk = b // banks, b % banks
    elif lv == "bankgroup":
        rid, bg, bk = node // bgs, node % bgs, b
    else:
        rid, bg, bk = node // (bgs * banks), (node // banks) % bgs, node % banks
    return rid // ranks, rid % ranks, bg, bk


def _node_rank(arch, level: str, node: np.ndarray) -> np.ndarray:
    ch, rk, _, _ = _node_coords(arch, level, node, np.zeros_like(node))
    return ch * mv.org(arch.mem, "ranks") + rk


def _parity_view(arch, exec_level: str, queue: int):
    """(view, function giving the unit of each access): each unit replays on a view of its own;
    the host uses the memory itself."""
    mem = arch.mem
    if exec_level == "host":
        return mem, lambda node, coords: np.zeros_like(node)
    ranks = mv.org(mem, "ranks")
    hold = arch.spec.units_hold_rows
    if exec_level == "rank":
        view = unit_view(mem, "rank", hold_rows=hold)
        return view, lambda node, coords: coords[0] * ranks + coords[1]
    return unit_view(mem, exec_level, queue, hold_rows=hold), lambda node, coords: node


class _Merged:
    """Command and row-buffer counts summed over several replays."""

    def __init__(self, stats: list) -> None:
        self.cmd_counts: dict[str, int] = {}
        for st in stats:
            for key, v in st.cmd_counts.items():
                self.cmd_counts[key] = self.cmd_counts.get(key, 0) + v
        self.row_hits = sum(st.row_hits for st in stats)
        self.row_misses = sum(st.row_misses for st in stats)
        self.row_conflicts = sum(st.row_conflicts for st in stats)


def _merge_stats(stats: list) -> _Merged:
    return _Merged(stats)


__all__ = ["parity_consistent", "parity_update", "recover_node", "xor_into"]
