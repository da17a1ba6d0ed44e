"""The C engine's channel threads on a machine whose cores other processes hold
(engine_threads.h: waiting threads park; a frontend that mostly waits takes the channels back).

Before, the waiting threads spun and yielded: with two busy processes beside it on a 2-core
machine, a reference HBM2 case on 8 threads took 20-64 s against 0.15-0.4 s on one."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from memref import dram_ref_dir, load_cases

from nmp.memory import driver, native
from nmp.memory.trace import read_trace
from nmp.reference import case_memory_spec

CASE_ID = "emb_uniform_r4m_rb256_p20@hbm2_8ch"


pytestmark = pytest.mark.usefixtures("native_engine")


@pytest.fixture
def busy_cores():
    """One busy process per core (at least two), for the test's duration; each ends itself
    after a minute should this process die first (a timeout's kill skips the finally)."""
    spin = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"
    hogs = [
        subprocess.Popen([sys.executable, "-c", spin]) for _ in range(max(2, os.cpu_count() or 1))
    ]
    time.sleep(0.3)  # (started and spinning)
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()


def _run(case, threads):
    """native.simulate of the case on `threads` threads: (wall seconds, every output)."""
    spec = case_memory_spec(case["memory_args"])
    reqs = read_trace(dram_ref_dir() / case["trace"])
    plan = driver._plan(spec)
    params = plan.engine_params(True, True).copy()
    addr, write = reqs["addr"], reqs["write"]
    arrival = reqs["arrival"] if "arrival" in reqs.dtype.names else np.zeros(len(addr), np.int64)
    log = np.full((2000, 5), -1, np.int64)
    t0 = time.perf_counter()
    out = native.simulate(
        addr, write, arrival, plan.native_decode, params, *plan.tables, log, threads=threads
    )
    return time.perf_counter() - t0, [np.asarray(x).copy() for x in (*out, log)]


def test_threads_on_busy_cores_stay_near_one_thread(dram_ref, busy_cores):
    """On cores that other processes hold, 8 threads give the one-thread results, in a time
    near one thread's (the old spinning took 100-200x)."""
    (case,) = [c for c in load_cases() if c["id"] == CASE_ID]
    one_s, want = _run(case, 1)
    many_s, got = _run(case, 8)
    for k, (x, y) in enumerate(zip(want, got, strict=True)):
        np.testing.assert_array_equal(x, y, err_msg=f"output {k}")
    assert many_s < 10 * one_s + 1.0, (many_s, one_s)
