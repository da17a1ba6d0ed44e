"""One design point: an architecture (near-memory design or GPU) running a workload.

The dispatch lives here, above both ``nmp.arch`` and ``nmp.gpu``: a name that is a GPU preset
runs the GPU model, any other name an NMP architecture preset. Both return a
:class:`nmp.results.PointResult` with the same JSON keys.
"""

from __future__ import annotations

from typing import Any

from nmp.config import apply_overrides, preset_names, split_overrides
from nmp.errors import SpecError
from nmp.results import PointResult

OVERRIDE_ROOTS = ("arch", "workload", "memory")


def is_gpu(arch: str) -> bool:
    return arch in preset_names("gpu")


def check_arch_name(arch: str) -> None:
    """An ``--arch`` that is neither an NMP preset nor a GPU preset (nor a TOML file) raises an
    error listing both kinds: ``--arch`` takes either."""
    known = set(preset_names("arch") + preset_names("gpu"))
    if arch.endswith(".toml") or arch in known:
        return
    raise SpecError(
        f"unknown architecture '{arch}' (NMP presets: {', '.join(preset_names('arch'))}; "
        f"GPU presets: {', '.join(preset_names('gpu'))})"
    )


def run_point(
    arch: str,
    workload: str,
    memory: str | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    seed: int | None = None,
) -> PointResult:
    """Evaluate one design point. ``overrides`` maps dotted paths rooted at ``arch``,
    ``workload`` or ``memory`` to values (``{"arch.variant": "combined"}``)."""
    grouped = split_overrides(overrides or {}, OVERRIDE_ROOTS)
    check_arch_name(arch)
    if is_gpu(arch):
        from nmp.gpu import run_design_point
    else:
        from nmp.arch import run_design_point
    return run_design_point(arch, workload, memory=memory, overrides=grouped, seed=seed)


def load_design_spec(arch: str, memory: str | None = None) -> Any:
    """The spec of architecture preset ``arch`` (a ``GpuSpec`` for a GPU preset, else an
    ``ArchSpec``) with memory preset ``memory``, if given, replacing the design's own."""
    if is_gpu(arch):
        from nmp.gpu.spec import load_gpu

        gpu = load_gpu(arch)
        if memory and memory.lower() != gpu.hbm.memory_preset:
            raise SpecError(
                f"the GPU's HBM is part of the preset '{arch}' (derived from "
                f"{gpu.hbm.memory_preset}): it cannot run on memory '{memory}'"
            )
        return gpu
    from nmp.arch.spec import load_arch_spec

    spec = load_arch_spec(arch)
    if memory:
        spec = apply_overrides(spec, {"memory.preset": memory}, root="arch")
    return spec


def design_memory_args(spec: Any) -> tuple[str, dict[str, Any]] | None:
    """(memory preset, ``load_memory`` keyword arguments) of a design spec; None for a design
    without a DRAM spec of its own (a GPU: its HBM is described by the GPU spec)."""
    setup: Any = getattr(spec, "memory", None)
    preset = getattr(setup, "preset", None)
    if not isinstance(preset, str):
        return None
    return preset, {"channels": setup.channels, "ranks": setup.ranks}


def check_design(spec: Any, memory_spec: Any) -> None:
    """Build an NMP design on its memory, which checks what needs both (a unit count that does
    not divide the banks of its level...); a GPU spec is checked on load."""
    if memory_spec is None:
        return
    from nmp.arch.architecture import Architecture

    Architecture(spec, memory_spec)
