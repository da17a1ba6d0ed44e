"""Loaded latency on a real GPU: a pointer chase at 1-64 warps per SM and 1-4 chains per warp,
measured beside what the GPU model predicts for it (nmp.gpu.latency_probe).

Each warp chases ``K`` random pointer chains (one seeded permutation cycle) over a buffer far
larger than the L2 (level hbm) or a quarter of it (level l2), ``W`` warps on every SM; each step
reads one row (32 B: a sector, 128 B: a line) with ld.global.cg. Per configuration it prints the
mean latency per step ((elapsed time - the same launch's at 0 steps) / steps, CUDA events,
medians), the useful GB/s and requests/s, and the model's figures for the same probe.

    python benchmarks/gpu_latency.py --arch h200 --record     # on a CUDA GPU (the [gpu] extra)
    python benchmarks/gpu_latency.py --arch h200 --model-only # the model's curve, no GPU
    python benchmarks/gpu_latency.py --dry-run                # CPU: every launch built and checked

``--record`` writes ``nmp/gpu/data/latency-probe-*.json`` (GPU name, driver, torch/CUDA/CuPy
versions, date), which ``nmp validate`` (check gpu.latency, group real-gpu) compares per point.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from nmp.errors import NmpError

# Chosen: 32 registers keep 64 warps resident (65,536 / (64 x 32)). nvcc 13.0 -arch=sm_90 -O3
# gives the kernel 32 / 30 / 32 registers at 1 / 2 / 4 chains uncapped, and no spill at 8 capped.
REGS_PER_THREAD = 32
MAX_REGS = ("-std=c++17", f"--maxrregcount={REGS_PER_THREAD}")

KERNEL_SOURCE = r"""
#ifndef CHAINS
#define CHAINS 1
#endif
extern "C" __global__ void pointer_chase(
    const unsigned int* __restrict__ buf, const unsigned int* __restrict__ starts,
    long long steps, int node_words, int row_words, unsigned int* __restrict__ sink,
    unsigned int* __restrict__ smid_out) {
  const int lane = threadIdx.x & 31;
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned int cur[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) cur[k] = starts[warp * CHAINS + k];
  unsigned int acc = 0;
  for (long long s = 0; s < steps; ++s) {
    unsigned int v[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; ++k)  // CHAINS independent loads in flight per warp
      v[k] = lane < row_words ? __ldcg(buf + (size_t)cur[k] * node_words + lane) : 0u;
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) {
      acc += v[k];                              // the row's other words are used too
      cur[k] = __shfl_sync(0xffffffffu, v[k], 0);  // the next node: the word lane 0 read
    }
  }
  if (acc == 0xffffffffu) sink[0] = acc;  // never true: keeps every load
  if (threadIdx.x == 0) {
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    smid_out[blockIdx.x] = smid;
  }
}
"""


def launches(gpu, pts, steps: int, seed: int, hbm_bytes: int) -> list[dict[str, Any]]:
    """Every launch's geometry and buffer, checked on the CPU (one dict per point)."""
    from nmp.gpu.latency_probe import NODE_BYTES, buffer_bytes, geometry

    out = []
    for p in pts:
        grid, wpb, per_sm = geometry(p.warps_per_sm, gpu.sm.count)
        nodes = buffer_bytes(gpu, p.level, hbm_bytes) // NODE_BYTES
        regs = REGS_PER_THREAD * 32 * p.warps_per_sm
        if (
            per_sm > gpu.sm.max_blocks
            or p.warps_per_sm > gpu.sm.max_warps
            or regs > gpu.sm.registers
        ):
            raise NmpError(f"{p.key}: {per_sm} blocks / {p.warps_per_sm} warps exceed an SM")
        chains = grid * wpb * p.chains
        if steps < 1 or nodes < 2 * chains:
            raise NmpError(f"{p.key}: {nodes} nodes for {chains} chains (steps {steps})")
        out.append(
            {"point": p, "grid": grid, "block": 32 * wpb, "blocks_per_sm": per_sm,
             "nodes": nodes, "chains_total": chains}
        )  # fmt: skip
    return out


