"""The A100's unloaded L2-miss latency, which the stock embedding kernel (one row load in flight
per warp) waits on for every miss, against the figure its preset is calibrated to.

PAPERS.md ("GPU embedding stage"): an L2 hit takes about 208 cycles and an L2 miss about 570
cycles at 1.41 GHz (404.3 ns) on an A100. The model's miss is the on-chip fabric
(``hbm.fabric_latency_ns``) plus the DRAM part of the HBM2e spec (tRCD + CL + BL); their sum must
come back to the paper's 570 cycles, whatever either part is.
"""

from __future__ import annotations

import pytest

from nmp.gpu.hbm import hbm_calibration, with_probe
from nmp.gpu.model import latencies
from nmp.gpu.spec import load_gpu

CLOCK_GHZ = 1.41  # A100 SXM4 boost clock (NVIDIA A100 whitepaper)
L2_MISS_CYCLES = 570.0  # PAPERS.md: an L2 miss ~570 cycles on A100
L2_HIT_CYCLES = 208.0  # PAPERS.md: an L2 hit ~208 cycles


def test_an_a100_l2_miss_takes_the_papers_570_cycles():
    gpu = load_gpu("a100-80gb")
    assert gpu.sm.cycle_ns == pytest.approx(1.0 / CLOCK_GHZ, rel=1e-9)
    lat = latencies(gpu, with_probe(hbm_calibration(gpu.hbm), gpu.hbm))
    assert lat.hbm_cycles == pytest.approx(L2_MISS_CYCLES, rel=0.005)
    assert lat.hbm_cycles * gpu.sm.cycle_ns == pytest.approx(L2_MISS_CYCLES / CLOCK_GHZ, rel=0.005)
    assert lat.l2_cycles == pytest.approx(L2_HIT_CYCLES, rel=0.005)
    # the DRAM part is a few tens of ns of the HBM2e timing, the rest is on chip
    assert 0.0 < lat.dram_ns < 0.2 * lat.hbm_cycles * gpu.sm.cycle_ns
