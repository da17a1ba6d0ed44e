"""The GPU codec throughputs the SC'24 speedup is modeled at (nmp/compress/speedup.py,
``GPU_CODECS``) as their source states them, and the codec's time in the modeled step:

    codec time = sent / compress GB/s + sent / decompress GB/s,  sent = (N - 1) x bytes per peer

cuSZp2 (Huang et al., SC'24, abstract): 332.42 GB/s compression, 513.04 GB/s decompression
on an NVIDIA A100.
"""

from __future__ import annotations

import pytest

from nmp.compress.network import load_network
from nmp.compress.speedup import GPU_CODECS, StepSetup, codec_rates, step_times


def test_cuszp2_runs_at_its_abstracts_rates():
    comp, decomp, source = GPU_CODECS["cuszp2-a100"]
    assert (comp, decomp) == (332.42, 513.04)
    assert "332.42 / 513.04" in source and "A100" in source
    assert codec_rates("cuszp2-a100", (1.0, 1.0)) == (332.42, 513.04)


def test_the_codec_adds_its_time_to_each_all_to_all():
    net = load_network("infiniband-hdr-200g")
    setup = StepSetup(8, 2048, 26, 64, 1.0, (512, 256, 64), (512, 512, 256, 1))
    comp, decomp = codec_rates("cuszp2-a100", (1.0, 1.0))
    st = step_times(setup, net, ratio=10.0, comp_gbps=comp, decomp_gbps=decomp)
    m = setup.bytes_per_peer()
    sent = 7 * m
    codec_ns = sent / comp + sent / decomp  # GB/s = bytes per ns
    assert st["alltoall_ns_compressed"] == pytest.approx(
        net.alltoall_ns(8, m / 10.0) + codec_ns, rel=1e-12
    )
    assert st["step_time_ns_compressed"] == pytest.approx(
        st["compute_ns"] + 2 * st["alltoall_ns_compressed"], rel=1e-12
    )
