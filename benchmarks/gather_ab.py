"""The gather-reduce's vector kernel of another checkout beside this one's, in one process.

Loads ``OTHER/nmp/arch/functional.py`` as a module of its own (its imports resolve to this
checkout's ``nmp``: a kernel that needs names this tree lacks will not load) and runs both
kernels on ``benchmarks/arch.py --gather-only``'s batch (``arch.GATHER``: 8 tables of
200,000 rows, dim 64, batch 2048, pooling 100, ``recross``), one thread, alternating in every
round so that a busy spell of a shared machine slows both. Every output must be equal bit for
bit, or the script stops. Prints each side's best thread CPU time and the ratio (other / this;
> 1: this checkout is faster), of the best times and the median of the paired rounds.

    python benchmarks/gather_ab.py --other DIR [--rounds 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from pathlib import Path

from _host import load, machine  # benchmarks/ is on sys.path when a script runs
from arch import GATHER

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", required=True, help="another checkout (its nmp/arch/functional.py)")
    ap.add_argument("--rounds", type=int, default=16)
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {a.rounds}")
    source = Path(a.other) / "nmp" / "arch" / "functional.py"
    if not source.is_file():
        raise SystemExit(f"gather_ab.py: no {source}")
    import numpy as np

    import nmp.arch.functional as this
    from nmp.arch import load_arch
    from nmp.workload import generate_batch, load_workload

    spec = importlib.util.spec_from_file_location("nmp_other_functional", source)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)

    g = GATHER
    sizes = {"rows": [g["rows"]] * g["tables"], "dim": g["dim"], "batch": g["batch"]}
    wl = load_workload("recross-eval", {**sizes, "pooling": g["pooling"]})
    arch = load_arch("recross")
    arch.bind(wl)
    flat, plc, _ = arch.prepare(generate_batch(wl, seed=1))
    # each side's kernel for the design's tree, as gather_tree_basis would key it
    parent = arch.policy.reduce_nodes(arch, plc)[1]
    key = (g["dim"], False, this._fused_tree(parent))
    sides = {
        "other": other._make_gather_tree_rows(g["dim"]),
        "this": this._make_gather_tree_rows(g["dim"], key[2]),
    }

    def run(side: str) -> tuple[list, float]:
        this._BASIS_KERNELS[key] = sides[side]
        t0 = time.thread_time()
        out = arch.policy.execute(arch, flat, plc)
        return out, time.thread_time() - t0

    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    ref = run("other")[0]
    if not all(np.array_equal(x, y) for x, y in zip(ref, run("this")[0], strict=True)):
        raise SystemExit("gather_ab.py: the two kernels' outputs differ")
    best = {"other": float("inf"), "this": float("inf")}
    paired = []
    for r in range(a.rounds):
        t = {}
        for side in ("other", "this") if r % 2 == 0 else ("this", "other"):
            t[side] = run(side)[1]
            best[side] = min(best[side], t[side])
        paired.append(t["other"] / t["this"])
    print(f"gather-reduce of {flat.n} lookups, best of {a.rounds} alternating rounds, thread CPU:")
    print(f"  {a.other}: {best['other'] * 1e3:.2f} ms; this checkout: {best['this'] * 1e3:.2f} ms")
    print(
        f"  other / this: {best['other'] / best['this']:.3f}x of the best times, "
        f"{statistics.median(paired):.3f}x the median of the paired rounds (outputs equal)"
    )


if __name__ == "__main__":
    main()
