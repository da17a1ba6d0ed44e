"""The native (C) engine against the numba engine, the reference: every output, bit for bit.

Covered: all reference cases (with a log of channel 0's first commands), configurations the
cases never use (closed rows, no jumps, no drain, no refresh, a blocked PRE that stops the scan,
queues of 8 / 64 / 100 entries, a frontend of 3 per cycle, dual issue on and off), every memory
preset with writes and arrival cycles, and the NMP internal views. Then the backend switch.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
import pytest
from memref import dram_ref_dir, load_cases

from nmp.errors import NmpError
from nmp.memory import (
    driver,
    engine,
    internal_view,
    load_memory,
    make_requests,
    native,
    native_build,
    read_trace,
)
from nmp.memory.engine_params import engine_params
from nmp.memory.lines import engine_inputs
from nmp.memory.standards import NCMD
from nmp.reference import case_memory_spec

CASES = load_cases()
PRESETS = ("ddr4-3200aa", "ddr4-2400", "ddr5-4800an", "ddr5-4800-40", "hbm2-2000", "hbm3-6400")


pytestmark = pytest.mark.usefixtures("native_engine")


def _lines(reqs):
    names = reqs.dtype.names
    return reqs["addr"], reqs["write"], reqs["arrival"] if "arrival" in names else None


def _native(reqs, spec, p, log):
    """native.simulate of a request array: the C engine decodes the lines itself."""
    plan = driver._plan(spec)
    addr, write, arrival = _lines(reqs)
    arrival = np.zeros(len(addr), np.int64) if arrival is None else arrival
    return native.simulate(addr, write, arrival, plan.native_decode, p, *plan.tables, log)


def _params(spec, changes=None):
    """The engines' params of ``spec`` (drain, jump) with ``changes`` (field: value); a new
    write-buffer size moves the watermarks with it (80 % and 20 %)."""
    p = driver._plan(spec).engine_params(True, True).copy()
    for k, v in (changes or {}).items():
        p[k] = v
    if changes and "write_queue" in changes:
        p["wm_high"], p["wm_low"] = 0.8 * p["write_queue"], 0.2 * p["write_queue"]
    return p


def _both(reqs, spec, params=None, log_rows=2000):
    """The numba engine on the decoded transactions, the C engine on the lines: every output
    but the last, the count of evaluations (the two engines skip differently), and the command
    log are equal."""
    plan = driver._plan(spec)
    p = _params(spec, params)
    logs = [np.full((log_rows, 5), -1, np.int64) for _ in range(2)]
    a = engine.simulate(*engine_inputs(reqs, spec), p, *plan.tables, logs[0])
    b = _native(reqs, spec, p, logs[1])
    for k, (x, y) in enumerate(zip(a[:-1], b[:-1], strict=True)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"output {k}")
    np.testing.assert_array_equal(logs[0], logs[1], err_msg="command log")
    return a


def _case_inputs(case):
    spec = case_memory_spec(case["memory_args"])
    return read_trace(dram_ref_dir() / case["trace"]), spec


def test_reference_cases_identical(dram_ref):
    assert CASES
    for case in CASES:
        inputs, spec = _case_inputs(case)
        out = _both(inputs, spec)
        assert out[0] == 0, case["id"]


def test_two_rank_wake_bound_is_tight(dram_ref):
    """After an issue a single-issue channel sleeps until the earliest ready clock of the
    classes it holds, leaving out PREs blocked by an active request of their bank (they issue
    only after that request's column command), and an arriving blocked PRE does not wake it:
    on the two-rank DDR4 case with the most blocked PREs it then evaluates about once per
    command (1.135 times when the bound counted them, 1.013 when an arrival woke it)."""
    case = next(c for c in CASES if c["id"] == "emb_uniform_r4m_rb256_p20@ddr4_2r")
    inputs, spec = _case_inputs(case)
    out = _native(inputs, spec, _params(spec), np.full((1, 5), -1, np.int64))
    commands = int(np.sum(out[4][:NCMD]))
    assert out[0] == 0 and commands > 0
    assert out[-1] / commands < 1.005, out[-1] / commands


@pytest.mark.parametrize(
    ("cc", "flags"),
    [(None, ""), (None, "-mno-avx512f"), (None, "-mno-avx512f -mno-avx2"), ("cc", "")],
    ids=["default", "avx2-paths", "plain-c", "system-cc"],
)
def test_portable_build_identical(dram_ref, engine_build, cc, flags):
    """engine.c has AVX-512 paths, AVX2 paths for CPUs without AVX-512, and plain C loops for
    the others (such as ARM): each build gives the reference's results. So does the system's
    ``cc`` (GCC on Debian) where the library is built with Clang (native_build.compiler).
    Each builds with -Werror (native_build adds -Wall -Wextra): a warning fails the test."""
    with engine_build(flags, cc):
        for case in CASES[::3]:
            inputs, spec = _case_inputs(case)
            _both(inputs[:6000], spec)
        # (queues of 24 and 100 slots: the slot scans' and reset_lane's odd lengths)
        for variant in ("blocked-pre-stops-scan", "queues-100-70", "queues-24-16", "closed-row"):
            inputs, spec = _case_inputs(next(c for c in CASES if "random_rw50" in c["id"]))
            _both(inputs[:3000], spec, VARIANTS[variant])
        # a design point's bank-group and bank units (tables of one block of 8 lanes, which
        # AVX2 builds keep in 32 bits), with writes and without
        rng = np.random.default_rng(7)
        for level, banks in (("bankgroup", 4), ("bank", 8)):
            org = {"channels": 1, "ranks": 1, "bankgroups": 1, "banks": banks}
            spec = internal_view(load_memory("ddr4-3200aa").with_org(**org), level)
            addr = (rng.integers(0, 64, 3000) * 8192 + rng.integers(0, 16, 3000) * 64) % (
                spec.capacity_bytes
            )
            arrival = np.cumsum(rng.integers(0, 4, 3000))
            for share in (0.3, 0.0):
                reqs = make_requests(addr, write=rng.random(3000) < share, arrival=arrival)
                _both(reqs, spec)
                _both(reqs, spec, VARIANTS["hold-hit-rows"])


# (fields of nmp.memory.engine_params.ENGINE_PARAMS)
VARIANTS = {
    "closed-row": {"closed_row": 1},
    "blocked-pre-stops-scan": {"skip_blocked": 0},
    "no-jump": {"jump": 0},
    "no-drain": {"drain": 0},
    "no-refresh": {"refresh_on": 0},
    "queues-8": {"read_queue": 8, "write_queue": 8},
    "queues-24-16": {"read_queue": 24, "write_queue": 16},
    "queues-64": {"read_queue": 64, "write_queue": 64},
    "queues-100-70": {"read_queue": 100, "write_queue": 70},
    "frontend-3": {"frontend_ratio": 3},
    "closed-row-blocked-pre": {"closed_row": 1, "skip_blocked": 0},
    "dual-issue-off": {"dual_issue": 0},
    "dual-issue-on": {"dual_issue": 1},
    # a near-memory unit's controller (nmp.arch.lowering.unit_view): single and dual issue,
    # closed-row, and with the scan stopping at a blocked PRE (where both engines ignore it)
    "hold-hit-rows": {"hold_hit_rows": 1},
    "hold-hit-rows-dual-issue": {"hold_hit_rows": 1, "dual_issue": 1},
    "hold-hit-rows-closed-row": {"hold_hit_rows": 1, "closed_row": 1},
    "hold-hit-rows-blocked-pre-stops": {"hold_hit_rows": 1, "skip_blocked": 0},
}
VARIANT_CASES = ("random_rw50_4g", "rmw_simple_rb64", "one_bank_k1__", "stream_64k")


@pytest.mark.parametrize("variant", VARIANTS)
def test_unusual_configurations_identical(dram_ref, variant):
    picked = [c for c in CASES if any(k in c["id"] for k in VARIANT_CASES)]
    assert picked
    for case in picked:
        inputs, spec = _case_inputs(case)
        _both(inputs[:3000], spec, VARIANTS[variant])


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_with_writes_and_arrivals_identical(preset):
    rng = np.random.default_rng(11)
    # (ranks, channels): DDR on one channel and on several (their own instantiations)
    for ranks, channels in ((1, None), (2, None), (1, 4), (2, 2)):
        if "hbm" in preset and channels is not None:
            continue  # (HBM: its preset's channels and pseudo-channels, twice)
        spec = (
            load_memory(preset)
            if "hbm" in preset
            else load_memory(preset, ranks=ranks, channels=channels)
        )
        n = 3000
        # a hot region (row hits, forwarding, coalescing) mixed with random lines
        hot = rng.integers(0, 4096, n) * 64
        cold = rng.integers(0, spec.capacity_bytes // 64, n) * 64
        addr = np.where(rng.random(n) < 0.5, hot, cold)
        arrival = np.cumsum(rng.integers(0, 6, n))
        reqs = make_requests(addr, write=rng.random(n) < 0.4, arrival=arrival)
        _both(reqs, spec)


def _threads_identical(reqs, spec, threads, params=None, log_rows=2000):
    """The C engine with the channels on ``threads`` threads and on one: every output (the
    count of evaluations included) and the command log are equal."""
    plan = driver._plan(spec)
    p = _params(spec, params)
    addr, write, arrival = _lines(reqs)
    arrival = np.zeros(len(addr), np.int64) if arrival is None else arrival
    outs = []
    for t in (1, threads):
        log = np.full((log_rows, 5), -1, np.int64)
        out = native.simulate(
            addr, write, arrival, plan.native_decode, p, *plan.tables, log, threads=t
        )
        outs.append((*out, log))
    for k, (x, y) in enumerate(zip(*outs, strict=True)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"output {k}")
    return outs[0]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threaded_channels_identical(dram_ref, threads):
    """The channels of a multi-channel run on threads (engine_threads.h): on every reference
    case, on multi-channel presets with writes, coalescing, forwarding and arrivals, and on
    the generic build (4 channels; closed rows, small queues, no jumps), the results of one
    thread."""
    multi = 0
    for case in CASES:
        inputs, spec = _case_inputs(case)
        out = _threads_identical(inputs, spec, threads)
        assert out[1] == case["ramulator2"]["cycles"], case["id"]
        multi += spec.org.channels > 1
    assert multi >= 16
    rng = np.random.default_rng(3)
    presets = (("hbm2-2000", 8), ("hbm3-6400", None), ("ddr4-3200aa", 4), ("ddr5-4800-40", 2))
    for preset, channels in presets:
        spec = load_memory(preset, channels=channels)
        n = 20000
        hot = rng.integers(0, 2048, n) * 64
        cold = rng.integers(0, spec.capacity_bytes // 64, n) * 64
        addr = np.where(rng.random(n) < 0.5, hot, cold)
        arrival = np.cumsum(rng.integers(0, 2, n))
        reqs = make_requests(addr, write=rng.random(n) < 0.4, arrival=arrival)
        for params in (None, VARIANTS["closed-row"] | VARIANTS["queues-8"], VARIANTS["no-jump"]):
            _threads_identical(reqs, spec, threads, params)


@pytest.mark.parametrize("level", ["rank", "bankgroup", "bank"])
def test_nmp_internal_views_identical(level):
    rng = np.random.default_rng(5)
    for preset in ("ddr4-3200aa", "ddr5-4800-40"):
        spec = internal_view(load_memory(preset), level)
        spec = spec.with_org(channels=1, ranks=1)
        if level != "rank":
            spec = spec.with_org(bankgroups=1)
        if level == "bank":
            spec = spec.with_org(banks=1)
        rows = rng.integers(0, 64, 4000)
        addr = (rows * 1024 + rng.integers(0, 16, 4000) * 64) % spec.capacity_bytes
        _both(make_requests(addr), spec)


def test_native_arguments_checked():
    """The C engine's wrapper refuses arguments of the wrong shape, naming what is wrong, and
    the engine a run whose request indices and rows do not fit a slot word."""
    spec = load_memory("ddr4-3200aa", channels=2, ranks=2)
    plan = driver._plan(spec)
    p = _params(spec)
    addr = np.arange(64, dtype=np.uint64) * 64

    def run(writes=64, decode=plan.native_decode):
        wr, arrival = np.zeros(writes, bool), np.zeros(64, np.int64)
        log = np.zeros((0, 5), np.int64)
        return native.simulate(addr, wr, arrival, decode, p, *plan.tables, log)

    assert run()[0] == 0
    # the configuration by name: a positional array, or a field missing, is refused
    with pytest.raises(ValueError, match="one-element array of .*ENGINE_PARAMS"):
        lines = (addr, np.zeros(64, bool), np.zeros(64, np.int64), plan.native_decode)
        native.simulate(*lines, np.zeros(15, np.int64), *plan.tables, np.zeros((0, 5), np.int64))
    with pytest.raises(ValueError, match=r"missing \['wm_low'\]"):
        engine_params(**{k: p[k][0] for k in p.dtype.names if k != "wm_low"})
    with pytest.raises(ValueError, match="one value per line"):
        run(writes=63)
    with pytest.raises(ValueError, match="12 values"):
        run(decode=plan.native_decode[:5])
    # a field whose values would index past the organization (a rank mask of 3 with 2 ranks,
    # a bank mask of 7 with 4 banks), a shift past a word, a negative bit position
    for i, v in ((8, 3), (10, 7), (1, 64), (3, -1)):
        bad = plan.native_decode.copy()
        bad[i] = v
        with pytest.raises(RuntimeError, match="field beyond the organization"):
            run(decode=bad)
    # 64 requests (6 index bits) and rows of 50 bits: 56 bits, over a slot word's 55
    wide = plan.native_decode.copy()
    wide[11] = (1 << 50) - 1
    with pytest.raises(RuntimeError, match="index and row exceed 55 bits"):
        run(decode=wide)


def test_values_changed_between_runs_are_read_again():
    """The wrapper checks the same decode, params and tables once (every replay of a view
    passes them): a value changed in place between runs is still the one a run reads."""
    spec = load_memory("ddr4-3200aa", channels=2, ranks=2)
    plan = driver._plan(spec)
    addr = np.arange(256, dtype=np.uint64) * 64
    wr, arrival, log = np.zeros(256, bool), np.zeros(256, np.int64), np.zeros((0, 5), np.int64)

    def run(p):
        out = native.simulate(addr, wr, arrival, plan.native_decode, p, *plan.tables, log)
        return [np.asarray(v).tolist() for v in out[:10]]

    p = _params(spec)
    drained = run(p)
    p["drain"] = 0  # the same array, another value
    assert run(p) == run(_params(spec, {"drain": 0})) != drained


def test_backend_switch(monkeypatch):
    spec = load_memory("ddr4-3200aa")
    rng = np.random.default_rng(3)
    reqs = make_requests(rng.integers(0, 1 << 20, 2000) * 64, write=rng.random(2000) < 0.3)
    from nmp.memory import replay

    monkeypatch.setenv("NMP_ENGINE", "native")
    assert driver.engine_backend() == "native"
    a = replay(reqs, spec)
    monkeypatch.setenv("NMP_ENGINE", "numba")
    assert driver.engine_backend() == "numba"
    assert replay(reqs, spec) == a
    monkeypatch.setenv("NMP_ENGINE", "fast")
    with pytest.raises(NmpError, match="NMP_ENGINE='fast'"):
        driver.engine_backend()


def test_without_a_compiler_the_numba_engine_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("NMP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NMP_ENGINE", raising=False)
    native._library.cache_clear()
    driver._warn_fallback.cache_clear()
    try:
        assert not native.available()
        assert "no-such-cc" in native.unavailable_reason()
        with pytest.warns(RuntimeWarning, match="numba engine"):
            assert driver.engine_backend() == "numba"
        monkeypatch.setenv("NMP_ENGINE", "native")
        with pytest.raises(NmpError, match="NMP_ENGINE=native"):
            driver.engine_backend()
    finally:
        native._library.cache_clear()
        driver._warn_fallback.cache_clear()


def test_unwritable_cache_builds_in_the_temporary_folder(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NMP_CACHE_DIR", str(blocker / "cache"))  # mkdir fails under a file
    native._library.cache_clear()
    try:
        assert native.available(), native.unavailable_reason()
    finally:
        native._library.cache_clear()


def test_organizations_the_c_engine_does_not_take_run_on_numba(monkeypatch):
    """More than 64 banks per channel: the C engine refuses it, the driver replays it on the
    numba engine (with a warning naming why), and the results are the reference's."""
    from nmp.memory import replay

    spec = load_memory("ddr5-4800an", ranks=4)  # 4 x 8 x 4 = 128 banks per channel
    plan = driver._plan(spec)
    assert "128 banks" in plan.native_unsupported
    p = _params(spec)
    rng = np.random.default_rng(2)
    reqs = make_requests(rng.integers(0, spec.capacity_bytes // 64, 1500) * 64)
    with pytest.raises(RuntimeError, match="more than 64 banks"):
        _native(reqs, spec, p, np.zeros((0, 5), np.int64))
    monkeypatch.setenv("NMP_ENGINE", "native")
    driver._warn_unsupported.cache_clear()
    with pytest.warns(RuntimeWarning, match="128 banks"):
        a = replay(reqs, spec)
    monkeypatch.setenv("NMP_ENGINE", "numba")
    assert replay(reqs, spec) == a
    assert driver._plan(load_memory("ddr5-4800an", ranks=2)).native_unsupported is None


def test_compiler_choice(monkeypatch, tmp_path):
    """$CC first; else the newest clang-N of the first PATH folder with a Clang (not clang's
    other tools), else plain clang, else cc."""
    bins = tmp_path / "bin"
    bins.mkdir()
    path0 = os.environ["PATH"]

    def tool(name):
        p = bins / name
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)

    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(bins))
    assert native_build.compiler() == ["cc"]
    tool("clang")
    assert native_build.compiler() == ["clang"]
    for name in ("clang-14", "clang-19", "clang-apply-replacements-22", "clang-cpp-22"):
        tool(name)
    assert native_build.compiler() == ["clang-19"]
    assert "-mtune=generic" not in native_build._flags(native_build.compiler())
    # issue 42: a folder later on the PATH (one a user may write) never wins over an earlier
    # one, however new its clang; a folder others may write is never used
    late = tmp_path / "late"
    late.mkdir()
    (late / "clang-99").write_text("#!/bin/sh\n")
    (late / "clang-99").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bins}{os.pathsep}{late}")
    assert native_build.compiler() == ["clang-19"]
    late.chmod(0o777)
    monkeypatch.setenv("PATH", f"{late}{os.pathsep}{bins}")
    assert native_build.compiler() == ["clang-19"]
    late.chmod(0o755)
    # a Clang found on the PATH that cannot build: the build falls back to cc (a build that
    # the user cache keeps, as the system-cc build test's)
    (bins / "clang-19").write_text("#!/bin/sh\nexit 1\n")
    monkeypatch.setenv("PATH", f"{bins}{os.pathsep}{path0}")
    native._library.cache_clear()
    try:
        assert native.available(), native.unavailable_reason()
    finally:
        native._library.cache_clear()
    monkeypatch.setenv("CC", "gcc -m64")
    assert native_build.compiler() == ["gcc", "-m64"]
    assert "-mtune=generic" in native_build._flags(native_build.compiler())


