"""The MICRO'24 embedding kernels for real, on any CUDA GPU: the stock EmbeddingBag and its
variants, each checked bit for bit against ``torch.nn.EmbeddingBag`` and timed on the kit's own
batches, to set beside what :mod:`nmp.gpu.model` predicts for the same point.

Variants (:data:`REAL_VARIANTS`; each names the model variant and overrides that describe it):

* ``baseline``: PyTorch's own kernel (``EmbeddingBag_updateOutputKernel_sum_mean``), mode sum.
* ``occupancy``: a hand-written kernel with torch's work split (block (32, 8), grid 1024, one
  warp per 32-feature chunk of a bag, the same summation order: bit-identical) compiled with
  ``--maxrregcount`` = the preset's ``kernel.maxrregcount`` (the register cap).
* ``prefetch``: the same kernel loading ``1 + kernel.prefetch_distance`` lookups' rows into
  registers before summing them in order (the paper's software prefetch).
* ``pinning``: the stock kernel after the paper's pre-kernel, which issues
  ``prefetch.global.L2::evict_last`` over each table's hottest ``pinning.rows`` rows (profiled on
  another batch, as the model does) with the persisting L2 limit set to the set-aside.
* ``pinning-window``: the stock kernel on the table laid out with its hottest ``pinning.rows``
  rows first (the same profile; indices remapped, output bit-identical: :mod:`nmp.gpu.hot_layout`
  says why a window needs that), under an access-policy window over those rows
  (``cudaStreamSetAttribute``, hitProp persisting, missProp normal, hitRatio = min(1, set-aside /
  window bytes)), the persisting limit set to the set-aside: the model's ``pinning.mechanism =
  "access_window"``. The window must fit ``cudaDevAttrMaxAccessPolicyWindowSize`` and the
  set-aside ``cudaDevAttrMaxPersistingL2CacheSize``: checked against the preset on the CPU
  (:func:`check_plan`) and against the device before anything runs (:func:`measure`).
* ``layout-hot-first``: the window's control: the stock kernel on the same hot-first layout with
  the same remapped indices and no window, no set-aside (the model: ``layout = "hot_first"``,
  variant baseline). ``pinning-window`` against it is the window's own effect; it against
  ``baseline`` is the layout's (docs/gpu-model.md, "The window's control"). It is extra
  information beside issue #37's variants, not one of them (:attr:`RealVariant.control_for`).

Why CuPy ``RawKernel`` (NVRTC) and not ``torch.utils.cpp_extension.load_inline``: NVRTC compiles
in-process in seconds with no host compiler, ninja or CUDA toolkit matching torch's build (which
load_inline needs, minutes per variant); ``--maxrregcount`` and a ``-D`` per variant are compile
options; the compiled kernel reports its registers (``RawKernel.num_regs``), which the record
keeps. It is the ``[gpu]`` extra (``pip install -e .[gpu]``); torch supplies the reference and the
tensors (shared with CuPy through DLPack, no copies).

Everything a launch needs is built and checked on the CPU first (:func:`build_plan`,
:func:`check_plan`): ``benchmarks/gpu_kernels.py --dry-run`` runs that in CI. Timing
(:func:`measure`) follows ``benchmarks/gpu_validate.py``: per timed batch a buffer of twice the
L2 is written (cold L2), CUDA events around the tables' kernels on one stream, the median.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.fileio import atomic_write_text
from nmp.gpu.cudart import Cudart
from nmp.gpu.hot_layout import check_window
from nmp.gpu.kernels_plan import (  # the CPU side, named here for this module's callers
    BLOCK,
    GRID,
    Plan,
    RealVariant,
    TablePlan,
    build_plan,
    check_plan,
    check_set_aside,
    launch_args,
    pin_launch,
    real_variants,
    reference_sums,
    window_layout,
)

__all__ = [
    "BLOCK",
    "DATA_DIR",
    "GRID",
    "KERNEL_SOURCE",
    "RECORD_KIND",
    "Plan",
    "RealVariant",
    "TablePlan",
    "build_plan",
    "check_plan",
    "check_set_aside",
    "device_facts",
    "layout_tensors",
    "measure",
    "real_variants",
    "record",
    "reference_sums",
    "window_tensors",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
RECORD_KIND = "nmp.gpu.kernels_real/1"

KERNEL_SOURCE = r"""
#ifndef PREFETCH
#define PREFETCH 1
#endif
extern "C" __global__ void embedding_bag_sum(
    const long long* __restrict__ input, const long long* __restrict__ offsets,
    const float* __restrict__ weight, float* __restrict__ out,
    long long num_bags, long long num_indices, int dim) {
  // torch's work split: warp threadIdx.y of block b takes chunk b * blockDim.y + y (one bag x
  // 32 features), grid-stride; each lane sums one feature over the bag in index order.
  long long chunks_per_bag = (dim + blockDim.x - 1) / blockDim.x;
  long long num_chunks = num_bags * chunks_per_bag;
  long long stride = (long long)gridDim.x * blockDim.y;
  for (long long chunk = (long long)blockIdx.x * blockDim.y + threadIdx.y; chunk < num_chunks;
       chunk += stride) {
    long long feature = (chunk % chunks_per_bag) * blockDim.x + threadIdx.x;
    if (feature >= dim) continue;
    long long bag = chunk / chunks_per_bag;
    long long begin = bag == 0 ? 0 : offsets[bag];
    long long end = bag < num_bags - 1 ? offsets[bag + 1] : num_indices;
    float sum = 0.0f;
    for (long long emb = begin; emb < end; emb += PREFETCH) {
      float v[PREFETCH];
#pragma unroll
      for (int j = 0; j < PREFETCH; ++j)  // PREFETCH rows in flight before the first use
        v[j] = emb + j < end ? weight[input[emb + j] * dim + feature] : 0.0f;
#pragma unroll
      for (int j = 0; j < PREFETCH; ++j)  // summed in index order: torch's rounding
        if (emb + j < end) sum += v[j];
    }
    out[bag * dim + feature] = sum;
  }
}

