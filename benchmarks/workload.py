"""Lookup-batch generation speed: ms per batch and lookups per second for every workload preset
(and each reuse level of gpu-micro24), beside numpy's own uniform integer draw of the same
number of indices as the peer (the floor any generator pays for its random numbers). Then the
Zipf sampler's first rejection-inversion round on 1 M uniforms, its fast path (x without libm,
libm near a boundary: ``nmp.workload._kernels``) beside libm alone, the same draws (checked).

    .venv/bin/python benchmarks/workload.py [--repeat 20] [--zipf-only]

Target: dlrm-benchmark (8 x 2048 x 100 lookups) well under 0.1 s per batch.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nmp.config import preset_names
from nmp.workload import _kernels, generate_batch, load_workload, sampling


def _time(fn, repeat: int) -> float:
    fn(0)  # compile kernels, fill caches
    best = float("inf")
    for i in range(repeat):
        t0 = time.perf_counter()
        fn(i + 1)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--zipf-only", action="store_true", help="only the Zipf sampler's part")
    args = parser.parse_args()
    if not args.zipf_only:
        _batches(args.repeat)
    _zipf(args.repeat)


def _zipf(repeat: int) -> None:
    print(
        f"\n{'zipf round, 1 M draws':26s} {'fast ms':>8s} {'libm ms':>8s} {'ratio':>6s} "
        f"{'decided fast':>12s}"
    )
    u01 = np.random.default_rng(0).random(1_000_000)
    for alpha in (0.6, 1.05, 2.0):
        for rows in (1_000_000, 10_000_000):
            _zipf_case(u01, rows, alpha, repeat)


def _zipf_case(u01: np.ndarray, rows: int, alpha: float, repeat: int) -> None:
    n = u01.shape[0]
    c = sampling._zipf_constants(rows, alpha)
    fast = (np.empty(n, np.int64), np.empty(n, np.bool_))
    libm = (np.empty(n, np.int64), np.empty(n, np.bool_))
    out = np.empty(n, np.int64)
    decided = _kernels.zipf_decided_kernel(u01, rows, alpha, *c, *fast)
    _kernels.zipf_exact_kernel(u01, rows, alpha, *c, *libm)
    if not (np.array_equal(fast[0], libm[0]) and np.array_equal(fast[1], libm[1])):
        raise SystemExit(f"workload.py: the fast path differs at alpha {alpha}, {rows} rows")
    t_fast = _time(lambda s: _kernels.zipf_first_kernel(u01, rows, alpha, *c, out), repeat)
    t_libm = _time(lambda s: _kernels.zipf_exact_kernel(u01, rows, alpha, *c, *libm), repeat)
    label = f"alpha {alpha:g}, {rows:,} rows"
    print(
        f"{label:26s} {t_fast * 1e3:8.2f} {t_libm * 1e3:8.2f} {t_libm / t_fast:5.2f}x "
        f"{decided / n:12.2%}"
    )


def _batches(repeat: int) -> None:
    cases = [(name, {}) for name in preset_names("workload")]
    cases += [("gpu-micro24", {"reuse": lvl}) for lvl in ("high", "medium", "low", "random")]
    print(
        f"{'workload':34s} {'lookups':>9s} {'ms/batch':>9s} {'M lookups/s':>12s} "
        f"{'numpy ms':>9s} {'ratio':>6s}"
    )
    for name, ov in cases:
        spec = load_workload(name, ov)
        n = generate_batch(spec).num_lookups
        t = _time(lambda s, spec=spec: generate_batch(spec, seed=s), repeat)
        rng = np.random.default_rng(0)
        rows = max(t.rows for t in spec.tables)
        t_np = _time(lambda s, n=n, rows=rows, rng=rng: rng.integers(0, rows, n), repeat)
        label = name + (f" reuse={ov['reuse']}" if ov else "")
        print(
            f"{label:34s} {n:9d} {t * 1e3:9.2f} {n / t / 1e6:12.1f} {t_np * 1e3:9.2f} "
            f"{t / t_np:6.2f}"
        )


if __name__ == "__main__":
    main()
