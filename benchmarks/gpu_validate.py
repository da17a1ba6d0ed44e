"""Check the GPU model on a real GPU: stock torch.nn.EmbeddingBag (sum) on the exact batches.

For one design point (GPU preset, workload, reuse level) this rebuilds the very batch ``nmp run``
models (``nmp.workload.generate_batch`` with the same seed), runs PyTorch's stock EmbeddingBag
kernel on it table by table, one kernel per table as the model assumes, times each batch with
CUDA events after writing a buffer larger than the L2 (cold L2 per timed batch: the model starts
every batch from an empty L2), and prints the measured time beside the model's (``nmp run`` for
the same point, baseline variant), with the ``ncu`` command line that collects what the model
predicts (registers, achieved occupancy, L1/L2 sector hit rates, DRAM bytes).

    python benchmarks/gpu_validate.py --arch a100-80gb --reuse high [--repeats 20]
    python benchmarks/gpu_validate.py --dry-run      # on CPU: checks shapes, prints the plan

Measured figures belong in ``nmp/gpu/data/`` as a calibration source naming the GPU and the date
(``--record``); this script never runs in CI and never writes a figure it did not measure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from nmp.errors import NmpError
from nmp.fileio import atomic_write_text

DATA_DIR = Path(__file__).resolve().parent.parent / "nmp" / "gpu" / "data"
NCU_METRICS = (
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum",
    "gpu__time_duration.sum",
)


def ncu_command(args: argparse.Namespace) -> str:
    """The Nsight Compute line that profiles the same run (kernel name of the stock kernel)."""
    return (
        "ncu --kernel-name regex:EmbeddingBag_updateOutputKernel --cache-control all "
        f"--metrics {','.join(NCU_METRICS)} "
        f"python benchmarks/gpu_validate.py --arch {args.arch} --workload {args.workload} "
        f"--reuse {args.reuse} --batch {args.batch} --seed {args.seed} --repeats 1"
    )


def build(args: argparse.Namespace):
    """The workload spec, its batch (as nmp run draws it) and the model's result."""
    from nmp.gpu import load_gpu, run_design_point
    from nmp.workload import generate_batch, load_workload

    overrides = {"reuse": args.reuse, "batch": args.batch}
    spec = load_workload(args.workload, overrides)
    batch = generate_batch(spec, seed=args.seed)
    gpu = load_gpu(args.arch, {"variant": "baseline"})
    for t, (table, lookups) in enumerate(zip(spec.tables, batch.tables, strict=True)):
        if lookups.offsets.shape[0] != lookups.batch + 1 or lookups.offsets[-1] != len(
            lookups.indices
        ):
            raise SystemExit(f"table {t}: offsets do not delimit the indices")
        if lookups.indices.size and (
            lookups.indices.min() < 0 or lookups.indices.max() >= table.rows
        ):
            raise SystemExit(f"table {t}: an index lies outside its {table.rows} rows")
        if not table.element.holds_float32:
            raise SystemExit(f"table {t}: the check runs fp32 tables only ({table.dtype})")
    model = None
    if not args.skip_model:
        model = run_design_point(
            args.arch,
            args.workload,
            overrides={"arch": {"variant": "baseline"}, "workload": overrides},
            seed=args.seed,
        )
    return spec, batch, gpu, model


def plan_lines(args, spec, batch, gpu) -> list[str]:
    table_bytes = sum(t.rows * t.dim * 4 for t in spec.tables)
    flush_bytes = 2 * gpu.l2.size_bytes
    return [
        f"GPU preset {gpu.name} ({gpu.description}); workload {spec.name}, reuse {args.reuse}, "
        f"batch {args.batch}, seed {args.seed}",
        f"tables: {len(spec.tables)} x {spec.tables[0].rows:,} rows x dim {spec.tables[0].dim} "
        f"fp32 = {table_bytes / 2**30:.2f} GiB on the device; {batch.num_lookups:,} lookups",
        "per timed batch: write a "
        f"{flush_bytes / 2**20:.0f} MiB buffer (> L2 {gpu.l2.size_bytes / 2**20:.0f} MiB), "
        "synchronize, then CUDA events around the tables' EmbeddingBag(mode='sum') forwards "
        "(one kernel per table, one stream)",
        f"repeats: {args.repeats} timed batches after {args.warmup} warm-up batches; the median "
        "is reported",
        f"ncu: {ncu_command(args)}",
    ]


