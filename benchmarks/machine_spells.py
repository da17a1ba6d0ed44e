"""Is this machine steady enough to time on? Four fixed probes, timed round after round.

A shared VM's core can slow for seconds at a time while a neighbour uses the physical core's
caches or the socket's memory: a benchmark's figure then depends on when it ran. Each round
times four fixed pieces of work by this thread's CPU time, each compiled by numba:

- ``alu``: a chain of dependent 64-bit shift-xor-multiplies (registers only: the core's
  clock; a plain multiply-add chain the compiler folds several steps at a time);
- ``l2``: a random cyclic pointer chase over 256 KiB (within a Zen 3 or recent Xeon core's L2);
- ``l3``: the same over 8 MiB (within the socket's L3);
- ``dram``: the same over 256 MiB (memory).

Printed: each probe's least, median and largest time over the rounds, and the largest over the
least. On a quiet machine every probe stays within a few per cent; a probe that swings while
``alu`` holds shows that the spells come from the caches or memory a neighbour shares, not
from the clock. (On the 2-core AMD EPYC VM of issue 43, 40 rounds: ``alu`` x1.03, ``l2``
x1.52, ``l3`` x1.97, ``dram`` x1.11; docs/performance.md, "nineteenth look".)

    python benchmarks/machine_spells.py [--rounds 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _host import load, machine  # benchmarks/ is on sys.path when a script runs
from numba import njit

SIZES = {"l2": 256 * 1024, "l3": 8 * 1024**2, "dram": 256 * 1024**2}
STEPS = {"l2": 1_000_000, "l3": 300_000, "dram": 50_000}
ALU_STEPS = 5_000_000


@njit(cache=False)
def _alu(steps):  # pragma: no cover - compiled
    x = np.uint64(1)
    a, sh = np.uint64(6364136223846793005), np.uint64(29)
    for _ in range(steps):
        x = (x ^ (x >> sh)) * a
    return x


@njit(cache=False)
def _chase(nxt, steps):  # pragma: no cover - compiled
    j = np.uint32(0)
    for _ in range(steps):
        j = nxt[j]
    return j


def _cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random single cycle through all n slots (the chase visits every one in turn)."""
    order = rng.permutation(n).astype(np.uint32)
    nxt = np.empty(n, dtype=np.uint32)
    nxt[order] = np.roll(order, -1)
    return nxt


def _timed(fn, *args) -> float:
    t0 = time.thread_time()
    fn(*args)
    return (time.thread_time() - t0) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.rounds < 2:
        ap.error(f"--rounds must be at least 2, got {a.rounds}")
    rng = np.random.default_rng(a.seed)
    chains = {k: _cycle(size // 4, rng) for k, size in SIZES.items()}
    _alu(10)  # (compiled before the first round)
    for nxt in chains.values():
        _chase(nxt, 10)
    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    times: dict[str, list[float]] = {"alu": [], **{k: [] for k in chains}}
    for _ in range(a.rounds):
        times["alu"].append(_timed(_alu, ALU_STEPS))
        for k, nxt in chains.items():
            times[k].append(_timed(_chase, nxt, STEPS[k]))
    print(f"{a.rounds} rounds, each probe's thread CPU ms: least, median, largest, largest/least")
    for k, ms in times.items():
        v = np.array(ms)
        print(
            f"  {k:5s} {v.min():8.2f} {np.median(v):8.2f} {v.max():8.2f}   x{v.max() / v.min():.2f}"
        )
    alu = np.array(times["alu"])
    worst = max(chains, key=lambda k: max(times[k]) / min(times[k]))
    spread = max(times[worst]) / min(times[worst])
    if alu.max() / alu.min() < 1.1 and spread > 1.3:
        print(
            f"  the clock held (alu x{alu.max() / alu.min():.2f}) while {worst} swung "
            f"x{spread:.2f}: spells of shared caches or memory; time A/B alternating"
        )


if __name__ == "__main__":
    main()
