"""The cost of an in-memory parity update, recomputed by hand from the stated model of
nmp/arch/parity_timing.py (``time_parity``) and the presets' numbers.

Per update of a row of ``rb`` = 4 x dim bytes: the data node reads the old row and writes the
new one, each of the ``r`` parity nodes reads and writes its parity; every one of those
``1 + r`` nodes XORs ``rb`` bytes (a Reed-Solomon parity node multiplies the delta by its
GF(2^8) coefficient first: its energy a byte the XOR's times the synthesized GF datapath's
area over the XOR one's, and that datapath's area in the design). The delta crosses the rank
bus twice (out of the data node's rank, into the parity node's) where the units sit in the
DRAM, and the channel where the two ranks differ. The host (host-cpu) reads and writes every
line over the bus itself. So:

    units energy = n (1 + r g) rb x pj_per_byte_xor   (g = 1 for XOR, GF area / XOR area for RS)
    I/O energy   = I/O bytes x 8 x io_pj_per_bit
    DRAM core    = the DRAM command energy of the replayed reads and writes (not their I/O)
    rank-bus time = the busiest rank's bytes / the channel's peak (64 B per nBL = 8 tCK)
"""

from __future__ import annotations

import numpy as np
import pytest

import nmp.arch.parity_timing as parity
from nmp.arch import load_arch, run_design_point
from nmp.arch.area import parity_unit_figures

DIM = 64  # the small_workload fixture's tables (tests/arch/conftest.py)
RB = 4 * DIM  # fp32 row bytes
TX = 64  # DDR5 burst: 64 B
LPR = RB // TX  # lines per row
# DDR5-4800 (both presets below): tCK 0.416 ns, a 64-B burst every nBL = 8 tCK.
PEAK_GBPS = TX / (8 * 0.416)
IO_PJ_PER_BIT = 4.0  # models/memory/ddr5-4800an.toml and ddr5-4800-40.toml
N = 200  # updates per call
# One row of each of N stripes (k = 4 rows a stripe): no two updates share a data or a parity
# line, so the memory controller merges no request and every read and write reaches the DRAM.
ROWS = np.arange(0, 4 * N, 4)

# (preset, overrides, r, pj_per_byte_xor from models/arch/<preset>.toml [parity])
CASES = [
    ("host-cpu", {}, 1, 1.0),
    ("trim-b", {}, 1, 0.1),
    ("trim-g", {"parity.code": "rs", "parity.r": 2}, 2, 0.1),
]
IDS = ["host-cpu", "trim-b", "trim-g-rs"]


def _arch(name, overrides, workload):
    arch = load_arch(name, overrides=overrides)
    arch.bind(workload)
    return arch


def _update(arch, seed=0, rows=None):
    rng = np.random.default_rng(seed)
    rows = ROWS if rows is None else rows
    vals = rng.standard_normal((len(rows), DIM)).astype(np.float32)
    return arch.parity_update(rows, vals, table=0)


def test_the_fixture_is_what_the_hand_figures_assume(small_workload):
    arch = _arch("trim-b", {}, small_workload)
    assert arch.tables[0].dim == DIM
    assert parity.mv.tx_bytes(arch.mem) == TX
    assert parity.mv.channel_peak_gbps(arch.mem) == pytest.approx(PEAK_GBPS, rel=1e-12)
    assert parity.mv.io_pj_per_bit(arch.mem) == IO_PJ_PER_BIT
    host = _arch("host-cpu", {}, small_workload)
    assert parity.mv.io_pj_per_bit(host.mem) == IO_PJ_PER_BIT


@pytest.mark.parametrize(("name", "overrides", "r", "pj_xor"), CASES, ids=IDS)
def test_every_node_of_an_update_xors_one_row(small_workload, name, overrides, r, pj_xor):
    op = _update(_arch(name, overrides, small_workload))
    g = 1.0
    if overrides.get("parity.code") == "rs":
        g = parity_unit_figures(gf=True)[0] / parity_unit_figures()[0]
        assert g > 2.0  # a GF(2^8) constant multiply is several XOR trees a byte
    assert op.energy_pj["units"] == pytest.approx(N * (1 + r * g) * RB * pj_xor, rel=1e-12)
    # host-cpu: a SIMD XOR on the core at 1 pJ/byte, 2 x 256 B per update.
    if name == "host-cpu":
        assert op.energy_pj["units"] / N == pytest.approx(512.0, rel=1e-12)


def test_the_host_moves_every_line_over_the_bus(small_workload):
    # host-cpu: no unit in the DRAM: reads and writes of the data row and its parity all cross
    # the pins: N x 2 rows x (read + write) x 256 B at 4 pJ/bit.
    op = _update(_arch("host-cpu", {}, small_workload))
    assert op.breakdown["executing_level"] == "host"
    assert op.bytes_by_level["dram"] == N * 2 * 2 * RB
    assert op.energy_pj["dram_io"] == pytest.approx(N * 2 * 2 * RB * 8 * IO_PJ_PER_BIT, rel=1e-12)
    assert op.energy_pj["dram_io"] / N == pytest.approx(32_768.0, rel=1e-12)


