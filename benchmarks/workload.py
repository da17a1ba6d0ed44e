"""Lookup-batch generation speed: ms per batch and lookups per second for every workload preset
(and each reuse level of gpu-micro24), beside numpy's own uniform integer draw of the same
number of indices as the peer (the floor any generator pays for its random numbers).

    .venv/bin/python benchmarks/workload.py [--repeat 20]

Target: dlrm-benchmark (8 x 2048 x 100 lookups) well under 0.1 s per batch.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nmp.config import preset_names
from nmp.workload import generate_batch, load_workload


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
    args = parser.parse_args()
    cases = [(name, {}) for name in preset_names("workload")]
    cases += [("gpu-micro24", {"reuse": lvl}) for lvl in ("high", "medium", "low", "random")]
    print(
        f"{'workload':34s} {'lookups':>9s} {'ms/batch':>9s} {'M lookups/s':>12s} "
        f"{'numpy ms':>9s} {'ratio':>6s}"
    )
    for name, ov in cases:
        spec = load_workload(name, ov)
        n = generate_batch(spec).num_lookups
        t = _time(lambda s, spec=spec: generate_batch(spec, seed=s), args.repeat)
        rng = np.random.default_rng(0)
        rows = max(t.rows for t in spec.tables)
        t_np = _time(lambda s, n=n, rows=rows, rng=rng: rng.integers(0, rows, n), args.repeat)
        label = name + (f" reuse={ov['reuse']}" if ov else "")
        print(
            f"{label:34s} {n:9d} {t * 1e3:9.2f} {n / t / 1e6:12.1f} {t_np * 1e3:9.2f} "
            f"{t / t_np:6.2f}"
        )


if __name__ == "__main__":
    main()
