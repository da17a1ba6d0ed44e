"""Request latency from the tiers, by hand."""

import numpy as np
import pytest

from nmp.cache.tiers import TierLatency, dram_line_latency_ns


def test_request_latency_by_hand():
    t = TierLatency(dram_line_ns=50.0, burst_ns=2.5, dequant_ns=2.0, ssd_read_ns=80_000.0)
    per = t.per_code_ns(64, 24)
    assert per.tolist() == [0.0, 50.0, 52.0, 100.0, 102.0]
    assert t.row_ns(256) == 50.0 + 3 * 2.5  # four lines of one DRAM row
    codes = np.array([1, 1, 2, 0, 3, 4, 0, 0], dtype=np.int8)
    off = np.array([0, 3, 6, 8])
    got = t.request_ns(codes, off, per)
    # request 0: all hit (50 + 50 + 52); 1: a miss (one SSD read) + L3 hits; 2: two misses
    assert got.tolist() == pytest.approx([152.0, 80_000.0 + 100.0 + 102.0, 80_000.0])


def test_dram_latency_is_a_plausible_idle_read():
    line, burst = dram_line_latency_ns("ddr4-3200aa")
    # DDR4-3200AA: tRCD + tCL = 2 x 13.75 ns plus the burst (BL8: 2.5 ns) and the controller
    assert 30.0 < line < 80.0
    assert burst == pytest.approx(2.5)
