"""One design point: an architecture (near-memory design or GPU) running a workload.

The dispatch lives here, above both ``nmp.arch`` and ``nmp.gpu``: the design family whose
presets include the name (:func:`nmp.design.family_of`) runs it. Every family returns a
:class:`nmp.results.PointResult` with the same JSON keys.
"""

from __future__ import annotations

from typing import Any

from nmp.config import split_overrides
from nmp.design import family_of
from nmp.results import PointResult

OVERRIDE_ROOTS = ("arch", "workload", "memory")


def own_memory(arch: str) -> bool:
    """Whether design ``arch``'s memory is part of its preset (a GPU's HBM): such a design is
    not crossed with a sweep's memories and has no DRAM spec to show."""
    return family_of(arch).own_memory


def check_arch_name(arch: str) -> None:
    """An ``--arch`` that no design family has a preset of (nor a TOML file) raises an error
    listing every family's presets: ``--arch`` takes any."""
    family_of(arch)


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
    return family_of(arch).run_point(arch, workload, memory, grouped, seed)


def load_design_spec(arch: str, memory: str | None = None) -> Any:
    """The spec of architecture preset ``arch`` (a ``GpuSpec`` for a GPU preset, else an
    ``ArchSpec``) with memory preset ``memory``, if given, replacing the design's own."""
    return family_of(arch).load_spec(arch, memory)


def design_memory_args(spec: Any) -> tuple[str, dict[str, Any]] | None:
    """(memory preset, ``load_memory`` keyword arguments) of a design spec; None for a design
    without a DRAM spec of its own (a GPU: its HBM is described by the GPU spec)."""
    setup: Any = getattr(spec, "memory", None)
    preset = getattr(setup, "preset", None)
    if not isinstance(preset, str):
        return None
    return preset, {"channels": setup.channels, "ranks": setup.ranks}


def check_design(arch: str, spec: Any, memory_spec: Any) -> None:
    """Build design ``arch`` (its spec, possibly overridden) on its memory, which checks what
    needs both (a unit count that does not divide the banks of its level...)."""
    family_of(arch).check(spec, memory_spec)
