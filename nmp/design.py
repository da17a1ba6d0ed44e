"""Design families: what a sweep or ``nmp run`` asks of a kind of design, whatever it is.

A design family (NMP architectures in :mod:`nmp.arch.family`, GPUs in :mod:`nmp.gpu.family`)
owns a kind of preset (``models/<preset_kind>/``) and provides the same few operations: load
a preset's spec, check it on its memory, run one design point, list its presets for
``nmp models``. :func:`family_of` finds the family of an ``--arch`` name, so that no stage tests
which kind a design is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from nmp.config import KeyedValueError, preset_dir, preset_names
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


@dataclass(frozen=True)
class KeyAssumption:
    """An assumption a design's standing rests on, declared by its preset (``[[key_assumptions]]``)
    so that a report can say what decides a result and test it: ``set`` holds the overrides that
    replace the assumption by its alternative (``--set`` paths rooted at ``arch``, ``workload``
    or ``memory``), ``evidence`` a dotted breakdown entry that shows how much the assumption is
    used at a point (``llc.hit_rate``), ``source`` where the nominal value comes from.
    The evaluator re-runs a point under ``set`` (:mod:`nmp.evaluate.explain`); which of a
    design's assumptions decides its standing is measured there, not declared."""

    name: str
    set: dict[str, Any] = field(default_factory=dict)
    evidence: str = ""
    source: str = ""

    def validate(self) -> None:
        if not self.name.strip():
            raise KeyedValueError("name", "must be a non-empty string")
        if not self.set:
            raise KeyedValueError("set", "must hold at least one override (dotted path = value)")
        for path in self.set:
            root, _, rest = path.partition(".")
            if root not in ("arch", "workload", "memory") or not rest:
                raise KeyedValueError(
                    f"set.{path}", "an override starts with arch., workload. or memory."
                )


#: The design families; each module below registers its family when imported.
FAMILIES: Registry[DesignFamily] = Registry(
    "design family",
    package="nmp",
    marker=r"^\w+ = FAMILIES\.register\(",
    # listed in module order, whichever a lookup imported first (family_of tries them in turn)
    order=lambda family: type(family).__module__,
)


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
        _refuse_preset_file_of_another_family(arch, families)
        for family in families:
            if family.loads_files:
                return family
    known = "; ".join(f"{f.label} presets: {', '.join(family_presets(f))}" for f in families)
    raise SpecError(f"unknown architecture '{arch}' ({known})")


def _refuse_preset_file_of_another_family(path: str, families: list[DesignFamily]) -> None:
    """A preset's own file of a family that reads no files (``models/gpu/a100-80gb.toml``)
    was read as an NMP design and refused by its first foreign key."""
    from pathlib import Path

    folder = Path(path).resolve().parent
    for family in families:
        if not family.loads_files and folder == preset_dir(family.preset_kind).resolve():
            name = Path(path).stem
            raise SpecError(
                f"a {family.label} preset's file: {family.label} designs are named by preset "
                f"(--arch {name}), not read from files",
                file=path,
            )


__all__ = ["FAMILIES", "DesignFamily", "KeyAssumption", "family_of", "family_presets"]
