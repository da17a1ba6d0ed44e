"""The loaded-latency probe on CPU: its dry run, its pointer chain, the model's prediction for it
(the stage path's own timing), and nmp validate's check gpu.latency (none recorded: "not run")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nmp.errors import NmpError
from nmp.gpu import latency_probe as lp
from nmp.gpu.hbm import hbm_calibration, with_probe
from nmp.gpu.model import latencies, slice_queue
from nmp.gpu.spec import load_gpu

from .scripts import load_script

STEPS = 256


def _script():
    return load_script("gpu_latency")


@pytest.fixture(scope="module")
def h200():
    return load_gpu("h200")


def test_dry_run_builds_and_checks_every_launch(capsys):
    argv = ["--dry-run", "--warps", "1,48,64", "--chains", "1,4", "--row-bytes", "32"]
    assert _script().main(argv) == 0
    out = capsys.readouterr().out
    assert "12 launches; buffers: hbm 1,024 MiB (8,388,608 nodes), l2 15 MiB" in out
    assert "largest grid 1056 blocks of 256 threads" in out  # 64 warps: 8 blocks of 8 warps
    assert "hbm         64      4    32" in out and "dry run:" in out


def test_dry_run_rejects_bad_configurations(capsys):
    script = _script()
    assert script.main(["--dry-run", "--warps", "65"]) == 1
    assert "warps_per_sm 65: must be 1..64" in capsys.readouterr().err
    one = ["--levels", "hbm", "--chains", "1", "--row-bytes", "32"]
    assert script.main(["--dry-run", "--warps", "24", *one]) == 0  # 3 blocks of 8 warps
    assert "largest grid 396 blocks of 256 threads" in capsys.readouterr().out
    assert script.main(["--dry-run", "--warps", "12"]) == 1
    assert "warps_per_sm 12: not a multiple of 8" in capsys.readouterr().err
    assert script.main(["--dry-run", "--hbm-bytes", str(1 << 27)]) == 1
    assert "must be >= 4 x the L2" in capsys.readouterr().err


def test_chain_is_one_seeded_cycle_through_every_node():
    n = 5000
    nxt = lp.chain(n, seed=3)
    seen = np.zeros(n, dtype=bool)
    node = 17
    for _ in range(n):
        assert not seen[node]
        seen[node] = True
        node = int(nxt[node])
    assert node == 17 and seen.all()
    assert np.array_equal(nxt, lp.chain(n, seed=3))
    assert not np.array_equal(nxt, lp.chain(n, seed=4))
    assert not np.any(nxt == np.arange(n))  # no node points at itself


def test_chain_starts_are_evenly_spaced_along_the_cycle():
    n, count = 1000, 8
    nxt = lp.chain(n, seed=1)
    starts = lp.chain_starts(nxt, count, seed=1)
    position = {}
    node = int(starts[0])
    for i in range(n):
        position[node] = i
        node = int(nxt[node])
    gaps = np.diff(sorted(position[int(s)] for s in starts))
    assert set(gaps.tolist()) == {n // count}


def test_model_at_one_load_per_sm_is_the_unloaded_latency(h200):
    lat = latencies(h200, with_probe(hbm_calibration(h200.hbm), h200.hbm))
    cyc = h200.sm.cycle_ns
    hbm = lp.predict(h200, lp.ProbePoint("hbm", 1, 1, 128), STEPS)["latency_ns"]
    l2 = lp.predict(h200, lp.ProbePoint("l2", 1, 1, 128), STEPS)["latency_ns"]
    assert hbm == pytest.approx(lat.hbm_cycles * cyc, rel=2e-3)
    assert l2 == pytest.approx(lat.l2_cycles * cyc, rel=2e-3)


def test_model_latency_is_the_stage_paths_loaded_latency(h200):
    """At any load the probe's step costs what a stage's HBM miss costs at that load: the
    unloaded latency, the HBM queue at the probe's utilization and the slices' wait."""
    cal = with_probe(hbm_calibration(h200.hbm), h200.hbm)
    lat = latencies(h200, cal)
    cyc = h200.sm.cycle_ns
    for w in (16, 48, 64):
        p = lp.ProbePoint("hbm", w, 1, 128)
        m = lp.predict(h200, p, STEPS)
        assert m["bound"] == "latency"
        assert m["latency_ns"] == pytest.approx(m["loaded_hbm_ns"], rel=1e-4)
        loads = h200.sm.count * w * STEPS
        t_ns = loads / m["requests_per_s"] * 1e9
        queue = slice_queue(h200, bytes=loads * 128.0, requests=float(loads))
        want = (
            lat.hbm_cycles * cyc + cal.queueing_ns(m["hbm_utilization"])
            + queue.wait_cycles(t_ns) * cyc
        )  # fmt: skip
        assert m["latency_ns"] == pytest.approx(want, rel=1e-4)


def test_model_latency_rises_with_loads_in_flight_and_only_through_the_queues(h200):
    curve = [lp.predict(h200, lp.ProbePoint("hbm", w, 2, 128), STEPS) for w in (1, 8, 32, 64)]
    ns = [m["latency_ns"] for m in curve]
    assert ns == sorted(ns) and ns[-1] > 1.3 * ns[0]  # the H200 measured 1.32x (128 B)
    gbps = [m["gbps"] for m in curve]
    assert gbps == sorted(gbps)
    assert gbps[-1] <= h200.hbm.probe_random_gbps[h200.hbm.probe_fetch_bytes.index(128)] * 1.001
    # Without the HBM queue and the slices' request rate the latency stays the unloaded one
    # until the hard bandwidth bound.
    flat = load_gpu("h200", {"hbm.queueing": False, "l2.requests_per_ns": 0.0})
    light = lp.predict(flat, lp.ProbePoint("hbm", 32, 2, 128), STEPS)
    assert light["latency_ns"] == pytest.approx(ns[0], rel=2e-3)
    assert (
        light["latency_ns"]
        < lp.predict(h200, lp.ProbePoint("hbm", 32, 2, 128), STEPS)["latency_ns"]
    )


def test_chains_are_loads_in_flight_that_a_warp_waits_for_together(h200):
    # 16 warps x 2 chains load the queues as 32 x 1, but each step of a 2-chain warp waits
    # for the slower of its two loads: the L2's spread x (H_2 - 1) = 31.3 / 2 ns more (the
    # H200's probe: 180.0 against 169.8 ns at 32 B).
    a = lp.predict(h200, lp.ProbePoint("l2", 16, 2, 32), STEPS)["latency_ns"]
    b = lp.predict(h200, lp.ProbePoint("l2", 32, 1, 32), STEPS)["latency_ns"]
    assert a - b == pytest.approx(h200.l2.latency_spread_ns / 2, rel=0.02)
    flat = load_gpu("h200", {"sm.waits_for_slowest_load": False})
    a = lp.predict(flat, lp.ProbePoint("l2", 16, 2, 32), STEPS)["latency_ns"]
    b = lp.predict(flat, lp.ProbePoint("l2", 32, 1, 32), STEPS)["latency_ns"]
    assert a == pytest.approx(b, rel=1e-6)


def test_validate_check_without_records_does_not_pass():
    from nmp.validate.real_gpu import latency_rows_for
    from nmp.validate.result import KIT_CHECKS

    assert "gpu.latency" in KIT_CHECKS
    (row,) = latency_rows_for([])
    assert row.verdict == "not run" and row.group == "real-gpu"
    assert "benchmarks/gpu_latency.py --record" in row.detail


def test_validate_check_compares_each_recorded_point(tmp_path, h200):
    from nmp.validate.real_gpu import latency_rows_for

    modeled = lp.predict(h200, lp.ProbePoint("hbm", 8, 1, 32), STEPS)["latency_ns"]
    rec = {
        "arch_preset": "h200",
        "gpu_name": "NVIDIA H200",
        "driver": "580.159",
        "steps": STEPS,
        "points": [
            {"level": "hbm", "warps_per_sm": 8, "chains": 1, "row_bytes": 32,
             "latency_ns": modeled * 1.1},
            {"level": "hbm", "warps_per_sm": 8, "chains": 1, "row_bytes": 32,
             "latency_ns": modeled * 1.3},
        ],
    }  # fmt: skip
    path = lp.record(rec, tmp_path)
    assert path.name.startswith("latency-probe-h200-NVIDIA-H200-")
    ((stem, back),) = lp.load_records(tmp_path)
    rows = latency_rows_for([(stem, back)])
    assert [r.verdict for r in rows] == ["agrees", "disagrees"]
    assert rows[0].id == f"gpu.latency.{stem}.hbm.w8.k1.b32" and rows[0].unit == "ns"
    (tmp_path / "latency-probe-bad.json").write_text(json.dumps({"steps": 1, "points": []}))
    with pytest.raises(NmpError, match="latency-probe-bad.json: .* needs 'arch_preset'"):
        lp.load_records(tmp_path)
