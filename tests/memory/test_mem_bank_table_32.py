"""The C engine's 32-bit bank table (engine_lanes.h, T32_*): the instantiations of 16 or more
banks keep their bank-group and bank ready clocks as int32 relative to a base that each
evaluation moves once the cycle is 2^29 past it, and take a run only where every latency of its
constraint table is below 2^28. Both guards against the numba engine, on runs that need them:
clocks past 2^31 (the rebase, with commands in flight as it happens and after a jump of more
than 2^30), and latencies above 2^28 (the run falls back to the 64-bit table); each with the
library this machine loads and with an AVX2-only build (the table's AVX2 paths, which CPUs
without AVX-512 run; the build test_portable_build_identical shares)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_mem_native_engine import _both, _native, _params

from nmp.memory import driver, engine, internal_view, load_memory, make_requests, native
from nmp.memory.lines import engine_inputs

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")

# one of each instantiation with a 32-bit table: DDR4 (16 banks), DDR5 (32), two ranks, HBM2;
# on AVX2 builds also those of one block of 8 lanes: the views of a design point's bank-group
# unit (one group of 4 banks) and bank unit (8 banks)
UNIT = {"channels": 1, "ranks": 1, "bankgroups": 1}
PRESETS = {
    "ddr4": ("ddr4-3200aa", {}, None),
    "ddr5": ("ddr5-4800an", {}, None),
    "ddr4-2r": ("ddr4-3200aa", {"ranks": 2}, None),
    "hbm2": ("hbm2-2000", {}, None),
    "bankgroup-unit": ("ddr4-3200aa", {**UNIT, "banks": 4}, "bankgroup"),
    "bank-unit": ("ddr4-3200aa", {**UNIT, "banks": 8}, "bank"),
}


def _spec(name):
    preset, org, view = PRESETS[name]
    spec = load_memory(preset)
    spec = spec.with_org(**org) if org else spec
    return internal_view(spec, view) if view else spec


# the builds: the one this machine loads, and one without AVX-512 (conftest.py: engine_build)
BUILDS = {"default": None, "avx2-paths": "-mno-avx512f"}


@pytest.fixture(params=list(BUILDS))
def build(request, engine_build):
    flags = BUILDS[request.param]
    if flags is None:
        yield
        return
    with engine_build(flags):
        yield


def _bursts(spec, starts, per_burst, seed, write_share=0.3):
    """per_burst requests at each start cycle (a few cycles apart), half of them to 16 hot
    lines (row hits and conflicts), the rest anywhere."""
    rng = np.random.default_rng(seed)
    n = per_burst * len(starts)
    hot = rng.integers(0, 16, n) * 8192
    cold = rng.integers(0, spec.capacity_bytes // 64, n) * 64
    addr = np.where(rng.random(n) < 0.5, hot, cold) % spec.capacity_bytes
    arrival = np.concatenate([s + np.cumsum(rng.integers(0, 3, per_burst)) for s in starts])
    arrival = np.maximum.accumulate(arrival.astype(np.int64))  # (bursts may overlap)
    return make_requests(addr, write=rng.random(n) < write_share, arrival=arrival)


@pytest.mark.parametrize("name", PRESETS)
def test_clocks_past_2_to_31_rebase_exactly(build, name):
    """Bursts across 2^29 (a rebase while the table holds clocks ahead of the cycle), at
    3 * 2^30 (past int32, after a jump of more than 2^30) and 2^29 later again: every output
    and the command log equal the numba engine's (without the rebase, the clocks wrap)."""
    spec = _spec(name)
    s29, s30 = 1 << 29, 1 << 30
    starts = [0, s29 - 40, 3 * s30, 3 * s30 + s29 - 40, 3 * s30 + s29 + 200]
    for reads_only in (False, True):
        reqs = _bursts(spec, starts, 300, seed=3, write_share=0.0 if reads_only else 0.3)
        out = _both(reqs, spec, {"refresh_on": 0}, log_rows=1600)
        assert out[0] == 0 and out[1] > 3 * s30 + s29, name


@pytest.mark.parametrize("name", ["ddr4", "bank-unit"])
def test_latencies_above_2_to_28_take_the_64_bit_table(build, name):
    """A constraint table whose latencies reach 2^28 and more (every latency times 2^26: the
    largest past 2^31) does not fit the 32-bit table: the run takes the 64-bit one, and equals
    the numba engine."""
    spec = _spec(name)
    reqs = _bursts(spec, [0], 40, seed=5)
    plan = driver._plan(spec)
    tab_i, nxt, lat, win = plan.tables
    big = np.where(lat > 0, lat << 26, lat)
    assert big.max() >= 1 << 31
    p = _params(spec, {"refresh_on": 0})
    logs = [np.full((400, 5), -1, np.int64) for _ in range(2)]
    numba_simulate: Any = engine.simulate  # (a numba dispatcher: mypy cannot count its arguments)
    a = numba_simulate(*engine_inputs(reqs, spec), p, tab_i, nxt, big, win, logs[0])
    b = native.simulate(
        reqs["addr"],
        reqs["write"],
        reqs["arrival"],
        plan.native_decode,
        p,
        tab_i,
        nxt,
        big,
        win,
        logs[1],
    )
    for k, (x, y) in enumerate(zip(a[:-1], b[:-1], strict=True)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"output {k}")
    np.testing.assert_array_equal(logs[0], logs[1], err_msg="command log")
    assert a[0] == 0 and a[2] > 1 << 31  # (its last cycle)
    # (the same requests on the preset's own table for contrast: cycles far below 2^28)
    assert _native(reqs, spec, p, np.zeros((0, 5), np.int64))[2] < 1 << 20
