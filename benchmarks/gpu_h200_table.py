"""The model's figures on the points issue #37 checks, as one table (the closing note's table).

For a GPU preset (default ``h200``): gpu-micro24 at each reuse level (high, medium, low, random)
with every kernel variant and its gain over the stock kernel, dlrm-benchmark, and the batch
curve 256..8192 (gpu-micro24 at medium reuse, the baseline kernel), with whether the curve is
monotone. Each figure is what ``nmp run --arch ARCH --workload W --set workload.reuse=R --set
arch.variant=V`` prints as its latency; ``pinning-window`` is the real kernels' variant of that name
(``gpu_kernels.py``): ``--set arch.variant=pinning --set arch.pinning.mechanism=access_window``,
the access-policy window over each table's hot rows laid out first; ``layout-hot-first`` (the last
column) is its control: ``--set arch.layout=hot_first``, the same layout with no window (the
window's own effect is pinning-window against it; docs/gpu-model.md, "The window's control").

    python benchmarks/gpu_h200_table.py [--arch h200] [--tables 12] [--json out.json]
    python benchmarks/gpu_h200_table.py --decompose [--reuse medium] [--tables 1]

``--tables N`` models the first N tables only (faster; the gains and the curve's shape keep,
the times scale); the full stage is the default.

``--decompose`` splits the occupancy variant's gain (gpu-micro24, batch 2048): the occupancy
kernel held to the stock kernel's blocks per SM (what the recompiled kernel itself changes), one
full wave of the stock kernel alone (the batch whose chunks fill its slots exactly: what the
first wave costs), the rest of the stock time (what the partial last wave adds), and the
one-wave occupancy kernel (what more warps in flight in one wave change).
"""

from __future__ import annotations

import argparse
import json
import sys

REUSE = ("high", "medium", "low", "random")
VARIANTS = ("baseline", "occupancy", "prefetch", "pinning", "pinning-window", "layout-hot-first")
BATCHES = (256, 512, 1024, 2048, 4096, 8192)


def arch_overrides(arch: str, variant: str) -> dict:
    """A model variant as is; any other name is a real kernel variant (nmp.gpu.kernels_real):
    the model variant and overrides that describe it."""
    from nmp.gpu import load_gpu
    from nmp.gpu.kernels_real import real_variants
    from nmp.gpu.variants import GPU_VARIANTS

    if variant in GPU_VARIANTS:
        return {"variant": variant}
    real = real_variants(load_gpu(arch))[variant]
    return {"variant": real.model_variant, **real.model_overrides}


def stage_us(arch: str, workload: str, wl: dict, variant: str = "baseline") -> float:
    from nmp.gpu.point import run_design_point

    over = {"arch": arch_overrides(arch, variant), "workload": wl}
    return run_design_point(arch, workload, overrides=over).latency_ns / 1e3


def figures(arch: str, tables: int | None = None) -> dict:
    """Every figure of the table: {"reuse": {R: {V: us}}, "dlrm": us, "batch": {B: us}}."""
    limit = {"num_tables": tables} if tables else {}
    out: dict = {"arch": arch, "tables": tables, "reuse": {}, "batch": {}}
    for r in REUSE:
        out["reuse"][r] = {
            v: stage_us(arch, "gpu-micro24", {"reuse": r, **limit}, v) for v in VARIANTS
        }
    out["dlrm"] = stage_us(arch, "dlrm-benchmark", dict(limit))
    for b in BATCHES:
        out["batch"][b] = stage_us(arch, "gpu-micro24", {"reuse": "medium", "batch": b, **limit})
    return out


def decomposition(arch: str, reuse: str, tables: int | None = 1) -> dict[str, float]:
    """The occupancy gain's parts (us, gpu-micro24, batch 2048): see the module docstring."""
    from nmp.gpu import load_gpu
    from nmp.gpu.kernel import kernel_config
    from nmp.gpu.point import run_design_point

    gpu = load_gpu(arch)
    stock = kernel_config(gpu)
    chunks_per_bag = -(-128 // gpu.kernel.block_x)  # gpu-micro24: dim 128
    full_wave_batch = gpu.sm.count * stock.blocks_per_sm * gpu.kernel.block_y // chunks_per_bag
    wl = {"reuse": reuse, **({"num_tables": tables} if tables else {})}

    def us(arch_over: dict, batch: int = 2048) -> float:
        over = {"arch": arch_over, "workload": {**wl, "batch": batch}}
        return run_design_point(arch, "gpu-micro24", overrides=over).latency_ns / 1e3

    base = us({"variant": "baseline"})
    full = us({"variant": "baseline"}, full_wave_batch)
    return {
        "baseline": base,
        "occupancy": us({"variant": "occupancy"}),
        "occupancy_at_stock_blocks_per_sm": us(
            {"variant": "occupancy", "sm.max_blocks": stock.blocks_per_sm}
        ),
        "stock_full_wave_alone": full,
        "full_wave_batch": full_wave_batch,
        "stock_partial_wave_adds": base - full,
    }


def table_lines(fig: dict) -> list[str]:
    lines = [f"{fig['arch']}, gpu-micro24 (us; gain = baseline / variant - 1)"]
    lines.append(f"{'reuse':<8}" + "".join(f"{v:>18}" for v in VARIANTS))
    for r, row in fig["reuse"].items():
        base = row["baseline"]
        cells = [f"{base:>18.1f}"] + [
            f"{row[v]:>9.1f} {base / row[v] - 1:>+7.1%}" for v in VARIANTS[1:]
        ]
        lines.append(f"{r:<8}" + "".join(cells))
    lines.append(f"dlrm-benchmark baseline: {fig['dlrm']:.1f} us")
    curve = [fig["batch"][b] for b in fig["batch"]]
    monotone = all(a < b for a, b in zip(curve, curve[1:], strict=False))
    lines.append(
        "batch "
        + " / ".join(str(b) for b in fig["batch"])
        + " (medium): "
        + " / ".join(f"{t:.1f}" for t in curve)
        + f" us ({'monotone' if monotone else 'NOT monotone'})"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--tables", type=int, default=None, help="model the first N tables")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument("--decompose", action="store_true", help="split the occupancy gain")
    parser.add_argument("--reuse", default="medium", choices=REUSE, help="with --decompose")
    args = parser.parse_args(argv)
    if args.decompose:
        parts = decomposition(args.arch, args.reuse, args.tables or 1)
        for key, value in parts.items():
            print(f"{key:<34} {value:>9.1f}")
        return 0
    fig = figures(args.arch, args.tables)
    print("\n".join(table_lines(fig)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(fig, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