def dry_run_checks(gpu, plan: list[dict[str, Any]], seed: int) -> list[str]:
    """CPU checks: the chain of a small buffer is one cycle through every node, starts are
    distinct, and the kernel source holds what the launch calls."""
    from nmp.gpu.latency_probe import chain, chain_starts

    nxt = chain(4096, seed)
    seen = np.zeros(4096, dtype=bool)
    node = 0
    for _ in range(4096):
        seen[node] = True
        node = int(nxt[node])
    if node != 0 or not seen.all():
        raise NmpError("the pointer chain is not one cycle through every node")
    starts = chain_starts(nxt, 64, seed)
    if np.unique(starts).shape[0] != 64:
        raise NmpError("chain starts are not distinct")
    for name in ("pointer_chase", "__ldcg", "__shfl_sync", "%%smid"):
        if name not in KERNEL_SOURCE:
            raise NmpError(f"kernel source lacks {name}")
    levels = sorted({lp["point"].level for lp in plan})
    sizes = {lv: next(lp["nodes"] for lp in plan if lp["point"].level == lv) for lv in levels}
    return [
        f"{len(plan)} launches; buffers: "
        + ", ".join(f"{lv} {n * 128 / 2**20:,.0f} MiB ({n:,} nodes)" for lv, n in sizes.items()),
        f"largest grid {max(lp['grid'] for lp in plan)} blocks of "
        f"{max(lp['block'] for lp in plan)} threads",
    ]


def timed(fn, launch: dict[str, Any], args: tuple, flush, i: int) -> float:
    """One launch (ns between CUDA events), after writing ``flush`` (cold L2) unless None."""
    import cupy as cp

    if flush is not None:
        flush.fill(float(i))
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn((launch["grid"],), (launch["block"],), args)
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) * 1e6