extern "C" __global__ void pin_rows_evict_last(
    const char* weight, const long long* rows, long long n_rows, long long row_bytes) {
  // One thread per 128-B line of the listed rows: an L2 prefetch marked evict_last (persisting).
  long long lines_per_row = (row_bytes + 127) / 128;
  long long n = n_rows * lines_per_row;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const char* p = weight + rows[i / lines_per_row] * row_bytes + (i % lines_per_row) * 128;
    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(p));
  }
}
"""


def window_tensors(plan: Plan, weights: list[Any], max_window_bytes: int) -> list[tuple[Any, Any]]:
    """:func:`layout_tensors`, after refusing a window over ``max_window_bytes`` (the device's
    ``cudaDevAttrMaxAccessPolicyWindowSize``) before copying anything."""
    for t, tb in enumerate(plan.tables):
        check_window(tb.window_bytes, max_window_bytes, f"table {t}")
    return layout_tensors(plan, weights)


def layout_tensors(plan: Plan, weights: list[Any]) -> list[tuple[Any, Any]]:
    """Per table, (the weight laid out hot rows first, the remapped indices) as torch tensors on
    the weights' device: a one-time copy, untimed; the ``hot_first`` variants run on them."""
    import torch

    out = []
    for tb, weight in zip(plan.tables, weights, strict=True):
        order, remapped = window_layout(tb)
        dev = weight.device
        out.append(
            (
                weight[torch.as_tensor(order, device=dev)].contiguous(),
                torch.as_tensor(remapped, device=dev),
            )
        )
    return out


def _compile(variant: RealVariant):
    import cupy as cp

    options = ["-std=c++17", f"-DPREFETCH={variant.prefetch}"]
    if variant.maxrregcount:
        options.append(f"--maxrregcount={variant.maxrregcount}")
    return tuple(
        cp.RawKernel(KERNEL_SOURCE, name, options=tuple(options))
        for name in ("embedding_bag_sum", "pin_rows_evict_last")
    )


