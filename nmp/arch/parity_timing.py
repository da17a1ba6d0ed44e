"""The time and energy of in-memory parity updates (:func:`nmp.arch.parity.parity_update`).

Per update, the data node reads the old row and writes the new one, each parity node reads and
writes its parity row; these requests are lowered to the nodes' banks and replayed on the
internal view of the executing unit's level (:func:`_replay_updates`). The delta travels from
the data node to each parity node: through the buffer chip over the rank bus twice (same rank),
or up to the host and back over the channel (another rank) (:func:`_delta_transfer`). XOR
throughput is the unit's width at its clock (:func:`_xor_bound`). The update takes the slowest
of the four.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.area import parity_unit_figures
from nmp.arch.lowering import slot_locations, unit_queue, unit_view
from nmp.arch.timing import dram_energy
from nmp.coding import StripeLayout
from nmp.memory import encode_address, make_requests, replay
from nmp.parity_codes import PARITY_CODES
from nmp.results import OpResult

XOR_WIDTH_BYTES = 8  # the parity unit's datapath: 64 bits per cycle (nmp rtl report width 64)


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


def time_parity(
    arch, layout: StripeLayout, table: int, rows: np.ndarray, stripe, node, slot
) -> OpResult:
    """The updates of ``rows`` of ``table`` (their ``stripe``, data ``node`` and ``slot`` by
    ``layout``), in order, on ``arch``."""
    spec, mem = arch.spec, arch.mem
    p = spec.parity
    tx = mv.tx_bytes(mem)
    tck = mv.tck_ns(mem)
    rb = 4 * arch.tables[table].dim
    lpr = -(-rb // tx)
    nodes, banks_per_node, exec_level = parity_nodes(arch)
    pnode, pslot = layout.parity_location(stripe)  # [n, r]
    n, r = rows.size, p.r
    acc = _lower_updates(arch, exec_level, banks_per_node, node, slot, pnode, pslot, r, lpr)
    stats = _replay_updates(exec_level, acc, lpr, r)
    t_dram = max(st_.cycles_drained for st_ in stats) * tck
    stt = _Merged(stats)
    rank_bus, chan_bytes = _delta_transfer(arch, exec_level, node, pnode, r, rb)
    peak = mv.channel_peak_gbps(mem)
    t_rank_bus = float(rank_bus.max()) / peak if rank_bus.size else 0.0
    t_chan = float(chan_bytes.max()) / peak
    xor = _xor_bound(arch, exec_level, acc.upd_node, nodes, rb)
    bounds = {"dram": t_dram, "rank_bus": t_rank_bus, "channel": t_chan, "xor": xor.t_ns}
    bottleneck = max(bounds, key=lambda x: bounds[x])
    latency = bounds[bottleneck]
    e = dram_energy(mem, [stt], latency / tck)
    io_bit = mv.io_pj_per_bit(mem)
    dram_bytes = float(acc.addr.size * tx)
    io_bytes = float(rank_bus.sum() + chan_bytes.sum())
    if exec_level not in ("bankgroup", "bank"):
        io_bytes += dram_bytes  # the rank unit or the host reads and writes over the rank bus
    energy = {
        "dram_core": float(sum(v for kk, v in e.items() if kk != "io")),
        "dram_io": io_bytes * 8 * io_bit,
        "units": (n + n * r * xor.gf_energy_scale) * rb * p.pj_per_byte_xor,
        "sram": 0.0,
    }
    data_share = float((~acc.is_parity).sum()) / max(1, acc.is_parity.size)
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
        "parity_unit_area_mm2": xor.area_mm2,
        "parity_unit_energy_scale": xor.gf_energy_scale,
    }
    xor_bytes = xor.bytes_per_node
    return OpResult(
        latency / tck,
        latency,
        energy,
        {"dram": dram_bytes, "rank": float(rank_bus.sum()), "channel": float(chan_bytes.sum())},
        bd,
        float(xor_bytes.max() / xor_bytes.mean()) if xor_bytes.mean() > 0 else 1.0,
    )


@dataclass(frozen=True)
class _Accesses:
    """The updates' DRAM accesses, one per line: address, write or read, and per access the
    update it belongs to (``upd_id``), its executing unit, and (per update access, not per
    line) whether it is a parity's; ``upd_node`` is each update access's node; ``view`` the
    memory the units replay on."""

    addr: np.ndarray
    is_write: np.ndarray
    upd_id: np.ndarray
    unit_id: np.ndarray
    is_parity: np.ndarray
    upd_node: np.ndarray
    view: Any  # the executing level's MemorySpec view, or the memory itself


def _lower_updates(
    arch, exec_level: str, banks_per_node: int, node, slot, pnode, pslot, r: int, lpr: int
) -> _Accesses:
    """Per update, the data row's RD + WR (``lpr`` lines each), then each parity's RD + WR,
    lowered to addresses on the executing level's view."""
    mem = arch.mem
    lpp, nrows_dram = mv.lines_per_page(mem), mv.org(mem, "rows")
    n = node.size
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
    return _Accesses(addr, is_write, upd_id[acc], unit_id, is_parity, upd_node, view)


def _replay_updates(exec_level: str, acc: _Accesses, lpr: int, r: int) -> list:
    """The accesses replayed: units work concurrently, each on its own stream in update order
    (the host: one stream)."""
    addr, is_write, view = acc.addr, acc.is_write, acc.view
    if exec_level == "host":
        perm = np.argsort(acc.upd_id * 2 * lpr * (r + 1) + np.arange(addr.size), kind="stable")
        return [replay(make_requests(addr[perm], is_write[perm]), view)]
    perm = np.lexsort((np.arange(addr.size), acc.upd_id, acc.unit_id))
    u_sorted = acc.unit_id[perm]
    bounds_idx = np.flatnonzero(np.diff(u_sorted)) + 1
    return [
        replay(make_requests(addr[seg], is_write[seg]), view)
        for seg in np.split(perm, bounds_idx)
        if seg.size
    ]


def _delta_transfer(arch, exec_level: str, node, pnode, r: int, rb: int):
    """The deltas' bytes from each data node to its parity nodes: (per rank over its bus, per
    channel). The same rank: through the buffer chip, twice over the rank's bus (in-DRAM units
    only); another rank: up to the host and back over the channels (and both ranks' buses
    where the units are in the DRAM)."""
    mem = arch.mem
    ranks_per_ch = mv.org(mem, "ranks")
    d_rank = _node_rank(arch, exec_level, node)
    p_rank = _node_rank(arch, exec_level, pnode.ravel())
    d_rank_r = np.repeat(d_rank, r)
    same_rank = d_rank_r == p_rank
    ranks_total = mv.org(mem, "channels") * ranks_per_ch
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
    return rank_bus, chan_bytes


@dataclass(frozen=True)
class _XorBound:
    t_ns: float
    bytes_per_node: np.ndarray
    area_mm2: float
    gf_energy_scale: float


def _xor_bound(arch, exec_level: str, upd_node: np.ndarray, nodes: int, rb: int) -> _XorBound:
    """The busiest node's XORs at the parity unit's width and clock: the data unit XORs old and
    new, the parity unit XORs the delta into the parity (a Reed-Solomon parity unit multiplies
    it by its GF(2^8) coefficient first: the gf datapath)."""
    spec, p = arch.spec, arch.spec.parity
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
    return _XorBound(t_xor, xor_bytes, area, gf_energy_scale)


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