def measure(gpu, plan, steps: int, seed: int, repeats: int, warmup: int) -> list[dict]:
    """Run every launch on the current CUDA device; one measured row per point."""
    try:
        import cupy as cp
        import torch
    except ImportError as exc:
        raise NmpError(f"the probe needs torch and the [gpu] extra (CuPy): {exc}") from None

    from nmp.gpu.latency_probe import NODE_BYTES, chain, chain_starts

    if not torch.cuda.is_available():
        raise NmpError("no CUDA device: run with --dry-run or --model-only without a GPU")
    node_words = NODE_BYTES // 4
    flush = cp.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, cp.float32)
    kernels: dict[int, Any] = {}
    buffers: dict[int, Any] = {}
    rows = []
    for lp in plan:
        p = lp["point"]
        if lp["nodes"] not in buffers:
            buffers.clear()  # one buffer at a time: the HBM one is 1 GiB
            nxt = chain(lp["nodes"], seed)
            buf = cp.zeros(lp["nodes"] * node_words, dtype=cp.uint32)
            buf[::node_words] = cp.asarray(nxt)
            buffers[lp["nodes"]] = (buf, nxt)
        buf, nxt = buffers[lp["nodes"]]
        if p.chains not in kernels:
            kernels[p.chains] = cp.RawKernel(
                KERNEL_SOURCE, "pointer_chase", options=MAX_REGS + (f"-DCHAINS={p.chains}",)
            )
        fn = kernels[p.chains]
        starts = cp.asarray(chain_starts(nxt, lp["chains_total"], seed))
        sink = cp.zeros(1, dtype=cp.uint32)
        smid = cp.zeros(lp["grid"], dtype=cp.uint32)

        def args(n_steps: int, buf=buf, starts=starts, sink=sink, smid=smid, p=p) -> tuple:
            return (buf, starts, np.int64(n_steps), np.int32(node_words),
                    np.int32(p.row_bytes // 4), sink, smid)  # fmt: skip

        cold = flush if p.level == "hbm" else None  # the l2 level stays warm from the warm-up
        runs = [
            (timed(fn, lp, args(steps), cold, i), timed(fn, lp, args(0), cold, i))
            for i in range(warmup + repeats)
        ][warmup:]
        # The launch and the start loads cost the same at 0 steps: only the chase is left.
        empty = float(np.median([r[1] for r in runs]))
        t = float(np.median([r[0] for r in runs])) - empty
        per_sm = np.bincount(cp.asnumpy(smid).astype(np.int64), minlength=gpu.sm.count)
        used = per_sm[per_sm > 0]
        loads = lp["chains_total"] * steps
        rows.append(
            {
                "level": p.level,
                "warps_per_sm": p.warps_per_sm,
                "chains": p.chains,
                "row_bytes": p.row_bytes,
                "latency_ns": t / steps,
                "gbps": loads * p.row_bytes / t,
                "requests_per_s": loads / t * 1e9,
                "median_ns": t + empty,
                "empty_launch_ns": empty,
                "blocks_per_sm_min": int(used.min()),
                "blocks_per_sm_max": int(used.max()),
                "sms_used": int(used.shape[0]),
                "buffer_bytes": lp["nodes"] * NODE_BYTES,
                "regs": int(fn.num_regs),
            }
        )
    return rows


def agrees(modeled: dict[str, Any], measured: dict[str, Any]) -> bool:
    from nmp.gpu.latency_probe import LATENCY_REL

    return abs(modeled["latency_ns"] / measured["latency_ns"] - 1.0) <= LATENCY_REL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--levels", default="hbm,l2")
    parser.add_argument("--warps", default="1,2,4,8,16,32,48,64", help="warps per SM")
    parser.add_argument("--chains", default="1,2,4", help="independent chains per warp")
    parser.add_argument("--row-bytes", default="32,128")
    parser.add_argument("--steps", type=int, default=1024)
    parser.add_argument("--hbm-bytes", type=int, default=1 << 30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true", help="CPU only: build and check")
    parser.add_argument("--model-only", action="store_true", help="the model's curve only")
    parser.add_argument("--record", action="store_true", help="save the measurement")
    args = parser.parse_args(argv)

    from nmp.gpu.latency_probe import LATENCY_REL, model_lines, points, predict, record
    from nmp.gpu.spec import load_gpu

    try:
        gpu = load_gpu(args.arch)
        pts = points(
            [s for s in args.levels.split(",") if s],
            [int(s) for s in args.warps.split(",") if s],
            [int(s) for s in args.chains.split(",") if s],
            [int(s) for s in args.row_bytes.split(",") if s],
        )
        plan = launches(gpu, pts, args.steps, args.seed, args.hbm_bytes)
        lines = dry_run_checks(gpu, plan, args.seed)
    except (NmpError, ValueError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    print(f"GPU preset {gpu.name}: {gpu.sm.count} SMs, steps {args.steps}, seed {args.seed}")
    for line in lines:
        print("  " + line)
    if args.dry_run or args.model_only:
        print("\n".join(model_lines(gpu, pts, args.steps)))
        if args.dry_run:
            print("dry run: every launch built and checked on the CPU, nothing measured")
        return 0
    from nmp.gpu.kernels_real import device_facts

    try:
        rows = measure(gpu, plan, args.steps, args.seed, args.repeats, args.warmup)
    except NmpError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    facts = device_facts()
    print(f"measured on {facts['gpu_name']} (driver {facts['driver']}, torch {facts['torch']})")
    print(
        f"{'level':<5} {'W/SM':>4} {'K':>2} {'B':>4} {'meas ns':>8} {'model ns':>8} "
        f"{'meas GB/s':>9} {'model GB/s':>10} {'meas Greq/s':>11} {'blocks/SM':>9} "
        f"{'model/meas':>10}"
    )
    for r, p in zip(rows, pts, strict=True):
        m = predict(gpu, p, args.steps)
        print(
            f"{p.level:<5} {p.warps_per_sm:>4} {p.chains:>2} {p.row_bytes:>4} "
            f"{r['latency_ns']:>8.1f} {m['latency_ns']:>8.1f} {r['gbps']:>9.1f} "
            f"{m['gbps']:>10.1f} {r['requests_per_s'] / 1e9:>11.2f} "
            f"{r['blocks_per_sm_min']:>7}-{r['blocks_per_sm_max']:<2} "
            f"{m['latency_ns'] / r['latency_ns']:>9.3f}{'' if agrees(m, r) else ' *'}"
        )
    print(
        f"* the model's latency is off by more than {LATENCY_REL:.0%} (nmp validate: gpu.latency)"
    )
    if args.record:
        rec = dict(
            facts,
            arch_preset=args.arch,
            steps=args.steps,
            seed=args.seed,
            repeats=args.repeats,
            points=rows,
            method="benchmarks/gpu_latency.py: pointer chase, ld.global.cg, CUDA events around "
            "one launch, median, less the median of the same launch at 0 steps; hbm level: L2 "
            "flushed before each launch",
        )
        path = record(rec)
        print(f"recorded in {path}; every later run can price loads with it:")
        print(f"  nmp run --arch {args.arch} --set arch.hbm.loaded_latency_record={path.name} ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
