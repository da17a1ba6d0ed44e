"""Vertical placement (TensorDIMM): every row split column-wise over all rank units. Each
lookup reaches every rank node, which reads its slice (rounded up to whole bursts) and adds it;
the host concatenates the slices of a pooled vector."""

from __future__ import annotations

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.functional import dedupe, gather_segments
from nmp.arch.lowering import LevelStream, expand_lines, slot_locations, unit_view
from nmp.arch.placement import FlatLookups, Placement
from nmp.arch.policies import register
from nmp.arch.policies.base import RowPolicy
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.config import KeyedValueError
from nmp.memory import encode_address


def lower_vertical(spec, lay, mem, flat: FlatLookups, order: np.ndarray) -> LevelStream:
    """TensorDIMM: each lookup reads its column slice on every rank node (whole bursts)."""
    tx, lpp, rows = mv.tx_bytes(mem), mv.lines_per_page(mem), mv.org(mem, "rows")
    nodes = lay.nodes
    slice_bytes = -(-flat.row_bytes[order] // nodes)
    lpr = -(-slice_bytes // tx)
    # every node stores every row's slice at slot = global row id
    b, page, col0 = slot_locations(flat.grow[order], lay.banks_per_unit, lpr, lpp, rows)
    n = order.size
    node = np.tile(np.arange(nodes, dtype=np.int64), n)
    rep = np.repeat(np.arange(n, dtype=np.int64), nodes)
    item, within = expand_lines(lpr[rep])
    src = rep[item]
    _, _, unit = lay.node_coords(node[item])
    view = unit_view(mem, "rank", hold_rows=spec.units_hold_rows)
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


class Vertical(RowPolicy):
    """TensorDIMM: every row split column-wise over all rank units."""

    name = "vertical"
    slices_rows = True

    def validate(self, spec) -> None:
        super().validate(spec)
        if spec.data_levels != ("rank",):
            raise KeyedValueError("policy", "the vertical (column) split is across ranks only")

    def place(self, arch, flat: FlatLookups, order: np.ndarray) -> Placement:
        n = flat.n
        return Placement(
            np.full(n, LEVELS.index("rank"), dtype=np.int64),
            np.full(n, -1, dtype=np.int64),  # every node
            flat.grow.copy(),
            np.zeros(n, dtype=bool),
            np.zeros(n, dtype=bool),
            {},
        )

    def tree_traffic(self, arch, flat: FlatLookups, plc: Placement) -> TreeTraffic:
        """Every rank node sends one partial slice per bag to the host of its channel."""
        lay = arch.layouts["rank"]
        ranks, channels = mv.org(arch.mem, "ranks"), mv.org(arch.mem, "channels")
        n_bags = len(np.unique(flat.table * flat.batch + flat.bag))
        send = np.full(lay.nodes, n_bags, dtype=np.int64)
        host = np.bincount(
            lay.node_rank_id(np.arange(lay.nodes)) // ranks, weights=send, minlength=channels
        ).astype(np.int64)
        return TreeTraffic({"rank": send}, {}, host)

    def execute(self, arch, flat: FlatLookups, plc: Placement) -> list[np.ndarray]:
        """Each rank unit reduces its column slice; the host concatenates the slices."""
        assert arch.store is not None
        pooled = []
        starts = np.searchsorted(flat.table, np.arange(flat.num_tables + 1))
        nodes = arch.layouts["rank"].nodes
        for t in range(flat.num_tables):
            a, b = int(starts[t]), int(starts[t + 1])
            dim = arch.tables[t].dim
            rows = np.ascontiguousarray(flat.row[a:b])
            bag = np.ascontiguousarray(flat.bag[a:b])
            w = None if flat.weight is None else np.ascontiguousarray(flat.weight[a:b])
            uniq, uinv = dedupe(rows, arch.tables[t].rows)
            values = arch.store.read(t, uniq)
            step = -(-dim // nodes)
            parts = [
                gather_segments(
                    bag, uinv, w, values, flat.batch, (min(n * step, dim), min((n + 1) * step, dim))
                )
                for n in range(nodes)
            ]
            pooled.append(np.concatenate(parts, axis=1))
        return pooled

    def split(self, arch, flat, plc, order):
        return None  # every node reads a slice of every lookup: no split by level

    def lower(self, arch, level, flat, plc, order, split):
        return lower_vertical(arch.spec, arch.layouts[level], arch.mem, flat, order)

    def level_work(self, arch, level, stream, flat, sums, dims):
        lay = arch.layouts[level]
        lanes = arch.spec.level(level).lanes
        node_lookups = stream.lookups_per_node.astype(np.float64)
        dim_l = dims[flat.table]
        # a node adds its slice of every lookup: ceil(slice / lanes) cycles each
        lanes_work = np.full(lay.nodes, float((-(-dim_l // (lay.nodes * lanes))).sum()))
        return node_lookups, lanes_work, int(flat.n), float(sums.dim_sum.sum())

    def result_slices(self, arch) -> int:
        return arch.layouts["rank"].nodes

    def instruction_lookups(self, arch, flat, plc, sums):
        # an instruction per lookup reaches every channel (each holds a slice); none is served
        # inside the DRAM chips
        channels = mv.org(arch.mem, "channels")
        ranks_total = channels * mv.org(arch.mem, "ranks")
        per_chan = np.bincount(np.tile(np.arange(channels), flat.n), minlength=channels)
        return per_chan, np.zeros(ranks_total, dtype=np.int64), False


register(Vertical())
