"""benchmarks/_host.py's split of a timed process's wall time (issue 43): the wait for a CPU
that other processes held (Linux's run_delay), read from a child before it is reaped, so
that benchmarks/peers.py and arch.py can give the wall time a free core gives."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _host import queue_wait_s, wait_and_reap  # type: ignore[import-not-found]  # noqa: E402

pytestmark = pytest.mark.skipif(
    not Path("/proc/thread-self/schedstat").exists(), reason="no scheduler statistics here"
)


def test_a_reaped_childs_wait_is_within_its_wall_time() -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-S", "-c", "sum(range(200000))"])
    status, cpu_s, wait_s = wait_and_reap(proc.pid)
    wall_s = time.perf_counter() - t0
    assert status == 0 and cpu_s > 0
    assert wait_s is not None and 0 <= wait_s <= wall_s
    # reaped: nothing left to read
    assert queue_wait_s(proc.pid) is None


def test_the_calling_threads_wait_only_grows() -> None:
    before = queue_wait_s()
    sum(range(100000))
    after = queue_wait_s()
    assert before is not None and after is not None and after >= before >= 0
