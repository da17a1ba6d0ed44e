"""The MICRO'24 kernels for real: stock EmbeddingBag and its variants on a CUDA GPU, measured
beside the GPU model (nmp.gpu.kernels_real).

For one point (GPU preset, workload, reuse, batch, seed) it rebuilds the batch ``nmp run``
models, runs every variant (stock torch kernel, register cap, software prefetch, evict_last
pinning pre-kernel, access-policy window over the hot rows laid out first), checks each output
bit for bit against ``torch.nn.EmbeddingBag``, times whole batches with a cold L2 (CUDA events,
median), and prints measured beside modeled per variant with the gains over the stock kernel.

    python benchmarks/gpu_kernels.py --arch h200 --reuse high [--batch 2048] [--record]
    python benchmarks/gpu_kernels.py --dry-run     # on CPU: builds and checks every launch

``--record`` writes the measurement (GPU name, driver, torch/CUDA/CuPy versions, date) into
``nmp/gpu/data/measured-kernels-*.json``, which ``nmp validate`` (group gpu.real) reads. Needs the
``[gpu]`` extra (CuPy) on the GPU machine; the dry run needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import numpy as np

from nmp.errors import NmpError


def modeled(plan) -> dict[str, float]:
    """The model's stage time (us) for every variant of the plan (current model)."""
    from nmp.gpu.compare import model_us

    rec = {
        "arch_preset": plan.arch,
        "workload": plan.workload,
        "workload_overrides": plan.overrides,
        "seed": plan.seed,
    }
    return {
        name: model_us(
            rec, {"model_variant": v.model_variant, "model_overrides": v.model_overrides}
        )
        for name, v in plan.variants.items()
    }


def dry_run_checks(plan) -> list[str]:
    """CPU checks of every launch and of the kernels' bag convention on a random table."""
    from nmp.gpu.kernels_real import KERNEL_SOURCE, check_plan, reference_sums

    lines = check_plan(plan)
    # The first bags of table 0 over a table of just the rows they read (renumbered): the same
    # bag convention, without drawing a whole 500K-row table on the CPU.
    full = plan.tables[0]
    bags = min(4, full.bags)
    rows, local = np.unique(full.indices[: full.offsets[bags]], return_inverse=True)
    tb = replace(full, rows=rows.shape[0], indices=local, offsets=full.offsets[: bags + 1])
    rng = np.random.default_rng(plan.seed)
    weight = rng.random((tb.rows, tb.dim), dtype=np.float32)
    sums = reference_sums(tb, weight)
    want = np.stack(
        [weight[tb.indices[tb.offsets[b] : tb.offsets[b + 1]]].astype(np.float64).sum(0)
         for b in range(sums.shape[0])]
    )  # fmt: skip
    if not np.allclose(sums, want, rtol=1e-5):
        raise NmpError("the kernels' bag convention does not give each bag its own lookups")
    if not np.array_equal(window_layout_sums(tb, weight), sums):
        raise NmpError("the hot-first layout changes the pooled output (not bit-identical)")
    for name in ("embedding_bag_sum", "pin_rows_evict_last", "prefetch.global.L2::evict_last"):
        if name not in KERNEL_SOURCE:
            raise NmpError(f"kernel source lacks {name}")
    return lines


def window_layout_sums(tb, weight: np.ndarray) -> np.ndarray:
    """The same bags on the table laid out hot rows first (its most read half first, hottest
    first), with the indices remapped, as the window variant runs them: bit-identical to the
    unpermuted sums when every lookup still reads the same row values in the same order."""
    from nmp.gpu.hot_layout import hot_first_order, remap_indices
    from nmp.gpu.kernels_real import reference_sums

    counts = np.bincount(tb.indices, minlength=tb.rows)
    hot = np.argsort(-counts, kind="stable")[: max(1, tb.rows // 2)]
    order = hot_first_order(tb.rows, hot)
    moved = replace(tb, indices=remap_indices(tb.indices, order), hot=hot)
    return reference_sums(moved, weight[order])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--workload", default="gpu-micro24")
    parser.add_argument("--reuse", default=None, choices=["high", "medium", "low", "random"])
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", default="", help="comma-separated (default: all)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="CPU only: build and check")
    parser.add_argument("--skip-model", action="store_true", help="do not run the model")
    parser.add_argument("--record", action="store_true", help="save the measurement")
    args = parser.parse_args(argv)

    from nmp.gpu.kernels_real import build_plan

    overrides = {k: v for k, v in (("reuse", args.reuse), ("batch", args.batch)) if v is not None}
    try:
        plan = build_plan(
            args.arch,
            args.workload,
            overrides,
            args.seed,
            [v for v in args.variants.split(",") if v] or None,
        )
        lines = dry_run_checks(plan)
    except NmpError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    g = plan.gpu
    lookups = sum(tb.indices.shape[0] for tb in plan.tables)
    print(
        f"GPU preset {g.name}; workload {plan.workload} {overrides or '(defaults)'}, seed "
        f"{plan.seed}: {len(plan.tables)} tables, {lookups:,} lookups; L2 flush buffer "
        f"{2 * g.l2.size_bytes / 2**20:.0f} MiB; persisting set-aside {plan.set_aside_bytes:,} B"
    )
    for line in lines:
        print("  " + line)
    for name, v in plan.variants.items():
        extra = f" {v.model_overrides}" if v.model_overrides else ""
        print(f"  variant {name}: {v.description} (model: variant {v.model_variant}{extra})")
    model = {} if args.skip_model else modeled(plan)
    if model:
        base = model.get("baseline")
        for name, us in model.items():
            gain = f", gain {base / us - 1:+.1%}" if base and name != "baseline" else ""
            print(f"  model {name}: {us:,.1f} us{gain}")
    if args.dry_run:
        print("dry run: every launch built and checked on the CPU, nothing measured")
        return 0
    from nmp.gpu.compare import compare_record, table_lines
    from nmp.gpu.kernels_real import measure, record

    measured = measure(plan, repeats=args.repeats, warmup=args.warmup)
    print(
        f"measured on {measured['gpu_name']} (driver {measured['driver']}, "
        f"torch {measured['torch']})"
    )
    rec = {
        "arch_preset": plan.arch,
        "workload": plan.workload,
        "workload_overrides": plan.overrides,
        "seed": plan.seed,
        **measured,
    }
    if model:
        for line in table_lines(compare_record("this run", rec)):
            print(line)
    if args.record:
        print(f"recorded in {record(plan, measured, model)}")
    return 0 if all(v["bit_exact"] for v in measured["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
