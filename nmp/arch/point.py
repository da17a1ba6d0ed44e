"""Loading a design on its memory, one design point (``nmp run``), and the catalog rows.

A design point draws one batch of the workload (seeded), executes gather-reduce on the design
(functionally, so outputs are real), times it with the DRAM engine, and reports latency per
batch, lookups per second, energy per lookup, area and the breakdown that explains them.
"""

from __future__ import annotations

from typing import Any

from nmp.arch.architecture import Architecture
from nmp.arch.area import design_area_mm2
from nmp.arch.heap import keep_freed_memory
from nmp.arch.presets import load_arch_spec
from nmp.arch.spec import ArchSpec
from nmp.config import PRESET_CATALOGS, preset_names
from nmp.errors import NmpError
from nmp.identity_cache import KeyedCache
from nmp.memory import load_memory
from nmp.results import PointResult
from nmp.workload import generate_batch, load_workload
from nmp.workload.batch import LookupBatch
from nmp.workload.spec import WorkloadSpec, tables_source


def load_memory_for(spec: ArchSpec, memory: str | None = None, overrides: dict | None = None):
    preset = memory or spec.memory.preset
    if isinstance(preset, str):  # the same memory for every design of a sweep, loaded once
        return _loaded_memory(
            preset, spec.memory.channels, spec.memory.ranks, _freeze(overrides or {}), overrides
        )
    return load_memory(
        preset,
        channels=spec.memory.channels,
        ranks=spec.memory.ranks,
        overrides=overrides or None,
    )


_MEMORIES: dict[tuple, Any] = {}


def _loaded_memory(preset: str, channels: int, ranks: int, key: tuple, overrides: dict | None):
    """:func:`nmp.memory.load_memory` once per preset, organization and overrides (its spec is
    frozen; a preset is named, as :func:`nmp.memory.spec._load_base` caches it by name)."""
    mem = _MEMORIES.get((preset, channels, ranks, key))
    if mem is None:
        if len(_MEMORIES) > 32:
            _MEMORIES.clear()
        mem = _MEMORIES[(preset, channels, ranks, key)] = load_memory(
            preset, channels=channels, ranks=ranks, overrides=overrides or None
        )
    return mem


def load_arch(
    name: str,
    memory: str | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    memory_overrides: dict[str, Any] | None = None,
    data_seed: int = 0,
) -> Architecture:
    """Preset ``name`` (or a TOML path) with dotted ``overrides`` on ``memory`` (default: the
    preset's own memory)."""
    spec = load_arch_spec(name, overrides)
    return Architecture(spec, load_memory_for(spec, memory, memory_overrides), data_seed=data_seed)


def _freeze(d: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in d.items()))


def run_design_point(
    arch: str,
    workload: str,
    memory: str | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    seed: int | None = None,
    *,
    functional: bool = True,
) -> PointResult:
    """One design point of ``arch`` running ``workload`` (see the module docstring).

    ``overrides = {"arch": {...}, "workload": {...}, "memory": {...}}`` by dotted path."""
    keep_freed_memory()  # (once per process: each point's arrays then reuse the last one's pages)
    overrides = overrides or {}
    unknown = set(overrides) - {"arch", "workload", "memory"}
    if unknown:
        raise NmpError(f"override group must be arch, workload or memory, got {sorted(unknown)}")
    wl = load_workload(workload, overrides.get("workload") or None)
    a_ov = overrides.get("arch") or {}
    m_ov = overrides.get("memory") or {}
    # the design (layout, profile, partition) is reused across points of the same inputs
    arch_obj = _cached_arch_for(arch, memory, a_ov, m_ov)
    try:
        arch_obj.check_tables_fit(wl.tables)
    except NmpError:
        # again, naming where the tables were given: looked up only for the message (the
        # preset's path, resolved on every point, was 0.9 % of a point's samples in a py-spy
        # profile, 63 us by timeit)
        file, key = tables_source(workload, overrides.get("workload"))
        arch_obj.check_tables_fit(wl.tables, file=file, key=key)
    arch_obj.bind(wl)
    batch = _batch_for(wl, seed)
    _, op = arch_obj.gather_reduce(batch, functional=functional)
    lookups = batch.num_lookups
    latency = op.t_ns
    area = design_area_mm2(arch_obj)
    breakdown = dict(op.breakdown)
    breakdown["energy_pj"] = dict(op.energy_pj)
    breakdown["bytes_by_level"] = dict(op.bytes_by_level)
    breakdown["area_mm2"] = area.by_level
    if area.sources:
        breakdown["area_source"] = dict(area.sources)
    # the memory this design ran on, kept with its result (nmp.evaluate.analysis.memory_system
    # resolves the same from the specs, before a run, to warn about compared designs' mismatch)
    org = arch_obj.mem.org
    breakdown["memory_setup"] = {
        "preset": arch_obj.mem.name,
        "standard": arch_obj.mem.standard,
        "channels": int(org.channels),
        "ranks": int(org.ranks),
    }
    return PointResult(
        arch=arch_obj.name,
        workload=wl.name,
        memory=arch_obj.mem.name,
        latency_ns=latency,
        lookups_per_s=lookups / latency * 1e9 if latency > 0 else 0.0,
        energy_pj_per_lookup=op.total_energy_pj / lookups if lookups else 0.0,
        area_mm2=area.total,
        breakdown=breakdown,
        extra={"lookups": lookups, "batch": batch.batch, "seed": seed},
    )


