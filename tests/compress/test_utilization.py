"""Compute at a measured utilization (the kit's default) or at peak (SC'24's claim setup)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.compress.network import load_network
from nmp.compress.speedup import MEASURED_STEPS, StepSetup, step_times, utilization_of
from nmp.errors import NmpError
from nmp.papers.sc24 import model as claims

KW = {"workload": "criteo-terabyte", "nodes": 8, "network": "infiniband-hdr-200g"}
KW |= {"codec": "hybrid", "eb": 0.03, "codec_gbps": "cuszp2-a100"}


def test_the_measured_utilization_by_hand():
    m = MEASURED_STEPS["sok-v100-fp32"]
    # MLPerf DLRM per sample, forward: bottom 13-512-256-128, interaction of 27 vectors of 128,
    # top 479-1024-1024-512-256-1; x3 for training, 8192 samples per V100 at 15.7 TFLOP/s
    macs = 13 * 512 + 512 * 256 + 256 * 128 + 27 * 27 * 128
    macs += 479 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256
    mlp_s = 3 * 2 * macs * 8192 / 15.7e12
    emb_s = 3 * 4 * 65536 * 128 * 4 / 900e9  # 4 tables per GPU, read + read/write, fp32
    assert m.utilization() == pytest.approx((mlp_s + emb_s) / 16.42e-3, rel=1e-9)
    assert utilization_of("sok-v100-fp32") == pytest.approx(0.496, abs=0.001)
    assert utilization_of(0.25) == 0.25
    for bad in ("tpu", 0.0, 1.5):
        with pytest.raises(NmpError, match="compute utilization"):
            utilization_of(bad)


def test_lower_utilization_leaves_less_for_compression_to_gain():
    net = load_network("infiniband-hdr-200g")
    peak = StepSetup(8, 2048, 26, 64, 1.0, (512, 256, 64), (512, 512, 256, 1))
    half = replace(peak, utilization=0.5)
    assert half.compute_ns() == pytest.approx(2 * peak.compute_ns())
    a, b = (step_times(s, net, ratio=15.0, comp_gbps=300, decomp_gbps=500) for s in (peak, half))
    assert b["compute_utilization"] == 0.5
    assert b["alltoall_share"] < a["alltoall_share"]
    assert 1 < b["speedup_modeled"] < a["speedup_modeled"]
    for st in (a, b):
        assert st["speedup_modeled"] < st["speedup_bound"]
        assert st["speedup_bound"] == pytest.approx(1 / (1 - st["alltoall_share"]))
    with pytest.raises(NmpError, match=r"compute utilization must be in \(0, 1\]"):
        replace(peak, utilization=0.0).compute_ns()


def test_claim_columns_and_bound():
    kit = claims.training_speedup(quick=True, **KW)
    paper = claims.training_speedup(quick=True, **KW, setup={"compute.utilization": 1.0})
    assert "compute at 49.6 % of peak" in kit["detail"]
    assert 1.0 < kit["value"] < paper["value"] < paper["bound"]
    assert kit["value"] < kit["bound"] < paper["bound"]
    assert "/ compute" in paper["bound_detail"]
    with pytest.raises(NmpError, match=r"unknown setup key\(s\) compute\.util"):
        claims.training_speedup(quick=True, **KW, setup={"compute.util": 1.0})
    got = claims.ratio_higher(
        quick=True, workload="criteo-terabyte", nodes=8, better="hybrid", worse="zstd",
        setup={"compute.utilization": 1.0},
    )  # fmt: skip
    assert got["value"] and got["margin"] > 1.0


def test_study_sweeps_the_utilization(tmp_path):
    from nmp.compress.study import run_study

    params = {
        "workloads": ["criteo-kaggle"],
        "codecs": ["hybrid"],
        "eb": [0.03],
        "nodes": [4],
        "networks": ["infiniband-hdr-200g"],
        "codec_gbps": [100.0],
        "compute_utilization": ["sok-v100-fp32", 1.0],
        "repeats": 1,
    }
    rows = run_study(params, out_dir=tmp_path)
    by = {r["utilization_setting"]: r for r in rows}
    assert by[1.0]["speedup_modeled"] > by["sok-v100-fp32"]["speedup_modeled"]
    assert "compute % of peak" in (tmp_path / "report.md").read_text()
    with pytest.raises(NmpError, match="params.compute_utilization"):
        run_study({**params, "compute_utilization": [2.0]}, out_dir=tmp_path)
