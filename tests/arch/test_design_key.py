"""Set-ups shared between designs that differ in energy or area alone (nmp.arch.design_key):
such designs time identically, and a point on a shared set-up equals one computed afresh."""

from __future__ import annotations

import dataclasses
import json

import pytest

import nmp.arch.architecture as architecture
import nmp.arch.point as point
from nmp.arch import load_arch, run_design_point
from nmp.arch.design_key import is_cost_field, timing_key
from nmp.identity_cache import KeyedCache

SMALL = {"batch": 8}


def _point(arch_ov: dict) -> dict:
    ov = {"workload": SMALL, "arch": arch_ov}
    out = run_design_point("recross", "recross-eval", overrides=ov, seed=3).to_json()
    out["breakdown"].pop("lp_solve_s", None)  # the LP's wall time
    return out


def _cost_overrides(spec, factor: float, prefix: str = "") -> dict:
    """Every scalar energy or area figure of ``spec`` times ``factor`` (dotted paths)."""
    out: dict = {}
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if dataclasses.is_dataclass(value):
            out.update(_cost_overrides(value, factor, f"{prefix}{f.name}."))
        elif is_cost_field(f.name) and isinstance(value, float) and value > 0:
            out[prefix + f.name] = value * factor
    return out


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(point, "_ARCH_CACHE", {})
    monkeypatch.setattr(architecture, "_SETUPS", KeyedCache(16))


def _timing(out: dict) -> dict:
    """A point's figures that are times (not energy or area)."""
    b = out["breakdown"]
    return {
        "latency_ns": out["latency_ns"],
        "levels": b["levels"],
        "bounds_ns": b["bounds_ns"],
        "lp_level_t_ns": b["lp_level_t_ns"],
    }


def test_energy_and_area_figures_leave_the_timing_alone(fresh, monkeypatch):
    # each design's set-up computed afresh, none shared
    monkeypatch.setattr(architecture._SETUPS, "limit", 0)
    spec = load_arch("recross").spec
    tripled = _cost_overrides(spec, 3.0)
    assert "rank.pj_per_add" in tripled and "bank.sram_pj_per_bit" in tripled
    tripled["dram_energy.bank_read_share"] = 0.2
    base, costly = _point({}), _point(tripled)
    assert _timing(base) == _timing(costly)
    assert costly["energy_pj_per_lookup"] > base["energy_pj_per_lookup"]
    assert timing_key(load_arch("recross", overrides=tripled).spec) == timing_key(spec)


def test_a_point_on_a_shared_set_up_equals_a_fresh_one(fresh, monkeypatch):
    sweep = [{"rank.pj_per_add": v} for v in (0.9, 1.3)]
    shared = [_point(ov) for ov in sweep]
    assert len(architecture._SETUPS) == 1
    _point({"rank.clock_mhz": 150.0})  # a timing field: its own set-up
    assert len(architecture._SETUPS) == 2
    monkeypatch.setattr(architecture._SETUPS, "limit", 0)
    monkeypatch.setattr(point, "_ARCH_CACHE", {})
    fresh_points = [_point(ov) for ov in sweep]
    assert json.dumps(shared, sort_keys=True) == json.dumps(fresh_points, sort_keys=True)
    assert shared[0]["energy_pj_per_lookup"] != shared[1]["energy_pj_per_lookup"]
