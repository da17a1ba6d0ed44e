"""nmp.gpu: the DLRM embedding stage on a GPU (A100, H100, H200).

SMs and warps running the stock PyTorch EmbeddingBag kernel (occupancy from registers and
spills, memory-level parallelism from loads in flight bounded by the L1's miss entries), sectored
L1/L2 (per partition) simulated on the real access stream, L2 pinning as a persisting set-aside,
software prefetch, and HBM through the nmp.memory DRAM engine, whose queueing lengthens misses as
utilization rises (each kernel's time is the fixed point of Little's law on that loaded memory).
Presets in ``models/gpu/`` (``h200``'s values measured on one: docs/gpu-model.md); the same
kernels for real on a CUDA GPU: :mod:`nmp.gpu.kernels_real`, ``benchmarks/gpu_kernels.py``;
studies ``workloads/sweeps/papers/gpu-*.toml``; claims
``nmp/papers/micro24/claims.toml``;
``nmp run --arch a100-80gb --workload gpu-micro24 --set arch.variant=combined``.
"""

from __future__ import annotations

from typing import Any

from nmp.config import PRESET_CATALOGS
from nmp.errors import SpecError
from nmp.gpu.kernel import kernel_config
from nmp.gpu.spec import VARIANTS, GpuSpec, gpu_names, load_gpu


def run_design_point(arch, workload, memory=None, overrides=None, seed=None):
    """See :func:`nmp.gpu.point.run_design_point`."""
    # numba: loaded on use (start-up time)
    from nmp.gpu.point import run_design_point as _run

    return _run(arch, workload, memory=memory, overrides=overrides, seed=seed)


@PRESET_CATALOGS.register(name="gpu")
def catalog_rows() -> list[dict[str, Any]]:
    """One row per GPU preset for ``nmp models``."""
    rows: list[dict[str, Any]] = []
    for name in gpu_names():
        try:
            g = load_gpu(name)
        except SpecError as exc:
            rows.append({"name": name, "summary": f"invalid: {exc}"})
            continue
        base = kernel_config(g)
        rows.append(
            {
                "name": name,
                "SMs": g.sm.count,
                "L2_MB": round(g.l2.size_bytes / 2**20, 1),
                "HBM": f"{g.hbm.standard} x{g.hbm.channels}ch",
                "peak_GB/s": g.hbm.peak_bandwidth_gbps,
                "die_mm2": g.die_area_mm2,
                "summary": (
                    f"{g.description}; stock EmbeddingBag {base.regs_per_thread} registers "
                    f"({g.kernel.regs_build or 'no build named'}), occupancy {base.occupancy:.0%}; "
                    f"variants {', '.join(VARIANTS)}"
                ),
            }
        )
    return rows


__all__ = ["VARIANTS", "GpuSpec", "catalog_rows", "gpu_names", "load_gpu", "run_design_point"]
