"""nmp measure host: sysfs parsing, the compiled pointer chase (small), the preset it writes
(loadable, every value sourced), the --check comparison and the CLI's one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nmp.arch import load_arch_spec
from nmp.cli import main
from nmp.errors import NmpError
from nmp.measure import host, kernel, lookup_loop, probe, sysinfo
from nmp.measure.check import CheckPlan, CheckRow, parse_batches, run_check
from nmp.memory import load_memory

CPUINFO = """processor : 0
model name : Test CPU 9000
cpu MHz : 2400.000
flags : fpu sse2 avx2 fma
"""


def _sysfs(root: Path) -> Path:
    rows = (
        ("index0", 1, "Data", "32K", 8, "0"),
        ("index1", 1, "Instruction", "32K", 8, "0"),
        ("index2", 2, "Unified", "1024K", 16, "0"),
        ("index3", 3, "Unified", "16M", 16, "0-7"),
    )
    for name, level, kind, size, ways, cpus in rows:
        d = root / name
        d.mkdir(parents=True)
        for f, v in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("ways_of_associativity", ways),
            ("shared_cpu_list", cpus),
        ):
            (d / f).write_text(f"{v}\n")
    return root


def test_sysfs_caches_and_cpuinfo(tmp_path):
    caches = sysinfo.data_caches(_sysfs(tmp_path))
    assert sorted(caches) == [1, 2, 3]  # the instruction cache is left out
    assert caches[1].kib == 32 and caches[2].kib == 1024 and caches[3].kib == 16 * 1024
    assert caches[3].ways == 16 and caches[3].shared_cpus == 8
    assert sysinfo.cpu_model(CPUINFO) == "Test CPU 9000"
    assert sysinfo.clock_ghz(CPUINFO) == pytest.approx(2.4)
    assert sysinfo.simd_lanes(CPUINFO) == 8
    assert sysinfo.count_cpus("0-3,8,10-11") == 7
    with pytest.raises(NmpError, match="not a size"):
        sysinfo.parse_size_kib("lots")
    with pytest.raises(NmpError, match="no cache information"):
        sysinfo.data_caches(tmp_path / "absent")


def test_pointer_chase_runs_and_parses():
    small = probe.chase(32 * 1024, steps=20_000)
    big = probe.chase(8 * 2**20, steps=20_000)
    assert 0 < small.ns_per_row < big.ns_per_row  # an L1-resident chase is the faster
    many = probe.chases(8 * 2**20, (1, 8), steps=20_000)
    assert len(many) == 2 and many[1].rows_per_ns > many[0].rows_per_ns  # misses overlap
    assert probe.stream_gbps(2**20, threads=1, passes=2) > 0
    with pytest.raises(NmpError, match="not two numbers"):
        probe.parse_output("oops")


def _measured() -> host.Measured:
    caches = {
        1: sysinfo.CacheInfo(1, 48.0, 12, 1),
        2: sysinfo.CacheInfo(2, 2048.0, 16, 1),
        3: sysinfo.CacheInfo(3, 32768.0, 16, 8),
    }
    m = host.Measured("Test CPU 9000", "2026-01-02", 8, caches)
    kib, mib = 1024, 2**20
    m.latency_ns = {
        16 * kib: 1.5,
        512 * kib: 6.0,
        1024 * kib: 7.0,
        16 * mib: 30.0,
        128 * mib: 100.0,
    }
    m.chase_latency_ns = {"l2": 6.0, "dram": 100.0, "dram_4k": 130.0}
    m.mlp = {
        "l2": {1: 1 / 6.0, 16: 2.0},  # 12 lines in flight
        "dram": {1: 0.01, 16: 0.1},  # 10
        "dram_4k": {1: 1 / 130.0, 16: 0.08},
    }
    m.bandwidth_gbps = {"llc": {1: 20.0, 8: 150.0}, "dram": {1: 10.0, 8: 45.0}}
    # embedding_bag: ns per lookup on L1 tables (dims 16 and 64) and a table in each level
    m.loop = lookup_loop.LoopMeasurement(
        {"l1_small": 2.0, "l1": 2.6, "l2": 3.0, "llc": 10.0, "dram": 20.0},
        {"l1_small": 4096, "l1": 16384, "l2": 1024 * kib, "llc": 8 * mib, "dram": 128 * mib},
    )
    m.call = kernel.CallCost(call_ns=7000.0, thread_sync_ns=2500.0, threads=8, spread=1.1)
    return m


def test_preset_from_measurements(tmp_path, monkeypatch):
    monkeypatch.setattr(sysinfo, "clock_ghz", lambda: 2.5)
    monkeypatch.setattr(sysinfo, "simd_lanes", lambda: 16)
    m = _measured()
    host.derive_preset(m, 48 * 1024, 2048 * 1024, 32 * 2**20)
    h = m.host
    assert h["l1_latency_ns"] == 1.5 and h["l2_latency_ns"] == 7.0
    assert h["llc_latency_ns"] == 30.0 and h["dram_latency_ns"] == 100.0
    assert h["l1_fill_buffers"] == pytest.approx(12.0)  # max(2.0 x 6, 0.1 x 100)
    # the chases kept 10 lines past the L2 in flight (0.1 lines/ns x 100 ns), the loop more
    assert h["l2_mshrs"] == max(h["llc_lines_in_flight"], h["dram_lines_in_flight"]) > 10
    assert h["page_walk_ns"] == pytest.approx(30.0)  # 130 - 100
    assert h["page_walkers"] == pytest.approx(2.4)  # 0.08 x 30
    assert h["llc_gbps"] == 150.0
    # the loop's arithmetic: 0.5 cycles per 16-lane vector between dims 16 and 64
    assert h["vector_cycles"] == pytest.approx(0.5) and h["lookup_cycles"] == pytest.approx(4.5)
    # the L1 table costs 2.6 ns, the L2's 3.0 and the LLC's 8-MiB table 10: each line's stall
    # beyond the arithmetic, less the lower levels' shares at their stalls
    caches = (48 * 1024, 2048 * 1024, 32 * 2**20)
    s2 = lookup_loop.served_shares(2**20, *caches)
    l2_stall = 0.4 / 4 / s2[1:].sum()
    s3 = lookup_loop.served_shares(8 * 2**20, *caches)  # in the TLB's reach: no walks
    llc_stall = (7.4 / 4 - s3[1] * l2_stall) / s3[2:].sum()
    assert h["l2_lines_in_flight"] == pytest.approx(7.0 / l2_stall, rel=1e-3)
    assert h["llc_lines_in_flight"] == pytest.approx(30.0 / llc_stall, rel=1e-3)
    # 45 GB/s over 19.2 GB/s channels: 3, rounded up to a power of two (3 was written, and
    # then refused by every command that loaded the preset)
    assert m.channels == 4
    # a call's fixed cost and each extra thread's, as measured (the model charges them)
    assert h["call_ns"] == 7000.0 and h["thread_sync_ns"] == 2500.0
    path = tmp_path / "mine.toml"
    path.write_text(host.preset_toml(m, "mine"))
    spec = load_arch_spec(str(path))
    assert spec.host.source == "measured on Test CPU 9000, 2026-01-02"
    assert spec.host.l2_mshrs == h["l2_mshrs"] and spec.memory.channels == 4
    load_memory(spec.memory.preset, channels=spec.memory.channels)  # a count the memory takes
    assert [host.channels_for(g) for g in (0.0, 19.2, 19.3, 54.5, 76.8, 77.0)] == [1, 1, 2, 4, 4, 8]
    assert spec.host.dram_lines_in_flight == h["dram_lines_in_flight"] > 0
    assert (spec.host.call_ns, spec.host.thread_sync_ns) == (7000.0, 2500.0)
    for line in path.read_text().splitlines():  # every [host] value says where it comes from
        if "=" in line and not line.startswith(("#", "name", "description", "policy")):
            key = line.split("=")[0].strip()
            if key not in ("cpu", "source", "cores", "threads", "ranks"):
                assert "#" in line, line


def test_an_llc_the_core_hardly_has_is_said(tmp_path, monkeypatch, capsys):
    """Where the chase at half the LLC sysfs lists takes nearly DRAM's latency (a VM's share
    of the L3, measured on the Zen 3 and Zen 4 guests at 86-95 %), the preset would read
    tables up to the LLC's size as LLC hits: the measurement says so, in its JSON and as one
    warning line of `nmp measure host`; a real LLC step says nothing."""
    monkeypatch.setattr(sysinfo, "clock_ghz", lambda: 2.5)
    monkeypatch.setattr(sysinfo, "simd_lanes", lambda: 16)
    m = _measured()  # 30 ns at 16 MiB against 100 at 128 MiB: an LLC
    host.derive_preset(m, 48 * 1024, 2048 * 1024, 32 * 2**20)
    assert m.warnings == [] and host.summary(m)["warnings"] == []
    shared = _measured()
    shared.latency_ns[16 * 2**20] = 85.0  # 85 % of DRAM's 100 ns
    host.derive_preset(shared, 48 * 1024, 2048 * 1024, 32 * 2**20)
    (text,) = shared.warnings
    assert "16 MiB" in text and "85 %" in text and "32 MiB" in text
    assert host.summary(shared)["warnings"] == [text]

    def measure(**_):
        host.derive_preset(shared, 48 * 1024, 2048 * 1024, 32 * 2**20)
        return shared

    monkeypatch.setattr(host, "measure", measure)
    monkeypatch.setattr(kernel, "torch_quiet", lambda: None)
    out = tmp_path / "mine.toml"
    assert main(["measure", "host", "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if "LLC" in ln]
    assert len(lines) == 1 and lines[0].startswith("nmp: warning: the pointer chase at 16 MiB")
    assert '"warnings"' in captured.out and out.exists()


def test_check_rows_compare_model_with_measured():
    row = CheckRow("embedding_bag", "skewed", 32, 1, 100e6, 90e6, 120e6, "channel")
    assert row.ratio == pytest.approx(1.2) and row.within
    assert not CheckRow("k", "uniform", 8, 2, 100e6, 1, 130e6, "x").within
    assert row.to_json()["within_tolerance"] is True
    assert parse_batches("8, 32,128") == (8, 32, 128)
    for bad in ("", "8,x", "0"):
        with pytest.raises(NmpError, match="--batches"):
            parse_batches(bad)


def test_check_runs_real_lookups_beside_the_model():
    """One small row: embedding_bag over the fused, capped tables, and the model's figure."""
    plan = CheckPlan("host-cpu", batches=(2,), max_rows=300, rounds=2, round_lookups=100)
    steps = []
    rows = run_check(plan, lambda r: None, lambda: steps.append(1))
    assert len(steps) == plan.steps()  # the progress bar's total
    assert {(r.skew, r.kernel) for r in rows} >= {
        ("skewed", "embedding_bag"),
        ("uniform", "embedding_bag"),
    }
    for r in rows:
        assert r.measured > 0 and r.model > 0 and r.ratio == r.model / r.measured
        # the median of the rounds, each after the model's own warm-up
        assert len(r.rounds) == 2 and min(r.rounds) <= r.measured <= max(r.rounds)
        assert r.warmup_batches >= 1 and r.timed_lookups >= 200
    if "fbgemm_tbe" in plan.skipped:  # say why where it does not import
        assert "fbgemm" in plan.skipped["fbgemm_tbe"]


