"""Runs without writes (every design point's, most reference cases): the C engine runs them on
instantiations with the write path compiled out (engine.c's ``reads_only``). Each of those
instantiations against the numba engine, with arrival gaps (the write mode is entered whenever
the read buffer empties, and left when a read arrives), and the one condition besides the
write flags that the choice rests on."""

from __future__ import annotations

import numpy as np
import pytest
from test_mem_native_engine import _both, _native, _params

from nmp.memory import internal_view, load_memory, make_requests, native

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")


def _organizations():
    """One of each read-only instantiation: DDR4 and DDR5 (16 and 32 banks), two ranks, HBM2,
    and the NMP units' views (a bank group of 4 banks, one of 8)."""
    ddr4 = load_memory("ddr4-3200aa")
    view = internal_view(ddr4, "bankgroup").with_org(channels=1, ranks=1, bankgroups=1)
    return {
        "ddr4": ddr4,
        "ddr5": load_memory("ddr5-4800an"),
        "ddr4-2r": load_memory("ddr4-3200aa", ranks=2),
        "hbm2": load_memory("hbm2-2000"),
        "bankgroup-view": view,
        "one-group-of-8": ddr4.with_org(channels=1, ranks=1, bankgroups=1, banks=8),
    }


@pytest.mark.parametrize("queues", [{}, {"read_queue": 24}], ids=["32", "24"])
def test_read_only_runs_identical(queues):
    rng = np.random.default_rng(7)
    for name, spec in _organizations().items():
        n = 3000
        hot = rng.integers(0, 4096, n) * 64
        cold = rng.integers(0, spec.capacity_bytes // 64, n) * 64
        addr = np.where(rng.random(n) < 0.5, hot, cold) % spec.capacity_bytes
        reqs = make_requests(addr, arrival=np.cumsum(rng.integers(0, 3, n)))
        assert not reqs["write"].any()
        out = _both(reqs, spec, queues)
        assert out[0] == 0, name


def test_read_only_run_that_keeps_the_write_mode_is_not_shortened():
    """A low watermark of 0 never lets the write mode end (0 writes < 0 is false): the reads
    left when the buffer first empties then never issue, a deadlock without refresh. The
    read-only instantiations assume the mode ends as a read arrives (engine.c's reads_only
    checks it), so this run must not take them."""
    spec = load_memory("ddr4-3200aa")
    n = 2000
    reqs = make_requests(np.arange(n) * 64, arrival=np.repeat([0, 100_000], n // 2))
    log = np.zeros((0, 5), np.int64)
    held = _native(reqs, spec, _params(spec, {"wm_low": 0.0, "refresh_on": 0}), log)
    left = _native(reqs, spec, _params(spec, {"refresh_on": 0}), log)
    assert held[0] == 1  # (a deadlock)
    assert left[0] == 0 and (left[6] >= 0).all()