# chosen: a few batches of a sweep (MiB each)
_BATCHES: KeyedCache[tuple, LookupBatch] = KeyedCache(8)


def _batch_for(wl: WorkloadSpec, seed: int | None) -> LookupBatch:
    """The workload's batch of ``seed``, drawn once for the points that time it (a sweep's
    designs time the same batch); its arrays read-only, as its users only read them."""
    key = (wl, wl.seed if seed is None else int(seed))
    batch = _BATCHES.get(key)
    if batch is None:
        batch = generate_batch(wl, seed=seed)
        for t in batch.tables:
            for arr in (t.indices, t.offsets, t.weights):
                if arr is not None:
                    arr.setflags(write=False)
        _BATCHES.put(key, batch)
    return batch


def _cached_arch_for(arch: str, memory: str | None, a_ov: dict, m_ov: dict) -> Architecture:
    # overrides are plain values from --set; repr() makes them hashable for the cache
    return _cached_arch_impl(arch, memory, _freeze(a_ov), _freeze(m_ov), a_ov, m_ov)


_ARCH_CACHE: dict[tuple, Architecture] = {}


def _cached_arch_impl(arch, memory, key_a, key_m, a_ov, m_ov) -> Architecture:
    key = (arch, memory, key_a, key_m)
    obj = _ARCH_CACHE.get(key)
    if obj is None:
        if len(_ARCH_CACHE) > 32:
            _ARCH_CACHE.clear()
        obj = load_arch(arch, memory, a_ov, memory_overrides=m_ov)
        _ARCH_CACHE[key] = obj
    return obj


@PRESET_CATALOGS.register(name="arch")
def catalog_rows() -> list[dict[str, Any]]:
    """One row per architecture preset for ``nmp models``."""
    rows: list[dict[str, Any]] = []
    for name in preset_names("arch"):
        try:
            arch = load_arch(name)
        except NmpError as exc:
            rows.append({"name": name, "summary": f"invalid: {exc}"})
            continue
        s = arch.spec
        units = "/".join(str(s.level(lv).units) for lv in ("rank", "bankgroup", "bank"))
        mechs = [
            m
            for m, on in (
                (f"SALP ({s.bank.salp})", s.subarray_parallelism),
                ("LP partition", s.bandwidth_aware_partition),
                (
                    f"locality sched (window {s.scheduling_window or 'batch'})",
                    s.locality_aware_scheduling,
                ),
                ("table-aware", s.table_aware_scheduling),
                (
                    f"RankCache {s.rank.cache_kib:g} KiB ({s.rank.cache_policy})",
                    s.rank.cache_kib > 0,
                ),
                (f"LLC {s.host.llc_mib:g} MiB", s.host.llc_mib > 0),
                (
                    f"hot-row replication {s.replicate_hot_rows} ({s.replica_choice})",
                    s.replicate_hot_rows > 0,
                ),
            )
            if on
        ]
        mem = arch.mem
        rows.append(
            {
                "name": name,
                "summary": (
                    f"{s.policy}, units {units} (rank/BG/bank per rank), {mem.name} "
                    f"{mem.org.channels}ch x {mem.org.ranks}R; {', '.join(mechs) or '-'}"
                ),
                "area_mm2": round(design_area_mm2(arch).total, 2),
            }
        )
    return rows


__all__ = ["catalog_rows", "load_arch", "load_memory_for", "run_design_point"]
