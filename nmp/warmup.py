"""``python -m nmp.warmup``: compile ahead what a first run would compile, so that the first
``nmp replay`` / ``nmp run`` / ``nmp evaluate`` on a machine does not wait for it. ``make``'s
install step runs it once after ``pip install``.

It builds the C DRAM engine where ``pip install`` did not (:mod:`nmp.memory.native_build`),
then runs one tiny replay and one small design point of every architecture and GPU preset:
numba compiles each kernel for the types it is called with (not the sizes), and keeps it in
its cache (``$NUMBA_CACHE_DIR``, else the package's ``__pycache__``), where later runs load it.
Results are discarded. A step that fails is reported and skipped: warming up is only an
optimization (that step compiles at first use instead), so it never fails an install.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable

from nmp.report.progress import mark_warm

PRESETS = ("ddr4-3200aa", "ddr5-4800-40")  # the README's replay and the default sweep's memory


def warm(verbose: bool = True) -> float:
    """Compile everything; returns the seconds it took."""
    # numpy: loaded on use (start-up time)
    import numpy as np

    # numpy, numba: loaded on use (start-up time)
    from nmp.design import FAMILIES, family_presets
    from nmp.evaluate.point import run_point
    from nmp.memory import load_memory, native, replay
    from nmp.memory.trace import make_requests

    t0 = time.perf_counter()

    def say(text: str) -> None:
        if verbose:
            print(f"nmp warmup: {text} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)

    say("C DRAM engine " + ("ready" if native.available() else str(native.unavailable_reason())))
    requests = make_requests(np.arange(256, dtype=np.uint64) * 64)
    failed = 0
    small = {"workload.batch": 2}
    steps: list[tuple[str, Callable[[], object]]] = [
        ("replay", functools.partial(_replay_on, replay, load_memory, requests, p)) for p in PRESETS
    ]
    steps += [
        (arch, functools.partial(run_point, arch, "recross-eval", None, small))
        for _, family in FAMILIES.items()
        for arch in family_presets(family)
    ]
    steps.append(("trainer kernels", _trainer_kernels))
    for name, step in steps:
        try:
            step()
            say(f"{name} compiled")
        except Exception as exc:  # noqa: BLE001 (an optimization: report and go on)
            failed += 1
            say(f"{name} skipped ({type(exc).__name__}: {exc}); it compiles at first use")
    if not failed:
        mark_warm()
    return time.perf_counter() - t0


def _replay_on(replay, load_memory, requests, preset: str) -> object:
    """A replay of ``requests`` on the memory ``preset`` (loaded inside the step, so a preset
    that fails to load is reported and skipped like any other step)."""
    return replay(requests, load_memory(preset))


def _trainer_kernels() -> None:
    """The kernels ``nmp train`` calls that no design point does: the per-row gradient sums
    and a small profile's dense count map (its servers' float64 look-up)."""
    import numpy as np

    from nmp.arch.profile import AccessProfile
    from nmp.train.shard import micro_row_grads

    micro_row_grads(np.zeros((1, 1, 1), dtype=np.int64), np.zeros((1, 1, 4), dtype=np.float32))
    one = (np.zeros(1, dtype=np.int64),)
    AccessProfile(one, (np.ones(1),), (2,), 1).counts_of(np.zeros(1), np.zeros(1))


if __name__ == "__main__":
    warm()
