import math

import pytest

from nmp.compress.network import NetworkSpec, load_network
from nmp.compress.speedup import StepSetup, paper_comm_speedup, step_times
from nmp.errors import NmpError, SpecError


def test_presets_load_with_sources():
    for name in ("ethernet-100g", "infiniband-hdr-200g", "infiniband-ndr-400g", "nvlink3-a100"):
        net = load_network(name)
        assert net.link_gbps > 0 and net.source


def test_alltoall_alpha_beta():
    net = NetworkSpec("n", "", link_gbps=80.0, latency_us=2.0)  # 10 GB/s
    # pairwise: 7 rounds of (2 us + 1 MB / 10 GB/s = 100 us)
    assert net.alltoall_ns(8, 1e6) == pytest.approx(7 * 102_000)
    bruck = NetworkSpec("n", "", link_gbps=80.0, latency_us=2.0, algorithm="bruck")
    assert bruck.alltoall_ns(8, 1e6) == pytest.approx(3 * (2_000 + 4 * 100_000))
    assert net.alltoall_ns(1, 1e6) == 0.0


def test_zero_latency_model_equals_paper_formula():
    net = NetworkSpec("n", "", link_gbps=200.0, latency_us=0.0)
    setup = StepSetup(8, 2048, 8, 64, 1.0, (64,), (64, 1))
    st = step_times(setup, net, ratio=9.0, comp_gbps=120.0, decomp_gbps=200.0)
    expect = paper_comm_speedup(9.0, net.bytes_per_s, 120e9, 200e9)
    assert st["comm_speedup_modeled"] == pytest.approx(expect, rel=1e-12)
    assert 1.0 < st["speedup_modeled"] < st["comm_speedup_modeled"]


def test_latency_lowers_comm_speedup_below_formula():
    net = NetworkSpec("n", "", link_gbps=200.0, latency_us=5.0)
    setup = StepSetup(16, 2048, 8, 64, 1.0, (64,), (64, 1))
    st = step_times(setup, net, ratio=9.0, comp_gbps=120.0, decomp_gbps=200.0)
    assert st["comm_speedup_modeled"] < st["comm_speedup_paper_formula"]


def test_slow_codec_slows_the_step():
    net = load_network("infiniband-hdr-200g")
    setup = StepSetup(8, 2048, 26, 64, 1.0, (512, 256, 64), (512, 512, 256, 1))
    st = step_times(setup, net, ratio=10.0, comp_gbps=0.5, decomp_gbps=1.0)
    assert st["speedup_modeled"] < 1.0
    assert math.isclose(
        st["step_time_ns_uncompressed"],
        st["compute_ns"] + 2 * st["alltoall_ns_uncompressed"],
    )


def test_bad_network_preset(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('description = "x"\nlink_gbps = -1\nlatency_us = 1\n')
    with pytest.raises(SpecError, match="link_gbps"):
        load_network(str(bad))
    with pytest.raises(NmpError, match="unknown network preset"):
        load_network("token-ring")
