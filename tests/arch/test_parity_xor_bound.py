"""The XOR-throughput bound of an in-memory parity update, by nmp/arch/parity.py's stated model.

Every node an update touches (its data node and its r parity nodes, placed by the table's
:class:`nmp.coding.StripeLayout`) XORs one row of rb = 4 x dim bytes on a datapath of
``XOR_WIDTH_BYTES`` a cycle, so the busiest node needs

    t_xor = (its updates x rb) / XOR_WIDTH_BYTES x 1000 / clock_MHz   ns,

the clock being ``parity.unit_clock_mhz`` when set, else the RTL's fmax capped by the clock
domain the unit sits in (its level's ``clock_mhz``, or the CPU's for the host). The update's
latency is the largest of its bounds; a slow enough unit makes it the XOR's.
"""

from __future__ import annotations

import numpy as np
import pytest

import nmp.arch.parity as parity
from nmp.arch import load_arch
from nmp.arch.area import parity_unit_figures
from nmp.coding import StripeLayout

from .conftest import SHIPPED

DIM = 64  # the small_workload fixture's tables (tests/arch/conftest.py)
RB = 4 * DIM
XOR_WIDTH_BYTES = 8  # a 64-bit datapath: one 8-byte word a cycle
# models/arch/*.toml: trim-g's, trim-b's, tensordimm's and recross's units run at 300 MHz
# (recross: PAPERS.md), recnmp's buffer chip at 1200 MHz, host-cpu's cores at 2.2 GHz.
DOMAIN_MHZ = {
    "trim-g": 300.0,
    "trim-b": 300.0,
    "tensordimm": 300.0,
    "recross": 300.0,
    "recnmp": 1200.0,
    "host-cpu": 2200.0,
}


def _arch(name, workload, overrides=None):
    arch = load_arch(name, overrides=overrides or {})
    arch.bind(workload)
    return arch


def _rows(seed=0, n=300):
    # uneven on purpose: a few rows repeat, so one node carries more XOR work than the others
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.integers(0, 1000, n), np.full(40, 17), np.full(20, 402)])


def _busiest_node_bytes(arch, rows):
    """The bytes the busiest node XORs, from the stripe layout the spec describes."""
    p = arch.spec.parity
    nodes, _, _ = parity.parity_nodes(arch)
    layout = StripeLayout(nodes, p.k, p.r, rotating=p.rotating)
    stripe, node, _ = layout.locate(rows)
    pnode, _ = layout.parity_location(stripe)
    touched = np.concatenate([node, np.asarray(pnode).ravel()])
    assert touched.size == rows.size * (1 + p.r)
    return int(np.bincount(touched, minlength=nodes).max()) * RB


def _update(arch, rows, seed=1):
    vals = np.random.default_rng(seed).standard_normal((rows.size, DIM)).astype(np.float32)
    return arch.parity_update(rows, vals, table=0)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_xor_bound_is_the_busiest_nodes_bytes_at_the_units_width_and_clock(
    small_workload, name
):
    arch = _arch(name, small_workload)
    assert arch.tables[0].dim == DIM
    assert parity.XOR_WIDTH_BYTES == XOR_WIDTH_BYTES
    rows = _rows()
    busiest = _busiest_node_bytes(arch, rows)
    op = _update(arch, rows)
    bd = op.breakdown
    fmax = parity_unit_figures()[1]
    clock = min(fmax, DOMAIN_MHZ[name])
    want = busiest / XOR_WIDTH_BYTES * 1000.0 / clock
    assert bd["bounds_ns"]["xor"] == pytest.approx(want, rel=1e-12)
    # the latency is the largest bound, and it is at least the XOR's
    assert op.t_ns == pytest.approx(max(bd["bounds_ns"].values()), rel=1e-12)
    assert op.t_ns >= want * (1 - 1e-12)


def test_trim_g_s_update_is_xor_bound_at_its_300_mhz_units(small_workload):
    # trim-g's bank-group units: the RTL datapath's fmax is far above the 300-MHz domain, so
    # the XOR runs at 300 MHz, and on this update it is the slowest part
    arch = _arch("trim-g", small_workload)
    assert parity_unit_figures()[1] > 300.0
    rows = _rows()
    want = _busiest_node_bytes(arch, rows) / XOR_WIDTH_BYTES * 1000.0 / 300.0
    op = _update(arch, rows)
    assert op.breakdown["bottleneck"] == "xor"
    assert op.t_ns == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", ["recross", "trim-b", "recnmp", "host-cpu"])
def test_a_slow_unit_clock_makes_the_update_xor_bound(small_workload, name):
    base = _arch(name, small_workload)
    rows = _rows()
    op0 = _update(base, rows)
    # a clock slow enough that the XOR outlasts every other bound tenfold
    busiest = _busiest_node_bytes(base, rows)
    others = max(v for k, v in op0.breakdown["bounds_ns"].items() if k != "xor")
    clock = busiest / XOR_WIDTH_BYTES * 1000.0 / (10.0 * others)
    slow = _arch(name, small_workload, {"parity.unit_clock_mhz": clock})
    op = _update(slow, rows)
    want = busiest / XOR_WIDTH_BYTES * 1000.0 / clock
    assert op.breakdown["bottleneck"] == "xor"
    assert op.breakdown["bounds_ns"]["xor"] == pytest.approx(want, rel=1e-12)
    assert op.t_ns == pytest.approx(want, rel=1e-12)
    # the other bounds do not depend on the unit's clock
    for k in ("dram", "rank_bus", "channel"):
        assert op.breakdown["bounds_ns"][k] == pytest.approx(op0.breakdown["bounds_ns"][k])
