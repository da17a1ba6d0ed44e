"""The C DRAM engine's libraries side by side on design points' runs (engine_ab.py's A/B).

Captures the ``simulate_c`` calls of ``run_design_point("recross", "recross-eval", seed=s)``
for the given seeds (the NMP units' narrowed views: rank units of 4 x 4 banks, bank-group units
of 1 x 4 with buffers of 24, bank units of 1 x 8), then runs each library on exactly those
arguments, alternating the libraries' order from round to round, best of ``--rounds`` per run
by CPU time of this process. Every output but the count of evaluations must equal the first
library's, or the script stops. Prints per organization (ranks, bank groups, banks, read
buffer) the runs' summed best times per library.

    python benchmarks/engine_ab_points.py A.so B.so A_again.so [--rounds 7] [--seeds 11-16]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import time

import numpy as np
from engine_ab import (
    _entry,
    _evaluations_per_command,
    _outputs,
    simulate_c_calls,
)  # benchmarks/ is on sys.path when a script runs

from nmp.arch.point import run_design_point
from nmp.memory.engine_fields import EngineArgs


def _capture(seeds: range) -> list[tuple[object, EngineArgs]]:
    """The simulate_c calls of the design points, each with fresh outputs (kept alive)."""
    with simulate_c_calls() as seen:
        for s in seeds:
            run_design_point("recross", "recross-eval", seed=s)
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libs", nargs="+", help="engine libraries (.so) to compare")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seeds", default="11-16", help="design points' seeds, first-last")
    a = ap.parse_args()
    first, last = (int(x) for x in a.seeds.split("-"))
    seen = _capture(range(first, last + 1))
    orgs = []
    for _, args in seen:
        p = ctypes.cast(args.params, ctypes.POINTER(ctypes.c_int64))
        orgs.append((p[1], p[2], p[3], p[4]))  # ranks, bank groups, banks, read buffer
    print(f"{len(seen)} runs, {sum(args.n for _, args in seen)} transactions")
    fns = [_entry(path) for path in a.libs]
    ref: list = [None] * len(seen)
    best = [[float("inf")] * len(seen) for _ in fns]
    for r in range(a.rounds):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            for k, (keep, args) in enumerate(seen):
                t0 = time.process_time()
                rc = fns[i](ctypes.byref(args))
                dt = time.process_time() - t0
                if rc != 0:
                    raise SystemExit(f"{a.libs[i]}: run {k} returned {rc}")
                outs = _outputs(keep)
                if ref[k] is None:
                    ref[k] = outs
                elif not all(np.array_equal(x, y) for x, y in zip(ref[k], outs, strict=True)):
                    raise SystemExit(f"{a.libs[i]}: run {k}'s outputs differ from {a.libs[0]}'s")
                best[i][k] = min(best[i][k], dt)
    for i, path in enumerate(a.libs):
        print(f"  lib{i}: {path}")
    # (the counts of the library that ran last: each run leaves them in the captured outputs;
    # every library's equal unless one evaluates differently)
    per_cmd = [_evaluations_per_command(keep) for keep, _ in seen]
    print(
        "organization (R, G, B, read buffer)  runs  best CPU ms per library   lib0 / libi"
        "   evaluations per command (median, max)"
    )
    by = collections.defaultdict(list)
    for k, org in enumerate(orgs):
        by[org].append(k)
    for org, ks in sorted(by.items()):
        tot = [sum(b[k] for k in ks) for b in best]
        ms = " ".join(f"{t * 1e3:8.2f}" for t in tot)
        ratios = " ".join(f"x{tot[0] / t:.3f}" for t in tot[1:])
        pc = sorted(per_cmd[k] for k in ks)
        evals = f"{pc[len(pc) // 2]:.3f} {pc[-1]:.3f}"
        print(f"{org!s:36s} {len(ks):5d}  {ms}   {ratios}   {evals}")
    tot = [sum(b) for b in best]
    print(f"{'all':36s} {len(seen):5d}  " + " ".join(f"{t * 1e3:8.2f}" for t in tot))


if __name__ == "__main__":
    main()