def measure(args, spec, batch, gpu) -> dict:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --dry-run on a machine without a GPU")
    dev = torch.device("cuda")
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    bags = []
    for table, lookups in zip(spec.tables, batch.tables, strict=True):
        bag = torch.nn.EmbeddingBag(table.rows, table.dim, mode="sum").to(dev)
        with torch.no_grad():
            bag.weight.copy_(torch.rand(table.rows, table.dim, generator=gen))
        idx = torch.as_tensor(lookups.indices, dtype=torch.int64, device=dev)
        off = torch.as_tensor(lookups.offsets[:-1], dtype=torch.int64, device=dev)
        bags.append((bag, idx, off))
    flush = torch.empty(2 * gpu.l2.size_bytes // 4, dtype=torch.float32, device=dev)
    times_ms = []
    with torch.no_grad():
        for i in range(args.warmup + args.repeats):
            flush.fill_(float(i))  # evicts the L2: the next batch starts cold, as the model's
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for bag, idx, off in bags:
                bag(idx, off)
            end.record()
            torch.cuda.synchronize()
            if i >= args.warmup:
                times_ms.append(start.elapsed_time(end))
    times_ms.sort()
    return {
        "gpu_name": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "median_us": times_ms[len(times_ms) // 2] * 1e3,
        "min_us": times_ms[0] * 1e3,
        "max_us": times_ms[-1] * 1e3,
        "repeats": args.repeats,
    }


def record(args, measured: dict, model_us: float | None) -> Path:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    day = datetime.date.today().isoformat()
    path = DATA_DIR / f"measured-{args.arch}-{args.reuse}-b{args.batch}-{day}.json"
    entry = dict(
        measured,
        date=day,
        arch_preset=args.arch,
        workload=args.workload,
        reuse=args.reuse,
        batch=args.batch,
        seed=args.seed,
        model_baseline_us=model_us,
        method="benchmarks/gpu_validate.py: torch EmbeddingBag(sum), CUDA events, L2 flushed",
    )
    # through nmp.fileio: synced, renamed into place, and never onto a link or a device
    atomic_write_text(path, json.dumps(entry, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="a100-80gb")
    parser.add_argument("--workload", default="gpu-micro24")
    parser.add_argument("--reuse", default="high", choices=["high", "medium", "low", "random"])
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="CPU only: check and print plan")
    parser.add_argument("--skip-model", action="store_true", help="do not run the model")
    parser.add_argument("--record", action="store_true", help="save the measurement")
    args = parser.parse_args(argv)

    try:
        spec, batch, gpu, model = build(args)
    except NmpError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    for line in plan_lines(args, spec, batch, gpu):
        print(line)
    model_us = model.latency_ns / 1e3 if model is not None else None
    if model_us is not None:
        b = model.breakdown
        regs = b["kernel"]["regs_per_thread"]
        print(
            f"model (nmp run, baseline): {model_us:,.1f} us; regs {regs}, "
            f"occupancy {b['kernel']['occupancy']:.0%}, L1 hit {b['l1_hit_rate']:.3f}, "
            f"L2 hit {b['l2_hit_rate']:.3f}, DRAM {b['hbm_bytes'] / 1e6:,.1f} MB"
        )
    if args.dry_run:
        print("dry run: shapes checked, nothing measured")
        return 0
    measured = measure(args, spec, batch, gpu)
    print(
        f"measured on {measured['gpu_name']}: median {measured['median_us']:,.1f} us "
        f"(min {measured['min_us']:,.1f}, max {measured['max_us']:,.1f}, {args.repeats} batches)"
    )
    if model_us is not None:
        print(f"model / measured = {model_us / measured['median_us']:.3f}")
    if args.record:
        print(f"recorded in {record(args, measured, model_us)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
