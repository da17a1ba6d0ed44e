"""On recross-eval's tables and access pattern, designs rank by throughput as their bandwidth
and balance allow (batch 8 instead of 32 to keep CI short; the report runs batch 32).

Why each relation holds, from the model (one DDR5-4800 channel, 2 ranks, for every design):
- host-cpu moves every row over one channel (19.2 GB/s); any design whose units read inside
  the ranks has at least the two rank buses (38.4 GB/s) and beats it.
- TensorDIMM splits each 256-B row in two 128-B slices read by both ranks at once: at most the
  2x of two buses, and no cache or locality to do better.
- Units inside the DRAM chips (TRiM-G, TRiM-B, ReCross) have several times the rank buses'
  bandwidth, so they beat the rank-level designs without a cache.
- ReCross's bandwidth-aware partition moves hot rows to the levels with bandwidth to spare;
  without it (the frequency-aware base: each level its capacity share of the rows, hottest on
  the bank units) the bank units are overloaded, so turning it off slows ReCross down.
- TRiM-B has 4x TRiM-G's units but the activation window (tFAW) and the buffer-chip unit's
  partial sums bound both, so it gains far less than 4x.
"""

from __future__ import annotations

import pytest

from nmp.evaluate.point import run_point

# The relations below compare bandwidths, so the host reads every row from DRAM: its caches
# (per-core L1/L2, the 32 MB LLC) are off (with them, recross-eval's small tables stay cached
# and the host gains ~5x; see tests/arch/test_mechanisms.py and docs/host-model.md).
COMMON = {
    "arch.memory.channels": 1,
    "arch.memory.ranks": 2,
    "workload.batch": 8,
    "arch.host.llc_mib": 0,
    "arch.host.l2_kib": 0,
    "arch.host.l1_kib": 0,
}


def _tput(arch: str, **sets) -> float:
    r = run_point(arch, "recross-eval", "ddr5-4800-40", {**COMMON, **sets})
    return r.lookups_per_s


@pytest.fixture(scope="module")
def tput():
    names = ("host-cpu", "tensordimm", "trim-g", "trim-b", "recross")
    return {n: _tput(n) for n in names}


def test_every_nmp_design_beats_the_host(tput):
    for name, value in tput.items():
        if name != "host-cpu":
            assert value > 1.5 * tput["host-cpu"], name


def test_vertical_split_gains_at_most_the_rank_buses(tput):
    s = tput["tensordimm"] / tput["host-cpu"]
    assert 1.5 < s < 2.6


def test_in_dram_units_beat_rank_level_units(tput):
    for name in ("trim-g", "trim-b", "recross"):
        assert tput[name] > 1.5 * tput["tensordimm"], name


def test_finer_units_gain_less_than_their_count(tput):
    assert tput["trim-b"] < 2.0 * tput["trim-g"]


def test_recross_partition_ablation():
    """ReCross's premise: bank units with column paths of their own (its setup in nmp validate).
    With the kit's default reading (arch.shared_bankgroup_column_path) the busiest shared bank
    group bounds ReCross, an imbalance the LP's even split does not see: there the
    frequency-aware base is as fast (docs/arch-model.md)."""
    own = {"arch.shared_bankgroup_column_path": False}
    off = _tput("recross", **own, **{"arch.bandwidth_aware_partition": False})
    assert off < _tput("recross", **own)
