"""Design families: what a sweep or ``nmp run`` asks of a kind of design, whatever it is.

A design family (NMP architectures in :mod:`nmp.arch.family`, GPUs in :mod:`nmp.gpu.family`)
owns a kind of preset (``models/<preset_kind>/``) and provides the same few operations: load
a preset's spec, check it on its memory, run one design point, list its presets for
``nmp models``. :func:`family_of` finds the family of an ``--arch`` name, so that no stage tests
which kind a design is.
"""

from __future__ import annotations

from typing import Any, Protocol

from nmp.config import preset_names
from nmp.errors import SpecError
from nmp.registry import Registry
from nmp.results import PointResult


class DesignFamily(Protocol):
    name: str  # the family's registry name ("nmp", "gpu")
    label: str  # how errors and listings name its presets ("NMP", "GPU")
    description: str
    preset_kind: str  # its presets live in models/<preset_kind>/
    own_memory: bool  # its memory is part of the preset (a GPU's HBM): not crossed with --memory
    loads_files: bool  # an --arch that is a TOML path is a design of this family

    def load_spec(self, name: str, memory: str | None = None) -> Any:
        """The spec of preset ``name`` with memory preset ``memory`` replacing its own."""
        ...

    def check(self, spec: Any, memory_spec: Any) -> None:
        """Raise SpecError if the design cannot be built on that memory (None: its own)."""
        ...

    def run_point(
        self,
        arch: str,
        workload: str,
        memory: str | None,
        overrides: dict[str, dict[str, Any]],
        seed: int | None,
    ) -> PointResult:
        """One design point (``overrides`` grouped by root: arch, workload, memory)."""
        ...

    def catalog_rows(self) -> list[dict[str, Any]]:
        """One row per preset for ``nmp models``."""
        ...


#: The design families; each module below registers its family when imported.
FAMILIES: Registry[DesignFamily] = Registry("design family", ("nmp.arch.family", "nmp.gpu.family"))


def family_presets(family: DesignFamily) -> list[str]:
    return preset_names(family.preset_kind)


def family_of(arch: str) -> DesignFamily:
    """The family whose presets include ``arch`` (a TOML path: the family that loads files); a
    SpecError listing every family's presets when none does."""
    families = [family for _, family in FAMILIES.items()]
    for family in families:
        if arch in family_presets(family):
            return family
    if arch.endswith(".toml"):
        for family in families:
            if family.loads_files:
                return family
    known = "; ".join(f"{f.label} presets: {', '.join(family_presets(f))}" for f in families)
    raise SpecError(f"unknown architecture '{arch}' ({known})")


__all__ = ["FAMILIES", "DesignFamily", "family_of", "family_presets"]
