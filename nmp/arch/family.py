"""The NMP design family: memory-side architectures (``models/arch/``) on a DRAM memory."""

from __future__ import annotations

from typing import Any

from nmp.arch.presets import load_arch_spec
from nmp.config import apply_overrides
from nmp.design import FAMILIES
from nmp.results import PointResult


class NmpFamily:
    """Host CPU and near-memory designs: rank, bank-group and bank units (:mod:`nmp.arch`)."""

    name = "nmp"
    label = "NMP"
    description = "memory-side designs (host CPU, rank / bank-group / bank NMP) on a DRAM preset"
    preset_kind = "arch"
    own_memory = False
    loads_files = True

    def load_spec(self, name: str, memory: str | None = None) -> Any:
        spec = load_arch_spec(name)
        if memory:
            spec = apply_overrides(spec, {"memory.preset": memory}, root="arch")
        return spec

    def check(self, spec: Any, memory_spec: Any) -> None:
        """Build the design on its memory, which checks what needs both (a unit count that does
        not divide the banks of its level...)."""
        # the model's modules compile with numba and import scipy: loaded only when used
        from nmp.arch.architecture import Architecture

        Architecture(spec, memory_spec)

    def run_point(
        self,
        arch: str,
        workload: str,
        memory: str | None,
        overrides: dict[str, dict[str, Any]],
        seed: int | None,
    ) -> PointResult:
        from nmp.arch.point import run_design_point  # numba, scipy: loaded only when used

        return run_design_point(arch, workload, memory=memory, overrides=overrides, seed=seed)


FAMILY = FAMILIES.register(NmpFamily())
