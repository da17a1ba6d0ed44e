"""``python -m nmp.warmup``: compile ahead what a first run would compile, so that the first
``nmp replay`` / ``nmp run`` / ``nmp evaluate`` on a machine does not wait for it. ``make``'s
install step runs it once after ``pip install``.

It builds the C DRAM engine where ``pip install`` did not (:mod:`nmp.memory.native_build`),
then runs one tiny replay and one small design point of every architecture and GPU preset:
numba compiles each kernel for the types it is called with (not the sizes), and keeps it in
its cache (``$NUMBA_CACHE_DIR``, else the package's ``__pycache__``), where later runs load it.
Results are discarded.
"""

from __future__ import annotations

import sys
import time


def warm(verbose: bool = True) -> float:
    """Compile everything; returns the seconds it took."""
    import numpy as np

    from nmp.config import preset_names
    from nmp.evaluate.point import run_point
    from nmp.memory import load_memory, native, replay
    from nmp.memory.trace import make_requests
    from nmp.report.progress import mark_warm

    t0 = time.perf_counter()

    def say(text: str) -> None:
        if verbose:
            print(f"nmp warmup: {text} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)

    say("C DRAM engine " + ("ready" if native.available() else native.unavailable_reason()))
    requests = make_requests(np.arange(256, dtype=np.uint64) * 64)
    for preset in ("ddr4-3200aa", "ddr5-4800-40"):
        replay(requests, load_memory(preset))
    say("replay compiled")
    small = {"workload.batch": 2}
    for arch in preset_names("arch") + preset_names("gpu"):
        run_point(arch, "recross-eval", None, small)
        say(f"{arch} compiled")
    mark_warm()
    return time.perf_counter() - t0


if __name__ == "__main__":
    warm()
