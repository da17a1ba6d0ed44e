"""What a stage costs before it reads a row: back-to-back calls with one lookup each, timed as
``benchmarks/gpu_kernels.py`` times a stage (L2 flushed, CUDA events around the calls, median).

A stage of ``T`` tables is ``T`` calls in a row. Each call costs the GPU a kernel's launch and
drain, and torch's call launches more than the gather kernel. This measures that floor per
call, for torch's ``embedding_bag`` and for the hand-written kernel (CuPy ``RawKernel``, the
variants' launch, grid 1024), with the host's time per call beside it: where the host takes
longer than the GPU, the floor is the host's. It also times a gpu-micro24-shaped stage whose
lookups all read a 64-row table (the loops' issue and load-store floor, each kernel) and lists
the kernels one full-size torch call launches (torch.profiler), with their GPU times.

    python benchmarks/gpu_launch_floor.py [--calls 1,12] [--repeats 50] [--json out.json]

A microbenchmark: its figures are inputs a model may take, not stage times to compare with.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


def timed(run, flush, stream, repeats: int, warmup: int = 5) -> dict[str, float]:
    """Median GPU time (CUDA events around ``run``) and host time of ``run`` (us), L2 flushed."""
    import torch

    gpu_us, host_us = [], []
    with torch.no_grad(), torch.cuda.stream(stream):
        for i in range(warmup + repeats):
            flush.fill_(float(i))
            stream.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            end.record(stream)
            stream.synchronize()
            if i >= warmup:
                gpu_us.append(start.elapsed_time(end) * 1e3)
                host_us.append((t1 - t0) * 1e6)
    return {
        "gpu_median_us": statistics.median(gpu_us),
        "gpu_min_us": min(gpu_us),
        "host_median_us": statistics.median(host_us),
    }


def floors(calls: list[int], repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    import cupy as cp
    import numpy as np
    import torch

    from nmp.gpu.kernels_real import BLOCK, GRID, KERNEL_SOURCE

    dev = torch.device("cuda")
    stream = torch.cuda.Stream()
    cp_stream = cp.cuda.ExternalStream(stream.cuda_stream)
    flush = torch.empty(2 * torch.cuda.get_device_properties(dev).L2_cache_size // 4, device=dev)
    dim = 128
    n = max(calls)
    gen = torch.Generator(device="cpu").manual_seed(0)
    weights = [torch.rand(1024, dim, generator=gen).to(dev) for _ in range(n)]
    idx = torch.zeros(1, dtype=torch.int64, device=dev)
    off = torch.zeros(1, dtype=torch.int64, device=dev)
    outs = [torch.empty(1, dim, device=dev) for _ in range(n)]
    bag = cp.RawKernel(KERNEL_SOURCE, "embedding_bag_sum", options=("-std=c++17", "-DPREFETCH=1"))
    empty = cp.RawKernel('extern "C" __global__ void nothing() {}', "nothing")
    views = [(cp.from_dlpack(idx), cp.from_dlpack(off), cp.from_dlpack(w), cp.from_dlpack(o))
             for w, o in zip(weights, outs, strict=True)]  # fmt: skip

    def torch_calls(k):
        return lambda: [torch.nn.functional.embedding_bag(idx, w, off, mode="sum")
                        for w in weights[:k]]  # fmt: skip

    def handwritten_calls(k):
        def run():
            with cp_stream:
                for v in views[:k]:
                    bag((GRID, 1, 1), BLOCK, (*v, np.int64(1), np.int64(1), np.int32(dim)))

        return run

    def empty_calls(k):
        def run():
            with cp_stream:
                for _ in range(k):
                    empty((1, 1, 1), (32, 1, 1), ())

        return run

    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, make in (("torch_embedding_bag", torch_calls),
                       ("handwritten_grid1024", handwritten_calls),
                       ("empty_kernel", empty_calls)):  # fmt: skip
        out[name] = {str(k): timed(make(k), flush, stream, repeats) for k in calls}
    return out


# The variants' builds (nmp.gpu.kernels_real): NVRTC options as the device check compiles them.
BUILDS = {
    "occupancy": ("-std=c++17", "-DPREFETCH=1", "--maxrregcount=32"),
    "prefetch": ("-std=c++17", "-DPREFETCH=4"),
    "prefetch-8": ("-std=c++17", "-DPREFETCH=8"),
}


def l1_resident(repeats: int, tables: int = 12, rows: int = 64) -> dict[str, dict[str, float]]:
    """A gpu-micro24-shaped stage (``tables`` x 2,048 bags x 150 lookups, dim 128) whose
    lookups all read a ``rows``-row table (32 KB: every row load an L1 hit after the first),
    per kernel: what the loop costs when the rows do not (the 2.4 MB of indices come from the
    L2 after the first table), its issue and load-store floor.
    Warp-lookups per SM cycle come with it (the SASS's instructions per lookup turn them into
    IPC: benchmarks/gpu_handwritten_sass.py)."""
    import cupy as cp
    import numpy as np
    import torch

    from nmp.gpu.kernels_real import BLOCK, GRID, KERNEL_SOURCE

    dev = torch.device("cuda")
    stream = torch.cuda.Stream()
    cp_stream = cp.cuda.ExternalStream(stream.cuda_stream)
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(2 * props.L2_cache_size // 4, device=dev)
    bags, pooling, dim = 2048, 150, 128
    gen = torch.Generator(device="cpu").manual_seed(0)
    weight = torch.rand(rows, dim, generator=gen).to(dev)
    idx = torch.randint(0, rows, (bags * pooling,), generator=gen).to(dev)
    off = torch.arange(0, bags * pooling, pooling, device=dev)
    out = torch.empty(bags, dim, device=dev)
    views = tuple(cp.from_dlpack(x) for x in (idx, off, weight, out))
    warp_lookups = tables * bags * pooling * (dim // 32)
    sm_cycles_per_us = props.multi_processor_count * 1980.0  # at the H200's 1,980 MHz clock
    result = {}
    stock = timed(
        lambda: [torch.nn.functional.embedding_bag(idx, weight, off, mode="sum")
                 for _ in range(tables)], flush, stream, repeats)  # fmt: skip
    result["baseline"] = stock
    for name, options in BUILDS.items():
        kernel = cp.RawKernel(KERNEL_SOURCE, "embedding_bag_sum", options=options)
        args = (*views, np.int64(bags), np.int64(bags * pooling), np.int32(dim))

        def run(kernel=kernel, args=args):
            with cp_stream:
                for _ in range(tables):
                    kernel((GRID, 1, 1), BLOCK, args)

        result[name] = timed(run, flush, stream, repeats)
        result[name]["regs"] = kernel.num_regs
    for r in result.values():
        r["warp_lookups_per_sm_cycle"] = warp_lookups / (r["gpu_median_us"] * sm_cycles_per_us)
    return result


def torch_kernels(batch: int, pooling: int, rows: int, dim: int) -> list[dict[str, float]]:
    """The CUDA kernels one torch embedding_bag call launches at full size, with GPU times."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    dev = torch.device("cuda")
    gen = torch.Generator(device="cpu").manual_seed(0)
    weight = torch.rand(rows, dim, generator=gen).to(dev)
    idx = torch.randint(0, rows, (batch * pooling,), generator=gen).to(dev)
    off = torch.arange(0, batch * pooling, pooling, device=dev)
    for _ in range(3):
        torch.nn.functional.embedding_bag(idx, weight, off, mode="sum")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.nn.functional.embedding_bag(idx, weight, off, mode="sum")
        torch.cuda.synchronize()
    return [{"name": e.key, "count": e.count, "device_us": e.device_time_total}
            for e in prof.key_averages() if e.device_time_total > 0]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", default="1,12", help="comma-separated call counts, each >= 1")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    try:
        calls = sorted({int(x) for x in args.calls.split(",")})
    except ValueError:
        ap.error(f"--calls {args.calls!r}: comma-separated integers, e.g. 1,12")
    if not calls or calls[0] < 1 or args.repeats < 1:
        ap.error("--calls and --repeats must be >= 1")
    from nmp.errors import NmpError
    from nmp.fileio import atomic_write_json, check_output_path

    if args.json:
        try:  # (refused before the device time is spent, not after)
            check_output_path(args.json)
        except NmpError as exc:
            ap.error(f"--json: {exc}")
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this microbenchmark needs a GPU", file=sys.stderr)
        return 2
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "floors": floors(calls, args.repeats),
              "l1_resident": l1_resident(args.repeats),
              "torch_kernels": torch_kernels(2048, 150, 1_000_000, 128)}  # fmt: skip
    print(f"{result['gpu']}, torch {result['torch']}")
    print(f"{'calls':<22} {'n':>3} {'GPU us':>9} {'GPU min':>9} {'host us':>9} {'GPU/call':>9}")
    for name, per in result["floors"].items():
        for k, r in per.items():
            print(f"{name:<22} {k:>3} {r['gpu_median_us']:>9.1f} {r['gpu_min_us']:>9.1f} "
                  f"{r['host_median_us']:>9.1f} {r['gpu_median_us'] / int(k):>9.2f}")  # fmt: skip
    print("a gpu-micro24 stage on a 64-row table (every row load an L1 hit):")
    for name, r in result["l1_resident"].items():
        print(f"  {name:<12} {r['gpu_median_us']:>9.1f} us  "
              f"{r['warp_lookups_per_sm_cycle']:.3f} warp-lookups per SM cycle")  # fmt: skip
    print("one torch call at batch 2048, pooling 150, 1M x 128 rows:")
    for k in result["torch_kernels"]:
        print(f"  {k['device_us']:>9.1f} us  x{k['count']}  {k['name'][:90]}")
    if args.json:
        atomic_write_json(args.json, result)  # (whole or not at all)
    return 0


if __name__ == "__main__":
    sys.exit(main())
