"""One design point: an architecture (near-memory design or GPU) running a workload.

The dispatch lives here, above both ``nmp.arch`` and ``nmp.gpu``: a name that is a GPU preset
runs the GPU model, any other name an NMP architecture preset. Both return a
:class:`nmp.results.PointResult` with the same JSON keys.
"""

from __future__ import annotations

from typing import Any

from nmp.config import preset_names, split_overrides
from nmp.results import PointResult

OVERRIDE_ROOTS = ("arch", "workload", "memory")


def is_gpu(arch: str) -> bool:
    return arch in preset_names("gpu")


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
    if is_gpu(arch):
        from nmp.gpu import run_design_point
    else:
        from nmp.arch import run_design_point
    return run_design_point(arch, workload, memory=memory, overrides=grouped, seed=seed)