@pytest.mark.parametrize(("name", "overrides", "r", "pj_xor"), CASES[1:], ids=IDS[1:])
def test_in_dram_units_pay_io_only_for_the_deltas(small_workload, name, overrides, r, pj_xor):
    # Each delta leaves the data node's rank and enters the parity node's: 2 rb on the rank
    # buses per parity; the channel carries those whose ranks differ. Their bytes cross pins.
    op = _update(_arch(name, overrides, small_workload))
    assert op.breakdown["executing_level"] in ("bank", "bankgroup")
    rank, chan = op.bytes_by_level["rank"], op.bytes_by_level["channel"]
    assert rank == 2 * N * r * RB
    assert 0 < chan <= rank and chan % (2 * RB) == 0
    assert op.energy_pj["dram_io"] == pytest.approx((rank + chan) * 8 * IO_PJ_PER_BIT, rel=1e-12)


@pytest.mark.parametrize(("name", "overrides", "r", "pj_xor"), CASES, ids=IDS)
def test_dram_core_energy_is_the_replayed_commands(
    small_workload, monkeypatch, name, overrides, r, pj_xor
):
    # Spy on the DRAM energy of the replay: the core energy is every term but the I/O (priced
    # separately above), over the update's own time; the replay saw lpr reads and lpr writes
    # per row touched (the data row and its r parities).
    seen = []
    real = parity.dram_energy

    def spy(mem, stats, cycles):
        out = real(mem, stats, cycles)
        seen.append((stats, cycles, out))
        return out

    monkeypatch.setattr(parity, "dram_energy", spy)
    arch = _arch(name, overrides, small_workload)
    op = _update(arch)
    ((stats, cycles, e),) = seen
    counts = stats[0].cmd_counts
    rd = counts.get("RD", 0) + counts.get("RDA", 0)
    wr = counts.get("WR", 0) + counts.get("WRA", 0)
    assert rd == wr == N * (1 + r) * LPR
    assert cycles == pytest.approx(op.t_ns / parity.mv.tck_ns(arch.mem), rel=1e-12)
    core = sum(v for k, v in e.items() if k != "io")
    assert {"act", "rd", "wr", "background"} <= set(e) and e["rd"] > 0 and e["wr"] > 0
    assert op.energy_pj["dram_core"] == pytest.approx(core, rel=1e-12)
    sides = (
        op.breakdown["data_side"]["dram_energy_pj"] + op.breakdown["parity_side"]["dram_energy_pj"]
    )
    assert sides == pytest.approx(core, rel=1e-12)
    assert op.energy_pj["sram"] == 0.0
    assert set(op.energy_pj) == {"dram_core", "dram_io", "units", "sram"}


@pytest.mark.parametrize(("name", "overrides", "r"), [c[:3] for c in CASES[1:]], ids=IDS[1:])
def test_one_updates_rank_bus_time_is_its_busiest_ranks_bytes(small_workload, name, overrides, r):
    # One update: the data rank sends r deltas and receives the parities that share its rank;
    # ``cross`` parities sit in the other rank (the channel carries 2 rb for each). The busiest
    # rank bus carries (2 r - cross) rb, at the channel's peak.
    arch = _arch(name, overrides, small_workload)
    crosses = set()
    for row in range(0, 140, 2):  # stripes whose parities share the data's rank, and not
        op = _update(arch, rows=np.array([row]), seed=row)
        cross = op.bytes_by_level["channel"] / (2 * RB)
        assert cross == int(cross) and 0 <= cross <= r
        crosses.add(int(cross))
        expect = (2 * r - cross) * RB / PEAK_GBPS
        assert op.breakdown["bounds_ns"]["rank_bus"] == pytest.approx(expect, rel=1e-12)
        assert op.breakdown["bounds_ns"]["channel"] == pytest.approx(
            op.bytes_by_level["channel"] / PEAK_GBPS, rel=1e-12
        )
    assert len(crosses) > 1  # both same-rank and cross-rank parities were seen


@pytest.mark.parametrize(("name", "overrides", "r"), [c[:3] for c in CASES[1:]], ids=IDS[1:])
def test_a_batch_of_updates_waits_for_the_rank_bus(small_workload, name, overrides, r):
    # 200 updates on two ranks: the busiest rank bus carries between half and all of the rank
    # bytes (2 N r rb), and the update takes the slowest of its bounds.
    op = _update(_arch(name, overrides, small_workload))
    bounds = op.breakdown["bounds_ns"]
    rank_bytes = 2 * N * r * RB
    assert rank_bytes / 2 <= bounds["rank_bus"] * PEAK_GBPS <= rank_bytes
    assert op.t_ns == max(bounds.values())
    assert op.breakdown["bottleneck"] == max(bounds, key=bounds.get)


def test_a_reed_solomon_design_carries_the_gf_parity_unit():
    """The area of a design's parity units is the datapath its code needs: the XOR one, or for
    Reed-Solomon the GF(2^8) multiply-and-XOR one (nmp rtl report's figures at 40 nm)."""
    small = {"workload": {"batch": 2}}
    xor = run_design_point("trim-g", "recross-eval", overrides=small, seed=0)
    rs = run_design_point(
        "trim-g",
        "recross-eval",
        overrides={**small, "arch": {"parity.code": "rs", "parity.r": 2}},
        seed=0,
    )
    per_unit = rs.breakdown["area_mm2"]["parity"] / xor.breakdown["area_mm2"]["parity"]
    assert per_unit == pytest.approx(
        parity_unit_figures(gf=True)[0] / parity_unit_figures()[0], rel=1e-12
    )
    assert per_unit > 2.0