# Python installs its Ctrl-C handler only where SIGINT was not ignored when it started: the
# script installs it as a terminal's Python has it (a test worker may pass SIGINT on ignored)
INTERRUPT_SCRIPT = """
import ctypes, ctypes.util, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from nmp.memory.native import INTERRUPTIBLE_TRANSACTIONS, _interruptible
libc = ctypes.CDLL(ctypes.util.find_library("c"))
print("start", flush=True)
t0 = time.monotonic()
try:
    _interruptible(INTERRUPTIBLE_TRANSACTIONS, None, libc.sleep, 30)
except KeyboardInterrupt:
    print(f"interrupted {time.monotonic() - t0:.1f}", flush=True)
"""


def test_ctrl_c_stops_a_long_native_call():
    """Issue 42: a long replay ignored Ctrl-C (the main thread sat in the C engine, where no
    signal reaches Python); a large call now runs in a thread that the main thread waits for.
    Here the C call is libc's sleep(30): Ctrl-C stops the wait within a second."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPT_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "start"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert out.startswith("interrupted") and float(out.split()[1]) < 5, out


@pytest.mark.parametrize("fallback", [False, True])
def test_summary_equals_simulate_and_read_sums(monkeypatch, fallback):
    """native.simulate_summary (a replay without a timeline: its outputs in this thread's
    buffers, the sums read in the same call) gives what simulate then read_sums give, run after
    run on organizations of other sizes (no value left over from the last), with writes or
    none, drained or not; ``fallback``: a run too large for the buffers takes simulate's path."""
    if fallback:
        monkeypatch.setattr(native, "_OUT_SCRATCH_MAX", 16)
    rng = np.random.default_rng(5)
    log = np.zeros((0, 5), np.int64)
    for preset, ranks, channels, has_write, drain in (
        ("ddr4-3200aa", 2, 2, True, True),
        ("ddr4-3200aa", 1, 1, False, False),
        ("hbm2-2000", None, None, True, False),
        ("ddr5-4800an", 2, None, False, True),
    ):
        org = {} if ranks is None else {"ranks": ranks, "channels": channels}
        spec = load_memory(preset, **org)
        plan = driver._plan(spec)
        n = 1500
        addr = (rng.integers(0, spec.capacity_bytes // 64, n) * 64).astype(np.uint64)
        wr = (rng.random(n) < 0.4).astype(np.int8) if has_write else np.zeros(n, np.int8)
        arrival = np.cumsum(rng.integers(0, 4, n)).astype(np.int64)
        p = plan.engine_params(drain, True)
        dec, ks = plan.native_decode, int(plan.native_decode[0])
        out = native.simulate(addr, wr, arrival, dec, p, *plan.tables, log)
        sums = native.read_sums(wr if has_write else None, ks, *out[5:8], out[1])
        want = (*out[:3], out[3].tolist(), out[4].tolist(), int(out[9].sum()), sums)
        got = native.simulate_summary(
            addr, wr, arrival, ks, dec, p, *plan.tables, has_write=has_write
        )
        assert got == want, preset
    with pytest.raises(ValueError, match="per line"):
        native.simulate_summary(addr.astype(np.int64), wr, arrival, ks, dec, p, *plan.tables)


def test_replay_without_timeline_equals_replay_with_one():
    """The driver's summed path (no timeline) and its timeline path give the same statistics."""
    spec = load_memory("ddr4-3200aa", ranks=2)
    rng = np.random.default_rng(8)
    addr = (rng.integers(0, 1 << 22, 3000) * 64).astype(np.uint64)
    for write in (False, rng.random(3000) < 0.3):
        for drain in (True, False):
            a = driver.replay_lines(addr, spec, write, drain=drain)
            b = driver.replay_lines(addr, spec, write, drain=drain, timeline=True)
            assert a.timeline is None and b.timeline is not None
            assert a == dataclasses.replace(b, timeline=None)
