"""Sweep throughput: design points per second for the local process pool and a local Dask
cluster on the same 1000-point sweep (target: 1000 points in under 5 minutes on 2 cores).

    .venv/bin/python benchmarks/evaluate.py [--points 1000] [--jobs 2] [--fake]

With ``--fake`` the point function is a trivial deterministic stand-in, which measures the
machinery alone (planning, executor, results log, analysis, report); otherwise every point runs
the real models (nmp.arch / nmp.gpu).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nmp.evaluate.executor import DaskExecutor, LocalExecutor
from nmp.evaluate.runner import run_sweep
from nmp.evaluate.sweep import Point, parse_sweep
from nmp.evaluate.sweepcheck import keyed_points, validate_sweep
from nmp.report.files import write_report_files

# 5 designs x 5 vector lengths x 8 batch sizes x 5 lookup seeds = 1000 points, on recross-eval.
SWEEP = {
    "name": "bench-1000",
    "workloads": ["recross-eval"],
    "archs": ["host-cpu", "recnmp", "trim-g", "trim-b", "recross"],
    "baseline": "host-cpu",
    "axes": {
        "workload.dim": [4, 8, 16, 32, 64],
        "workload.batch": [1, 2, 4, 8, 16, 32, 64, 128],
        "workload.seed": [0, 1, 2, 3, 4],
    },
}


def fake_point(point: Point) -> dict[str, Any]:
    h = int(hashlib.sha256(repr(sorted(point.overrides.items())).encode()).hexdigest()[:8], 16)
    lps = 1e8 * (1 + h % 97)
    return {
        "arch": point.arch,
        "workload": point.workload,
        "memory": "",
        "latency_ns": 1e9 / lps,
        "lookups_per_s": lps,
        "energy_pj_per_lookup": 10.0 + h % 13,
        "area_mm2": 1.0 + h % 7,
        "breakdown": {"time_ns": {"a": 1.0, "b": 2.0}},
    }


def sweep_for(points: int) -> Any:
    data = dict(SWEEP)
    if points < 1000:
        data.update(sampling="random", samples=points, seed=0)
    return parse_sweep(data, file="bench-1000")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--fake", action="store_true", help="machinery only (no models)")
    args = ap.parse_args()
    spec = sweep_for(args.points)
    t0 = time.perf_counter()
    # Fake points need no presets; real ones are validated against them like `nmp evaluate`.
    keyed = keyed_points(spec) if args.fake else validate_sweep(spec, file="bench-1000")
    t_plan = time.perf_counter() - t0
    n = len({k for _, k in keyed})
    kind = "fake points (machinery only)" if args.fake else "real points"
    print(f"sweep: {n} {kind}, validated and keyed in {t_plan:.2f} s ({n / t_plan:,.0f} points/s)")
    fn = fake_point if args.fake else None
    rates = {}
    for name, executor in (
        ("local", LocalExecutor(args.jobs)),
        ("dask", DaskExecutor(workers=args.jobs)),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            summary = run_sweep(
                spec,
                keyed,
                Path(tmp) / "run",
                point_fn=fn,
                executor=executor,
                write_reports=write_report_files,
            )
            wall = time.perf_counter() - t0
        if summary["failed"]:
            print(f"{name}: {len(summary['failed'])} points failed: {summary['failed'][0]}")
            return 1
        rates[name] = n / wall
        print(
            f"{name:>5} executor, {args.jobs} workers: {n} points in {wall:.1f} s "
            f"= {rates[name]:.1f} points/s (incl. start-up, results log, analysis, report)"
        )
    print(f"dask / local: {rates['dask'] / rates['local']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
