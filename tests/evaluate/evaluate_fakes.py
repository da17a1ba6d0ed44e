"""A deterministic fake design point and toy specs, to test the sweep machinery apart from the
models (the real models are exercised in test_real.py)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from nmp.config import KeyedValueError
from nmp.evaluate.sweep import Point, parse_sweep


@dataclass(frozen=True)
class ToyBank:
    units: int = 4

    def validate(self) -> None:
        if self.units not in (1, 2, 4, 8, 16):
            raise KeyedValueError("units", "must be a power of two up to 16")


@dataclass(frozen=True)
class ToyArch:
    name: str
    bank: ToyBank = field(default_factory=ToyBank)
    speed: float = 1.0


@dataclass(frozen=True)
class ToyWorkload:
    name: str
    batch: int = 32
    dim: int = 64


class ToyProvider:
    """Presets: archs a/b/c, workloads w1/w2; unknown names raise like the real loaders."""

    archs = {"a": 1.0, "b": 2.0, "c": 3.0}
    workloads = ("w1", "w2")

    def workload(self, name: str) -> Any:
        from nmp.errors import SpecError

        if name not in self.workloads:
            raise SpecError(f"unknown workload preset '{name}'")
        return ToyWorkload(name)

    def memory(self, name: str) -> Any:
        from nmp.errors import SpecError

        raise SpecError(f"unknown memory preset '{name}'")

    def arch(self, name: str, memory: str | None) -> Any:
        from nmp.errors import SpecError

        if name not in self.archs:
            raise SpecError(f"unknown arch preset '{name}'")
        return ToyArch(name, speed=self.archs[name])

    def memory_for(self, arch_spec: Any) -> Any:
        return None

    def own_memory(self, name: str) -> bool:
        return False

    def check_design(self, arch: str, arch_spec: Any, memory_spec: Any) -> None:
        from nmp.errors import SpecError

        if arch_spec.name == "c" and arch_spec.bank.units == 1:
            raise SpecError("1 unit cannot serve 4 banks", key="arch.bank.units")


def _unit(point: Point, salt: str) -> float:
    text = json.dumps([point.design, point.workload, point.overrides, salt], sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def fake_point(point: Point) -> dict[str, Any]:
    """Numbers that depend only on the point's configuration."""
    units = point.overrides.get("arch.bank.units", 4)
    batch = point.overrides.get("workload.batch", 32)
    speed = ToyProvider.archs.get(point.arch, 1.0)
    lps = 1e8 * speed * (1 + units / 8) * (1 + _unit(point, "t"))
    t_dram = 1e9 * batch / lps * (0.3 + 0.5 * _unit(point, "d"))
    t_units = 1e9 * batch / lps - t_dram
    return {
        "arch": point.arch,
        "workload": point.workload,
        "memory": point.memory or "own",
        "latency_ns": t_dram + t_units,
        "lookups_per_s": lps,
        "energy_pj_per_lookup": 100.0 / speed * (1 + _unit(point, "e")),
        "area_mm2": speed * units * (1 + _unit(point, "a")),
        "breakdown": {
            "time_ns": {"dram": t_dram, "units": t_units},
            "energy_pj": {"dram_core": 60.0, "io": 30.0 / speed, "units": 10.0},
        },
    }


class FlakyPoint:
    """``fake_point`` that raises for the points at the given sweep indices."""

    def __init__(self, fail_indices: set[int]) -> None:
        self.fail_indices = set(fail_indices)

    def __call__(self, point: Point) -> dict[str, Any]:
        if point.index in self.fail_indices:
            raise RuntimeError(f"injected failure at point {point.index}")
        return fake_point(point)


def slow_point(point: Point) -> dict[str, Any]:
    time.sleep(0.05)
    return fake_point(point)


SWEEP = {
    "name": "toy",
    "workloads": ["w1", "w2"],
    "archs": ["a", "b"],
    "baseline": "a",
    "designs": [{"name": "c-big", "arch": "c", "axes": {"arch": {"bank": {"units": [8, 16]}}}}],
    "axes": {"workload": {"batch": [1, 32, 128]}},
}


def toy_sweep(**changes: Any) -> Any:
    return parse_sweep({**SWEEP, **changes}, file="toy.toml")