def test_call_cost_and_row_map():
    """The call-cost microbenchmark gives a positive cost (no extra thread on one); a row map
    is a bijection of every table's rows that moves the rows (the caches cold for them)."""
    c = kernel.call_cost(1)
    assert c.call_ns > 0 and c.thread_sync_ns == 0.0 and c.threads == 1
    rows = np.array([1, 3, 1000, 4096])
    m = kernel.RowMap.draw(rows, np.random.default_rng(0))
    for t, n in enumerate(rows):
        mapped = (m.scale[t] * np.arange(n) + m.shift[t]) % n
        assert sorted(mapped) == list(range(n))  # every row once
        if n >= 1000:
            assert (mapped != np.arange(n)).mean() > 0.9  # nearly every row moves


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["measure", "gpu"], "unknown target 'gpu'"),
        (["measure", "host", "--batches", "8,x"], "--batches"),
        (["measure", "host", "--out", "preset.txt"], "a host preset is a .toml file"),
        (["measure", "host", "--max-rows", "0"], "--max-rows"),
    ],
)
def test_cli_bad_input_is_one_line(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # refused as the flag is parsed (--max-rows 0)
        code = exc.code
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_lookup_loop_costs_recovered_from_its_tables():
    """Times per lookup made from known costs (arithmetic, a stall per line from each level,
    the tables' cache shares) give those costs back; the lines in flight are latency / stall."""
    clock, lanes = 2.0, 16
    caches = (32 * 1024, 1024 * 1024, 32 * 2**20)
    sets = {"l2": 512 * 1024, "llc": 16 * 2**20, "dram": 256 * 2**20}
    lookup_cycles, vector_cycles = 3.6, 0.4
    stall = np.array([0.0, 0.5, 2.0, 10.0])  # ns per line from the L1, L2, LLC, DRAM

    reach, walk_ns = 8 * 2**20, 7.0  # the TLB's reach; a walk's stall

    def ns(dim: int, set_bytes: int = 0) -> float:
        compute = (lookup_cycles + vector_cycles * dim / lanes) / clock
        if not set_bytes:
            return compute
        share = lookup_loop.served_shares(set_bytes, *caches)
        walks = lookup_loop.walks_per_lookup(set_bytes, reach)
        return compute + 4 * float(share @ stall) + walks * walk_ns

    m = lookup_loop.LoopMeasurement(
        {"l1_small": ns(16), "l1": ns(64)} | {lv: ns(64, b) for lv, b in sets.items()},
        {"l1_small": 4096, "l1": 16384} | sets,
    )
    lat = {"l2": 5.0, "llc": 30.0, "dram": 100.0}
    out, notes = lookup_loop.derive_loop(
        m,
        clock_ghz=clock,
        lanes=lanes,
        latency_ns=lat,
        caches=caches,
        tlb_reach_bytes=reach,
        walk_stall_ns=walk_ns,
    )
    assert out["lookup_cycles"] == pytest.approx(3.6, abs=1e-3)
    assert out["vector_cycles"] == pytest.approx(0.4, abs=1e-3)
    assert out["l2_lines_in_flight"] == pytest.approx(10.0, rel=1e-3)
    assert out["llc_lines_in_flight"] == pytest.approx(15.0, rel=1e-3)
    assert out["dram_lines_in_flight"] == pytest.approx(10.0, rel=1e-3)
    assert all(isinstance(v, float) for v in out.values())  # TOML-writable
    assert "256 MiB table" in notes["dram_lines_in_flight"]
    assert lookup_loop.walks_per_lookup(256 * 2**20, reach) == pytest.approx(31 / 32)
    assert lookup_loop.walks_per_lookup(reach // 2, reach) == 0.0
    shares = lookup_loop.served_shares(256 * 2**20, *caches)
    assert shares.sum() == pytest.approx(1.0) and shares[3] == pytest.approx(1 - 1 / 8)


def test_a_calls_thread_sync_is_the_parallel_loops_excess_per_extra_thread(monkeypatch):
    """call_cost's two figures from its loops' medians: one tiny call's time, and what the
    bags split over four threads cost beyond one thread's, per thread beyond the first."""
    pytest.importorskip("torch")
    times = {(1, 1): [100.0, 104.0, 98.0], (64, 1): [1000.0, 990.0], (64, 4): [1600.0, 1620.0]}

    def fake(indices, weights, offsets, threads):
        return list(times[(int(indices.numel()), threads)])

    monkeypatch.setattr(kernel, "_ns_per_call", fake)
    monkeypatch.setattr(kernel, "SYNC_BAGS", 64)
    cost = kernel.call_cost(4)
    assert cost.call_ns == pytest.approx(100.0)
    assert cost.thread_sync_ns == pytest.approx((1610.0 - 995.0) / 3)
    assert cost.spread == pytest.approx(104.0 / 98.0)
    assert kernel.call_cost(1).thread_sync_ns == 0.0