def measure(plan: Plan, *, repeats: int = 20, warmup: int = 3) -> dict[str, Any]:
    """Run every variant of ``plan`` on the current CUDA device: outputs compared bit for bit
    with torch's EmbeddingBag, times of whole batches (all tables) with a cold L2."""
    import cupy as cp
    import torch

    if not torch.cuda.is_available():
        raise NmpError("no CUDA device: run with --dry-run on a machine without a GPU")
    dev = torch.device("cuda")
    stream = torch.cuda.Stream()
    cp_stream = cp.cuda.ExternalStream(stream.cuda_stream)
    gen = torch.Generator(device="cpu").manual_seed(plan.seed)
    tensors, views, outs = [], [], []
    for tb in plan.tables:
        weight = torch.rand(tb.rows, tb.dim, generator=gen).to(dev)
        idx = torch.as_tensor(tb.indices, device=dev)
        off = torch.as_tensor(tb.offsets[:-1], device=dev)
        hot = torch.as_tensor(tb.hot, device=dev)
        ref = torch.nn.functional.embedding_bag(idx, weight, off, mode="sum")
        out = torch.empty_like(ref)
        tensors.append((weight, idx, off, ref))
        outs.append(out)
        # CuPy views of the same memory (DLPack), made once, outside the timed batches.
        views.append(tuple(cp.from_dlpack(x) for x in (weight, idx, off, hot, out)))
    flush = torch.empty(2 * plan.gpu.l2.size_bytes // 4, dtype=torch.float32, device=dev)
    cudart = Cudart() if any(v.pinning for v in plan.variants.values()) else None
    windowed: list[tuple[Any, Any]] = []
    if cudart is not None:
        # The device's own limits, before anything runs: CUDA would refuse the call.
        check_set_aside(plan.set_aside_bytes, cudart.attribute(cudart.ATTR_MAX_PERSISTING_L2))
    if any(v.access_window for v in plan.variants.values()):
        max_window = cudart.attribute(cudart.ATTR_MAX_WINDOW)  # type: ignore[union-attr]
        windowed = window_tensors(plan, [x[0] for x in tensors], max_window)
    elif any(v.hot_first for v in plan.variants.values()):  # the control alone: no window
        windowed = layout_tensors(plan, [x[0] for x in tensors])
    results: dict[str, Any] = {}
    for name, variant in plan.variants.items():
        bag_fn, pin_fn = _compile(variant)
        got: list[Any] = [None] * len(plan.tables)

        def run_batch(variant: RealVariant = variant, bag_fn=bag_fn, pin_fn=pin_fn, got=got):
            for t, tb in enumerate(plan.tables):
                weight, idx, off, _ref = tensors[t]
                w_cp, idx_cp, off_cp, hot_cp, out_cp = views[t]
                if variant.pinning:  # the previous table's persisting lines become normal
                    cudart.reset_persisting()  # type: ignore[union-attr]
                if variant.pre_kernel:
                    grid, block, _ = pin_launch(tb)
                    args = (w_cp, hot_cp, np.int64(tb.hot.shape[0]), np.int64(tb.row_bytes))
                    with cp_stream:  # a RawKernel launches on CuPy's current stream
                        pin_fn(grid, block, args)
                if variant.hot_first:
                    weight, idx = windowed[t]  # the hot rows are its first window_bytes
                if variant.access_window:
                    cudart.set_window(  # type: ignore[union-attr]
                        stream.cuda_stream,
                        weight.data_ptr(),
                        tb.window_bytes,
                        plan.window_ratio(tb),
                    )
                if variant.nvrtc:
                    grid, block, s = launch_args(tb)
                    bag_args = (idx_cp, off_cp, w_cp, out_cp, np.int64(s["num_bags"]),
                                np.int64(s["num_indices"]), np.int32(s["dim"]))  # fmt: skip
                    with cp_stream:
                        bag_fn(grid, block, bag_args)
                    got[t] = outs[t]
                else:
                    got[t] = torch.nn.functional.embedding_bag(idx, weight, off, mode="sum")

        if cudart is not None:
            cudart.set_persisting_limit(plan.set_aside_bytes if variant.pinning else 0)
        times_ms = []
        with torch.no_grad(), torch.cuda.stream(stream):
            for i in range(warmup + repeats):
                if variant.pinning:  # persisting lines would survive the flush
                    cudart.reset_persisting()  # type: ignore[union-attr]
                flush.fill_(float(i))  # evicts the L2: every timed batch starts cold
                stream.synchronize()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record(stream)
                run_batch()
                end.record(stream)
                stream.synchronize()
                if i >= warmup:
                    times_ms.append(start.elapsed_time(end))
        if variant.access_window:
            cudart.set_window(stream.cuda_stream, 0, 0, 0.0)  # type: ignore[union-attr]
        exact = all(torch.equal(tensors[t][3], got[t]) for t in range(len(plan.tables)))
        times_ms.sort()
        results[name] = {
            "median_us": times_ms[len(times_ms) // 2] * 1e3,
            "min_us": times_ms[0] * 1e3,
            "max_us": times_ms[-1] * 1e3,
            "repeats": repeats,
            "bit_exact": bool(exact),
            "regs": int(bag_fn.num_regs) if variant.nvrtc else None,
            "description": variant.description,
            "model_variant": variant.model_variant,
            "model_overrides": variant.model_overrides,
            "control_for": variant.control_for,
        }
    if cudart is not None:
        cudart.set_persisting_limit(0)
    return {"variants": results, **device_facts()}


def device_facts() -> dict[str, Any]:
    """GPU name, driver, torch / CUDA / CuPy versions of this run."""
    import cupy as cp
    import torch

    driver = cp.cuda.runtime.driverGetVersion()
    try:
        import subprocess

        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        driver_version = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else ""
    except (OSError, IndexError, subprocess.SubprocessError):
        driver_version = ""
    return {
        "gpu_name": torch.cuda.get_device_name(),
        "driver": driver_version or f"CUDA driver API {driver}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cupy": cp.__version__,
    }


def record(plan: Plan, measured: dict[str, Any], modeled_us: dict[str, float], data_dir=None):
    """Write the measurement (with the device facts and the date) as JSON into ``data_dir``
    (default ``nmp/gpu/data/``); returns the path."""
    data_dir = Path(data_dir or DATA_DIR)
    data_dir.mkdir(parents=True, exist_ok=True)
    day = datetime.date.today().isoformat()
    tag = "-".join(f"{k}{v}" for k, v in sorted(plan.overrides.items()))
    path = data_dir / f"measured-kernels-{plan.arch}-{plan.workload}-{tag}-{day}.json"
    entry = dict(
        measured,
        kind=RECORD_KIND,
        date=day,
        arch_preset=plan.arch,
        workload=plan.workload,
        workload_overrides=plan.overrides,
        seed=plan.seed,
        modeled_at_record_us=modeled_us,
        method="benchmarks/gpu_kernels.py: CUDA events around all tables' kernels, L2 flushed "
        "before each timed batch, median",
    )
    # through nmp.fileio: synced, renamed into place, and never onto a link or a device
    atomic_write_text(path, json.dumps(entry, indent=2, sort_keys=True) + "\n")
    return path
