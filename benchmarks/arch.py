"""Speed of the architecture models (printed, not asserted).

1. Functional gather-reduce lookups per second: the units' gather, per-unit partial sums and
   tree reduction of :class:`nmp.arch.Architecture` (rows synthesised from the hashed row
   store, as for Criteo-size tables), beside ``torch.nn.EmbeddingBag(mode="sum")`` on the same
   rows materialized as dense tables and the same batch, in the same run, one thread each,
   the two sides timed alternately (best of N each), by the wall clock and by the thread's CPU
   time (the figure to compare on a shared machine: time spent waiting for a core is not in it);
   then the same in a child process compiled and dispatched for AVX2 only (``AVX2_ONLY_ENV``:
   the code a CPU without AVX-512 runs, such as AMD EPYC up to Zen 3), both ratios printed.
2. The partition LP on Criteo Kaggle's 26 tables.
3. Design points per second on ``recross-eval``: ``run_design_point`` with a new seed per
   point, after one warm-up point (numba compilation, access profile, partition LP) on an
   empty replay cache, with the share of time spent inside the DRAM engine (``replay_lines``)
   and its runs per point; on one thread
   (``NMP_THREADS=1``), then on every CPU (a point's node replays and its functional gather
   run side by side).
4. Points that share their streams: a sweep of one energy figure (``arch.rank.pj_per_add``) at
   one lookup seed, a new design per point (as ``nmp evaluate``'s points), on one thread, with
   the replay cache (:mod:`nmp.arch.replay_cache`) and without, alternating; each round starts
   with no set-up shared (:mod:`nmp.arch.design_key`), so its first design pays for its own.

Usage: ``python benchmarks/arch.py [--points N] [--rounds N] [--arch recross] [--repeat N]
[--sweep N] [--gather-only] [--sweep-only] [--isa avx2]`` (``--rounds``: item 3 on one thread
that many times, each round on new seeds, and the range of its points/s, with
``machine_spells.py``'s cache probes timed around each round; ``--gather-only``:
item 1 alone, both code paths; ``--sweep-only``: item 4 alone, after one warm-up point;
``--isa avx2``: every item in the code a CPU without AVX-512 runs, the DRAM engine's AVX2 paths
included: ``_isa.py``).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from _host import load, machine, queue_wait_s  # benchmarks/ is on sys.path when a script runs
from _isa import AVX2_ONLY_ENV, ISAS, describe, enter

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
# (NMP_THREADS is set per design-point run below)


class Clock:
    """Where a stretch of this process's wall time went: on a CPU (all threads), this thread
    waiting for a CPU that other processes held (Linux's run_delay, :func:`_host.queue_wait_s`),
    and the rest (blocked: I/O, sleeps, locks; below zero where threads ran side by side), with the
    voluntary context switches and page faults read from disk that the rest would come from."""

    def __init__(self) -> None:
        self.usage = resource.getrusage(resource.RUSAGE_SELF)
        self.wait0 = queue_wait_s()
        self.t0, self.c0 = time.perf_counter(), time.process_time()

    def wall_s(self) -> float:
        return time.perf_counter() - self.t0

    def cpu_s(self) -> float:
        return time.process_time() - self.c0

    def wait_s(self) -> float:
        """Seconds waiting for a CPU (0 where the kernel keeps no scheduler statistics)."""
        now = queue_wait_s()
        return 0.0 if now is None or self.wait0 is None else now - self.wait0

    def free_wall_s(self) -> float:
        """The wall time less the wait for a CPU: what a free core gives."""
        return self.wall_s() - self.wait_s()

    def split(self, n: int) -> str:
        wall, cpu, wait = self.wall_s(), self.cpu_s(), self.wait_s()
        u = resource.getrusage(resource.RUSAGE_SELF)
        switches, faults = u.ru_nvcsw - self.usage.ru_nvcsw, u.ru_majflt - self.usage.ru_majflt
        minor = (u.ru_minflt - self.usage.ru_minflt) / max(n, 1)
        return (
            f"wall {wall:.3f} s = CPU {cpu:.3f} + waiting for a CPU {wait:.3f} + other "
            f"{wall - cpu - wait:.3f} ({switches} voluntary switches, {faults} page faults "
            f"from disk, {minor:.0f} pages mapped afresh per point): "
            f"{n / (wall - wait):.2f} points/s by wall less the wait"
        )


class CacheProbe:
    """machine_spells.py's L2- and L3-sized pointer chases, timed before and after each round:
    a round's figure beside the caches' state around it."""

    def __init__(self, seed: int = 0):
        import numpy as np
        from machine_spells import SIZES, STEPS, _chase, _cycle, _timed

        rng = np.random.default_rng(seed)
        self._chase, self._timed = _chase, _timed
        self._chains = [(_cycle(SIZES[k] // 4, rng), STEPS[k]) for k in ("l2", "l3")]
        for nxt, _ in self._chains:
            _chase(nxt, 10)  # (compiled before the first timing)

    def times(self):
        import numpy as np

        return np.array([self._timed(self._chase, nxt, steps) for nxt, steps in self._chains])


def design_points(arch: str, n: int, threads: int, first_seed: int = 1) -> float:
    """Points per second of ``n`` points on ``threads`` threads (printed); after a warm-up.
    The points' seeds are ``first_seed``, ``first_seed + 1``, ... (a round of its own: new)."""
    import nmp.arch.replay
    import nmp.memory
    from nmp.arch import run_design_point
    from nmp.arch.replay_cache import REPLAYS

    os.environ["NMP_THREADS"] = str(threads)
    spent = {"replay_s": 0.0, "runs": 0}
    # what the design point's replays call: one run, or (one thread) a level's runs at once
    inner = nmp.arch.replay.replay_lines
    inner_many = nmp.arch.replay.replay_lines_many

    def timed(fn, runs_of):
        def timed_replay(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent["replay_s"] += time.perf_counter() - t0
                spent["runs"] += runs_of(args)

        return timed_replay

    # a fresh cache, as a new process has: an earlier run of the same seeds (the other thread
    # count's) would otherwise be reused
    REPLAYS.clear()
    t0 = time.perf_counter()
    run_design_point(arch, "recross-eval", seed=0)
    warm = time.perf_counter() - t0
    nmp.arch.replay.replay_lines = timed(inner, lambda args: 1)
    nmp.arch.replay.replay_lines_many = timed(inner_many, lambda args: len(args[0]))
    reused = REPLAYS.hits
    try:
        clock = Clock()
        point_cpu = []  # each point's CPU time: a busy spell of a shared machine slows a few
        for i in range(n):
            c0 = time.process_time()
            r = run_design_point(arch, "recross-eval", seed=first_seed + i)
            point_cpu.append(time.process_time() - c0)
        elapsed, cpu = clock.wall_s(), clock.cpu_s()
    finally:
        nmp.arch.replay.replay_lines = inner
        nmp.arch.replay.replay_lines_many = inner_many
    print(
        f"design points: {arch} on recross-eval, {n} points on {threads} thread(s) after a "
        f"{warm:.2f} s warm-up (DRAM engine: {nmp.memory.driver.engine_backend()})"
    )
    print(
        f"  {n / elapsed:.2f} points/s by the wall clock ({elapsed / n * 1e3:.0f} ms per point; "
        f"target >= 25/s), {n / cpu:.2f} per CPU second (the process's, all threads)"
    )
    print(f"  {clock.split(n)}")
    point_cpu.sort()
    print(
        f"  CPU time per point: least {point_cpu[0] * 1e3:.1f} ms, first quartile "
        f"{point_cpu[n // 4] * 1e3:.1f}, median {point_cpu[n // 2] * 1e3:.1f} "
        f"({1 / point_cpu[n // 2]:.2f} points per CPU second at the median)"
    )
    if threads == 1:
        print(
            "  inside the DRAM engine (replay_lines, replay_lines_many): "
            f"{spent['replay_s'] / elapsed:.0%} of the time "
            f"({spent['runs'] / n:.0f} engine runs per point, "
            f"{spent['replay_s'] / max(spent['runs'], 1) * 1e3:.2f} ms each); the architecture "
            f"model itself: {(elapsed - spent['replay_s']) / n * 1e3:.1f} ms per point"
        )
    else:
        print(
            f"  DRAM engine time summed over the threads: {spent['replay_s'] / n * 1e3:.1f} ms "
            "per point"
        )
    print(
        f"  replays reused from the cache: {REPLAYS.hits - reused} (each point has its own "
        f"seed); last point: {r.lookups_per_s:.3g} lookups/s, latency {r.latency_ns / 1e3:.1f} us"
    )
    return n / elapsed


def shared_streams(arch: str, n: int, repeat: int = 3) -> None:
    """Points per second of a same-seed sweep of an energy figure (every point a new design,
    so its set-up runs too), with the replay cache and without (printed)."""
    import statistics

    from nmp.arch import run_design_point
    from nmp.arch.replay_cache import REPLAYS

    try:  # designs differing in energy alone share their set-up (nmp.arch.design_key)
        from nmp.arch.architecture import _SETUPS
    except ImportError:  # a tree before it (an A/B run against an older checkout)
        _SETUPS = {}
    os.environ["NMP_THREADS"] = "1"
    budget = REPLAYS.max_bytes
    rates: dict[bool, list[float]] = {False: [], True: []}
    cpu_rates: dict[bool, list[float]] = {False: [], True: []}
    free_rates: dict[bool, list[float]] = {False: [], True: []}
    splits: list[str] = []
    hits = total = 0
    k = 0
    try:
        for _ in range(repeat):
            for cached in (False, True):
                REPLAYS.clear()
                _SETUPS.clear()  # the round's first design pays its set-up
                REPLAYS.max_bytes = budget if cached else 0
                clock = Clock()
                for _ in range(n):
                    k += 1  # a value no earlier point used: a new design
                    ov = {"arch": {"rank.pj_per_add": 0.9 + 1e-4 * k}}
                    run_design_point(arch, "recross-eval", overrides=ov, seed=1)
                rates[cached].append(n / clock.wall_s())
                cpu_rates[cached].append(n / clock.cpu_s())
                free_rates[cached].append(n / clock.free_wall_s())
                if cached:
                    splits.append(clock.split(n))
                    hits, total = REPLAYS.hits, REPLAYS.hits + REPLAYS.misses
    finally:
        REPLAYS.max_bytes = budget
        REPLAYS.clear()
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"points sharing their streams: {arch} on recross-eval, {n} points of one seed, "
        f"arch.rank.pj_per_add swept (a new design each), one thread; median of {repeat}, "
        "alternating"
    )
    print(
        f"  {on:.2f} points/s with the replay cache ({hits} of {total} replays reused), "
        f"{off:.2f} without: {on / off:.2f}x (wall clock); per CPU second: "
        f"{statistics.median(cpu_rates[True]):.2f} and {statistics.median(cpu_rates[False]):.2f}"
    )
    free = free_rates[True]
    print(
        f"  by wall less the wait for a CPU (a free core; target >= 25/s): with the cache "
        f"{statistics.median(free):.2f} points/s (rounds {min(free):.2f}-{max(free):.2f}), "
        f"without {statistics.median(free_rates[False]):.2f}; load {load()}"
    )
    for i, line in enumerate(splits):
        print(f"  round {i + 1} with the cache: {line}")


def functional(
    rows: int, tables: int, dim: int, batch: int, pooling: int, repeat: int
) -> tuple[float, float, float]:
    """The gather-reduce beside EmbeddingBag (printed); returns the ratios torch / nmp: by the
    wall clock, by thread CPU time (best of each side), and the median of the paired rounds."""
    import numpy as np
    import torch

    from nmp.arch import load_arch
    from nmp.workload import generate_batch, load_workload

    torch.set_num_threads(1)
    wl = load_workload(
        "recross-eval",
        {"rows": [rows] * tables, "dim": dim, "batch": batch, "pooling": pooling},
    )
    arch = load_arch("recross")
    arch.bind(wl)
    batch_ = generate_batch(wl, seed=1)
    flat, plc, _ = arch.prepare(batch_)
    weights = [torch.from_numpy(arch.store.dense_table(t)) for t in range(tables)]
    bags = [torch.nn.EmbeddingBag.from_pretrained(w, mode="sum") for w in weights]
    idx = [torch.from_numpy(lk.indices) for lk in batch_.tables]
    off = [torch.from_numpy(lk.offsets[:-1]) for lk in batch_.tables]
    n = batch_.num_lookups
    inf = float("inf")
    best = {"ours": [inf, inf], "torch": [inf, inf]}  # [wall s, thread CPU s]
    last_cpu = {"ours": inf, "torch": inf}

    def timed(side, fn):
        w0, c0 = time.perf_counter(), time.thread_time()
        out = fn()
        cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
        best[side] = [min(best[side][0], wall), min(best[side][1], cpu)]
        last_cpu[side] = cpu
        return out

    paired: list[float] = []  # torch / ours by thread CPU time, one pair per round

    with torch.no_grad():
        arch.policy.execute(arch, flat, plc)  # compile
        for b, i, o in zip(bags, idx, off, strict=True):
            b(i, o)
        # best of `repeat`, the two sides alternating so that a busy spell of a shared
        # machine slows both rather than one
        for _ in range(repeat):
            ours = timed("ours", lambda: arch.policy.execute(arch, flat, plc))
            ref = timed("torch", lambda: [b(i, o) for b, i, o in zip(bags, idx, off, strict=True)])
            paired.append(last_cpu["torch"] / last_cpu["ours"])
    t_ours, t_torch = best["ours"][0], best["torch"][0]
    err = max(
        float(np.abs(a - r.numpy()).max() / np.abs(r.numpy()).max())
        for a, r in zip(ours, ref, strict=True)
    )
    print(
        f"functional gather-reduce: {tables} tables x {rows} rows, dim {dim}, batch {batch}, "
        f"pooling {pooling} ({n} lookups), the same batch on both sides; best of {repeat}, "
        f"alternating, one thread each"
    )
    print(
        f"  nmp.arch: {n / t_ours:.3g} lookups/s (recross placement: 18 units at 3 levels "
        f"each sum the rows they own per bag, partial sums reduced up the tree; each row "
        f"synthesised from the hashed row store, 2 basis-row loads + 1 add per element)"
    )
    print(
        f"  torch.nn.EmbeddingBag(mode='sum'): {n / t_torch:.3g} lookups/s (the same rows "
        f"materialized as dense tables, {tables * rows * dim * 4 / 2**20:.0f} MiB, 1 row load "
        f"per lookup)"
    )
    print(
        f"  ratio nmp/torch: {t_torch / t_ours:.2f}x by the wall clock, "
        f"{best['torch'][1] / best['ours'][1]:.2f}x by thread CPU time (target >= 0.9x); "
        f"max rel. err {err:.1e}"
    )
    import statistics

    print(f"  {_vector_widths()}")
    print(
        f"  the same by thread CPU time, round by round (each pair back to back: a busy spell "
        f"of a shared machine slows both): median {statistics.median(paired):.2f}x, range "
        f"{min(paired):.2f}-{max(paired):.2f}x"
    )
    return t_torch / t_ours, best["torch"][1] / best["ours"][1], statistics.median(paired)


def _vector_widths() -> str:
    """The widest vector registers the compiled gather kernels use (from their assembly): what
    the AVX2-only run must not exceed."""
    import re

    from nmp.arch.functional import _BASIS_KERNELS

    compiled = [c for k in _BASIS_KERNELS.values() for c in getattr(k, "kernels", (k,))]
    asm = "".join(k.inspect_asm(sig) for k in compiled for sig in k.signatures)
    found = set(re.findall(r"%([xyz])mm\d", asm))
    widest = next(
        (f"{w}mm ({b} bits)" for w, b in (("z", 512), ("y", 256), ("x", 128)) if w in found), "none"
    )
    return f"gather kernels' widest vector registers: {widest}"


GATHER = {"rows": 200_000, "tables": 8, "dim": 64, "batch": 2048, "pooling": 100}


def functional_avx2(repeat: int) -> tuple[float, float, float] | None:
    """:func:`functional` in a child process compiled and dispatched for AVX2 only
    (:data:`AVX2_ONLY_ENV`), its output printed; its ratios, or None where it failed."""
    import json
    import subprocess
    import sys

    print(f"the same, AVX2 only ({' '.join(f'{k}={v}' for k, v in AVX2_ONLY_ENV.items())}):")
    proc = subprocess.run(
        [sys.executable, __file__, "--gather-child", "--repeat", str(repeat)],
        env={**os.environ, **AVX2_ONLY_ENV},
        capture_output=True,
        text=True,
    )
    lines = proc.stdout.strip().splitlines()
    print("\n".join(ln for ln in lines if not ln.startswith("{")))
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        print(f"  failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
        return None
    return tuple(json.loads(lines[-1])["ratios"])


def partition_lp() -> None:
    from nmp.arch import load_arch
    from nmp.arch.placement import solve_cross_level
    from nmp.arch.profile import build_profile
    from nmp.workload import generate_batch, load_workload

    wl = load_workload("criteo-kaggle")
    arch = load_arch("recross")
    arch.bind(wl)
    t0 = time.perf_counter()
    batches = [generate_batch(wl, seed=100 + i) for i in range(4)]
    profile = build_profile(batches, [t.rows for t in wl.tables])
    t_profile = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, result = solve_cross_level(arch.spec, arch.layouts, arch.mem, profile, arch.table_row_bytes)
    t_lp = time.perf_counter() - t0
    assert result is not None, "recross has levels to partition"
    print(
        f"partition LP: criteo-kaggle, {len(wl.tables)} tables, {wl.total_rows:,} rows -> "
        f"{result.fractions.shape[0]} frequency classes x {result.fractions.shape[1]} levels"
    )
    print(
        f"  solve {t_lp * 1e3:.1f} ms (HiGHS {result.solve_s * 1e3:.1f} ms; target < 10 s), "
        f"profile of 4 batches {t_profile * 1e3:.0f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--arch", default="recross")
    ap.add_argument("--repeat", type=int, default=7, help="timings of each gather-reduce side")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="rounds of --points new-seed points on one thread (their range is printed)",
    )
    ap.add_argument(
        "--sweep", type=int, default=8, help="points of the same-seed sweep (0: skip it)"
    )
    ap.add_argument(
        "--gather-only", action="store_true", help="only the gather-reduce (both code paths)"
    )
    ap.add_argument("--sweep-only", action="store_true", help="only the same-seed sweep")
    ap.add_argument(
        "--isa",
        choices=ISAS,
        default="native",
        help="avx2: every part as a CPU without AVX-512 runs it (AMD EPYC up to Zen 3)",
    )
    ap.add_argument("--gather-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.points < 1 or args.rounds < 1:
        ap.error(f"--points and --rounds must be at least 1, got {args.points}, {args.rounds}")
    enter(args.isa)
    if not args.gather_child:
        print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
        print(describe())
    if args.sweep_only:
        from nmp.arch import run_design_point

        run_design_point(args.arch, "recross-eval", seed=1)  # numba compilation
        shared_streams(args.arch, args.sweep or 8)
        return
    ratios = functional(**GATHER, repeat=args.repeat)
    if args.gather_child:  # functional_avx2's child: its ratios as the last line
        import json

        print(json.dumps({"ratios": ratios}))
        return
    head = "gather-reduce, nmp/torch by thread CPU time (best; median of paired rounds), target "
    if args.isa == "avx2":  # this process runs the AVX2 code already: no child
        print(f"{head}>= 0.9x: AVX2 only {ratios[1]:.2f}x ({ratios[2]:.2f}x)")
    else:
        avx2 = functional_avx2(args.repeat)
        print(
            f"{head}>= 0.9x: this CPU's code {ratios[1]:.2f}x ({ratios[2]:.2f}x)"
            + (f", AVX2 only {avx2[1]:.2f}x ({avx2[2]:.2f}x)" if avx2 else ", AVX2 only: failed")
        )
    if args.gather_only:
        return
    partition_lp()
    from nmp.arch.threads import point_threads

    every = point_threads()  # before NMP_THREADS is set below
    # each round its own seeds: a shared VM's spells move a round's figure by 10-25 %, so one
    # round is a sample of them, and several give the range to quote (issue 43)
    import numpy as np

    probe = CacheProbe() if args.rounds > 1 else None
    rounds: list[float] = []
    spells = []
    for k in range(args.rounds):
        before = probe.times() if probe else None
        rounds.append(design_points(args.arch, args.points, 1, first_seed=1 + k * args.points))
        if probe is not None and before is not None:
            spells.append(np.maximum(before, probe.times()))
    one = rounds[-1]
    if args.rounds > 1:
        import statistics

        print(
            f"design points on one thread, {args.rounds} rounds of {args.points} new-seed "
            f"points: {min(rounds):.2f}-{max(rounds):.2f} points/s by the wall clock, median "
            f"{statistics.median(rounds):.2f} (target >= 25/s); rounds "
            + " ".join(f"{x:.2f}" for x in rounds)
        )
        least = np.min(spells, axis=0)
        print(
            "  the cache probes around each round (machine_spells.py's 256 KiB and 8 MiB "
            "chases, the slower of before and after, over their least): "
            + " ".join(f"{a:.2f}/{b:.2f}" for a, b in np.array(spells) / least)
            + " (1.00: the probe's best of this run; a spell within a round shows in neither)"
        )
    if every > 1:
        many = design_points(args.arch, args.points, every)
        print(f"  {every} threads / 1 thread: {many / one:.2f}x")
    if args.sweep > 0:
        shared_streams(args.arch, args.sweep)


if __name__ == "__main__":
    main()
