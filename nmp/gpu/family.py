"""The GPU design family: the embedding stage on a GPU (``models/gpu/``), HBM included."""

from __future__ import annotations

from typing import Any

from nmp.design import FAMILIES
from nmp.errors import SpecError
from nmp.gpu.spec import load_gpu
from nmp.results import PointResult


class GpuFamily:
    """GPUs (A100, H100) running the EmbeddingBag kernel and its variants (:mod:`nmp.gpu`)."""

    name = "gpu"
    label = "GPU"
    description = "GPUs running the EmbeddingBag kernel, their HBM part of the preset"
    preset_kind = "gpu"
    own_memory = True
    loads_files = False

    def load_spec(self, name: str, memory: str | None = None) -> Any:
        spec = load_gpu(name)
        if memory and memory.lower() != spec.hbm.memory_preset:
            raise SpecError(
                f"the GPU's HBM is part of the preset '{name}' (derived from "
                f"{spec.hbm.memory_preset}): it cannot run on memory '{memory}'"
            )
        return spec

    def check(self, spec: Any, memory_spec: Any) -> None:
        """Nothing beyond the spec: a GPU spec is checked on load."""

    def run_point(
        self,
        arch: str,
        workload: str,
        memory: str | None,
        overrides: dict[str, dict[str, Any]],
        seed: int | None,
    ) -> PointResult:
        from nmp.gpu.point import run_design_point  # the DRAM engine (numba): only when used

        return run_design_point(arch, workload, memory=memory, overrides=overrides, seed=seed)


FAMILY = FAMILIES.register(GpuFamily())
