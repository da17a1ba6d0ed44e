"""The C DRAM engine's libraries side by side: an A/B of two builds on the reference cases.

Each reference case is replayed once through ``replay(requests, spec, drain=False)`` to capture
the arguments it passes to ``simulate_c`` (the lines, the decoding, the configuration, the
constraint table); then each library's ``simulate_c`` runs on exactly those arguments,
alternating the libraries' order from round to round, timed by CPU time of this process
(``time.process_time``: the figure a loaded machine changes least), best of ``--rounds``.
Every output but the count of evaluations (status, cycles, counters, per-transaction cycles,
forwarded flags, active cycles) must be equal between the libraries, or the case is reported
as a mismatch and the script exits non-zero. Engine alone: no Python around it, no page
faults of fresh output arrays.

The library a checkout loads is not always the one in its package folder: ``nmp`` loads the
build whose key (sources, compiler, CPU) matches, from the user cache where the package
folder's is stale; the script prints it (``--self`` adds it to the libraries compared).

    python benchmarks/engine_ab.py OLD.so NEW.so [--self] [--rounds 3] [--filter ddr4]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator

import numpy as np
from _host import load, machine  # benchmarks/ is on sys.path when a script runs

import nmp.memory.native as native
from nmp.memory import read_trace, replay
from nmp.memory.counters import N_COUNTERS
from nmp.memory.engine_fields import EngineArgs
from nmp.memory.native_build import build
from nmp.memory.standards import NCMD
from nmp.reference import case_memory_spec, dram_reference_dir


def _entry(path: str):
    fn = ctypes.CDLL(os.path.abspath(path)).simulate_c
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(EngineArgs)]
    return fn


@contextlib.contextmanager
def simulate_c_calls() -> Iterator[list]:
    """Within it, every call to ``simulate_c`` is recorded as (the arrays it keeps alive, its
    arguments), each run with fresh output arrays: a scratch replay's outputs are this thread's
    buffers, shared by the runs and reallocated when a larger one comes."""
    seen: list = []
    original = native._interruptible

    def spy(n, keep, fn, args):
        seen.append((keep, args._obj))
        return original(n, keep, fn, args)

    native._interruptible = spy
    scratch_max = native._OUT_SCRATCH_MAX
    native._OUT_SCRATCH_MAX = -1
    try:
        yield seen
    finally:
        native._interruptible = original
        native._OUT_SCRATCH_MAX = scratch_max


def _capture(cases: list[dict], ref) -> list[tuple[str, int, object, EngineArgs]]:
    """Per case: its id, its requests, and simulate_c's arguments with the arrays they point
    to (kept alive here)."""
    runs = []
    with simulate_c_calls() as seen:
        for case in cases:
            spec = case_memory_spec(case["memory_args"])
            requests = read_trace(ref / case["trace"])
            seen.clear()
            stats = replay(requests, spec, drain=False)
            assert stats.cycles == case["ramulator2"]["cycles"], case["id"]
            keep, args = seen[-1]
            runs.append((case["id"], stats.requests, keep, args))
    return runs


def _outputs(keep) -> list[np.ndarray]:
    # keep[-1]: native._outputs' arrays (the small outputs in one: out_scalars, cnt_snap, cnt,
    # active_cycles; then arrive, depart, done, forwarded); out_scalars[3] counts evaluations,
    # the one output allowed to differ
    small, *per_tx = keep[-1]
    return [small[:3].copy(), small[4:].copy()] + [np.array(v, copy=True) for v in per_tx]


def _evaluations_per_command(keep) -> float:
    """A run's channel evaluations per command it issued (1.0: every evaluation issues; what an
    evaluation scheme with exact wake-up times reaches on a single-issue channel)."""
    small = keep[-1][0]
    cnt = small[4 + N_COUNTERS :]
    return int(small[3]) / max(1, int(cnt[:NCMD].sum()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libs", nargs="*", help="engine libraries (.so) to compare")
    ap.add_argument("--self", action="store_true", help="add the library this checkout loads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--filter", default="", help="only cases whose id contains this")
    a = ap.parse_args()
    mine = str(build())
    paths = a.libs + ([mine] if a.self else [])
    if not paths:
        ap.error("name at least one library, or --self")
    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    print(f"this checkout loads {mine}")
    for i, p in enumerate(paths):
        print(f"  lib{i}: {p}")
    libs = [_entry(p) for p in paths]
    ref = dram_reference_dir()
    cases = [
        c for c in json.loads((ref / "cases.json").read_text())["cases"] if a.filter in c["id"]
    ]
    runs = _capture(cases, ref)
    best = {(i, r[0]): float("inf") for i in range(len(libs)) for r in runs}
    per_cmd: dict[tuple[int, str], float] = {}  # evaluations per command issued
    mismatches = set()
    for rnd in range(a.rounds):
        order = range(len(libs)) if rnd % 2 == 0 else reversed(range(len(libs)))
        for case_id, _, keep, args in runs:
            outs = {}
            for i in order:
                t0 = time.process_time()
                rc = libs[i](ctypes.byref(args))
                best[i, case_id] = min(best[i, case_id], time.process_time() - t0)
                if rc != 0:
                    sys.exit(f"{paths[i]}: simulate_c returned {rc} on {case_id}")
                outs[i] = _outputs(keep)
                per_cmd[i, case_id] = _evaluations_per_command(keep)
            for i in outs:
                if any(not np.array_equal(x, y) for x, y in zip(outs[0], outs[i], strict=True)):
                    mismatches.add((case_id, i))
    head = "".join(f" {'lib' + str(i) + ' M/s':>10s}" for i in range(len(libs)))
    print(f"{'case':46s}{head}  last/first  evaluations per command (first, last)")
    per_std: dict[str, list[list[float]]] = {}
    for case_id, n, _, _ in runs:
        rates = [n / best[i, case_id] for i in range(len(libs))]
        cells = "".join(f" {r / 1e6:10.3f}" for r in rates)
        evals = f"{per_cmd[0, case_id]:.3f} {per_cmd[len(libs) - 1, case_id]:.3f}"
        print(f"{case_id:46s}{cells}  {rates[-1] / rates[0]:.3f}       {evals}")
        per_std.setdefault(case_id.split("@")[1].split("_")[0], []).append(rates)
    print("median requests/s per configuration's standard (M/s, engine alone, CPU time):")
    for std, rows in [*per_std.items(), ("all", [r for v in per_std.values() for r in v])]:
        med = [statistics.median(r[i] for r in rows) for i in range(len(libs))]
        cells = "".join(f" {m / 1e6:8.3f}" for m in med)
        print(f"  {std:5s} {len(rows):3d} cases{cells}  x{med[-1] / med[0]:.3f}")
    for case_id, i in sorted(mismatches):
        print(f"MISMATCH: lib{i} differs from lib0 on {case_id}")
    if mismatches:
        sys.exit(1)


if __name__ == "__main__":
    main()
