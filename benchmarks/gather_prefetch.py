"""The gather-reduce's prefetch distance swept (``nmp.arch.functional.PREFETCH_AHEAD``):
``benchmarks/arch.py``'s gather-reduce beside ``torch.nn.EmbeddingBag``, once per distance and
round, the distances' order reversed every other round (a spell of a shared machine then
slows all alike), printed as the ratio torch / nmp by thread CPU time: each round's best of
``--repeat``, and the median of its back-to-back pairs; then each distance's median over the
rounds. The prefetch changes no result, only when the basis rows arrive.

Usage: ``python benchmarks/gather_prefetch.py [--ahead 0,4,8,16,24,32] [--rounds 6]
[--repeat 7]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from _host import load, machine  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from arch import GATHER, functional  # noqa: E402

import nmp.arch.functional as gather  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ahead", default="0,4,8,16,24,32", help="distances, comma-separated")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per side and round")
    a = ap.parse_args()
    try:
        aheads = [int(x) for x in a.ahead.split(",")]
    except ValueError:
        ap.error(f"--ahead {a.ahead!r}: distances are whole numbers, comma-separated")
    if a.rounds < 1 or a.repeat < 1 or min(aheads) < 0:
        ap.error("--rounds and --repeat must be at least 1, the distances at least 0")
    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    print(f"default PREFETCH_AHEAD = {gather.PREFETCH_AHEAD}; torch / nmp by thread CPU time")
    best: dict[int, list[float]] = {d: [] for d in aheads}
    paired: dict[int, list[float]] = {d: [] for d in aheads}
    default = gather.PREFETCH_AHEAD
    try:
        for r in range(a.rounds):
            for d in aheads if r % 2 == 0 else aheads[::-1]:
                gather.PREFETCH_AHEAD = d
                gather._BASIS_KERNELS.clear()  # (the kernels read it when they are made)
                with contextlib.redirect_stdout(io.StringIO()):
                    _, cpu, med = functional(**GATHER, repeat=a.repeat)
                best[d].append(cpu)
                paired[d].append(med)
                print(f"  round {r + 1}, ahead {d:3d}: best {cpu:.3f}x, paired median {med:.3f}x")
    finally:
        gather.PREFETCH_AHEAD = default
        gather._BASIS_KERNELS.clear()
    print("ahead  best, median over rounds (range)   paired, median over rounds (range)")
    for d in aheads:
        b, p = best[d], paired[d]
        print(
            f"{d:5d}  {statistics.median(b):.3f}x ({min(b):.3f}-{max(b):.3f})"
            f"            {statistics.median(p):.3f}x ({min(p):.3f}-{max(p):.3f})"
        )


if __name__ == "__main__":
    main()
