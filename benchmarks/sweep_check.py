"""``nmp evaluate --check`` of a large sweep: points checked per second (issue 30: a sweep of
262,144 points was silent for minutes; target: seconds).

    .venv/bin/python benchmarks/sweep_check.py [--values 8]

The sweep crosses two designs with five workload axes of ``--values`` values and one memory axis
of 4 (8 values: 2 x 8^5 x 4 = 262,144 points): 8^5 distinct workloads, each resolved once, and
every point keyed. The peer is the same check resolving every point from its presets
(``point_key(resolve_point(...))``, what ``--check`` did before), timed on a sample of points
and scaled to the sweep.
"""

from __future__ import annotations

import argparse
import time

from nmp.evaluate.sweep import parse_sweep
from nmp.evaluate.sweepcheck import PresetProvider, point_key, resolve_point, validate_sweep


def sweep(values: int) -> dict:
    return {
        "name": "check-bench",
        "workloads": ["recross-eval"],
        "archs": ["host-cpu", "recross"],
        "baseline": "host-cpu",
        "axes": {
            "workload.batch": [2**i for i in range(values)],
            "workload.pooling": [i + 1 for i in range(values)],
            "workload.dim": [8 * (i + 1) for i in range(values)],
            "workload.alpha": [0.5 + 0.1 * i for i in range(values)],
            "workload.seed": list(range(values)),
            "arch.memory.ranks": [1, 2, 4, 8],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=8, help="values per workload axis")
    parser.add_argument("--sample", type=int, default=200, help="points the peer resolves")
    args = parser.parse_args()
    spec = parse_sweep(sweep(args.values), file="bench")
    t0, c0 = time.perf_counter(), time.process_time()
    keyed = validate_sweep(spec, file="bench")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(keyed)
    print(f"--check of {n:,} points: {wall:.1f} s wall, {cpu:.1f} s CPU ({n / cpu:,.0f} points/s)")
    provider = PresetProvider()
    step = max(1, n // args.sample)
    sample = [p for p, _ in keyed[::step]]
    c0 = time.process_time()
    for point in sample:
        point_key(resolve_point(point, provider))
    per_point = (time.process_time() - c0) / len(sample)
    print(
        f"peer (every point from its presets): {per_point * 1e3:.2f} ms CPU a point, "
        f"{per_point * n:,.0f} s for the sweep; ratio {per_point * n / cpu:.0f}x"
    )


if __name__ == "__main__":
    main()
