"""Design points keep their freed arrays' pages (glibc): the next point's arrays of the same
size touch no new page."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from nmp.arch.heap import keep_freed_memory
    kept = keep_freed_memory() if sys.argv[1] == "keep" else False
    for _ in range(3):  # a point's arrays, allocated, written and freed
        arrays = [np.ones(1 << 17) for _ in range(8)]  # 1 MiB each
        del arrays
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        arrays = [np.ones(1 << 17) for _ in range(8)]
        del arrays
    print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def _faults(mode: str, env: dict | None = None) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_arrays_keep_their_pages():
    kept, faults = _faults("keep")
    if kept != "True":
        pytest.skip("not glibc")
    _, fresh = _faults("default")
    # 80 MiB written: 20,480 pages touched; kept, they are the first rounds' pages again
    assert faults < 500 < fresh


def test_a_threshold_the_user_set_is_left_alone():
    kept, _ = _faults("keep", {"MALLOC_TRIM_THRESHOLD_": str(1 << 20)})
    assert kept == "False"
