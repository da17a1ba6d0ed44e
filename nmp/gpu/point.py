"""``nmp run --arch a100-80gb ...``: one GPU design point with the JSON keys of every design."""

from __future__ import annotations

from typing import Any

from nmp.errors import SpecError
from nmp.gpu.model import embedding_stage
from nmp.gpu.spec import load_gpu
from nmp.results import PointResult
from nmp.workload import generate_batch, load_workload
from nmp.workload.spec import tables_source

# The pinned set is profiled on another batch of the same workload (an offline profile), drawn
# with this seed offset: profiling the very batch being timed would pre-load exactly the rows it
# reuses, a gain no deployment gets (and a fake gain even on uniform-random lookups).
PROFILE_SEED_OFFSET = 1_000_003


def run_design_point(
    arch: str,
    workload: str,
    memory: str | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
) -> PointResult:
    """Model the embedding stage of ``workload`` on GPU preset ``arch``.

    ``overrides`` = {"arch": {...}, "workload": {...}, "memory": {...}} (dotted paths under each
    root); ``arch.variant`` picks baseline / occupancy / prefetch / pinning / combined. A GPU's
    HBM is part of its preset: ``memory`` may only name the preset its HBM derives from, and
    memory overrides are refused (change ``arch.hbm.*`` instead).
    """
    overrides = overrides or {}
    gpu = load_gpu(arch, overrides.get("arch") or {})
    if memory is not None and memory.lower() != gpu.hbm.memory_preset:
        raise SpecError(
            f"the GPU's HBM is part of the preset '{gpu.name}' (derived from "
            f"{gpu.hbm.memory_preset}); set arch.hbm.* instead of --memory {memory}",
            key="memory",
        )
    if overrides.get("memory"):
        key = next(iter(overrides["memory"]))
        raise SpecError(
            "memory overrides do not apply to a GPU; use arch.hbm.* (e.g. arch.hbm.data_rate_gbps)",
            key=f"memory.{key}",
        )
    wspec = load_workload(workload, overrides.get("workload") or {})
    if wspec.bytes_ > gpu.hbm.capacity_gib * 2**30:  # the model reads every row from HBM
        file, where = tables_source(workload, overrides.get("workload"))
        raise SpecError(
            f"the tables ({wspec.bytes_ / 2**30:.2f} GiB) do not fit in {gpu.name}'s HBM "
            f"({gpu.hbm.capacity_gib} GiB; nmp shard places tables across HBM and host)",
            file=file,
            key=where,
        )
    batch = generate_batch(wspec, seed=seed)
    elem_bytes = [t.element.bytes for t in wspec.tables]
    profile = None
    if gpu.needs_profile:  # the hot rows to pin or lay out first
        base_seed = wspec.seed if seed is None else seed
        profile = generate_batch(wspec, seed=base_seed + PROFILE_SEED_OFFSET)
    op = embedding_stage(gpu, batch, elem_bytes=elem_bytes, pin_profile=profile)
    lookups = batch.num_lookups
    energy = op.total_energy_pj
    breakdown = dict(op.breakdown)
    breakdown["energy_pj"] = op.energy_pj
    breakdown["lookups"] = lookups
    return PointResult(
        arch=gpu.name,
        workload=wspec.name,
        memory=f"{gpu.hbm.standard}-{int(round(gpu.hbm.data_rate_gbps * 1000))}",
        latency_ns=op.t_ns,
        lookups_per_s=lookups / op.t_ns * 1e9 if op.t_ns > 0 else 0.0,
        energy_pj_per_lookup=energy / lookups if lookups else 0.0,
        area_mm2=gpu.die_area_mm2,
        breakdown=breakdown,
        extra={"variant": gpu.variant, "seed": wspec.seed if seed is None else seed},
    )
