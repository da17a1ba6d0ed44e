"""The model's side of the MICRO'24 GPU paper's claims (``claims.toml`` beside this file).

Each function runs the embedding-stage model (:func:`nmp.gpu.model.embedding_stage`) on a GPU
preset as ``nmp run`` does (same batch, the pinned rows profiled on another batch) and returns
the figure or ordering a claim compares; nothing here knows the published numbers. ``setup``
(``nmp.validate.setup``) is None for the kit's defaults (the ``arch`` argument's preset on the
gpu-micro24 workload) or the paper's setup: ``gpu`` (a GPU preset), ``arch.<path>`` (the GPU
spec, as ``--set arch.kernel.maxrregcount=42``) and ``workload.<path>`` keys. An ordering also
returns its ``margin`` (relative), a gain its ``bound``: the gain if the variant's bytes moved at
the HBM's, L2's and L1's peak rates (:func:`floor_ns`).

``quick=True`` models 2 of the 12 tables (every table's kernel is drawn alike and pinning is per
table, so the gains carry over; the detail says so) and fewer reuse levels; runs are cached on
their overrides (values equal to the preset's dropped) so that claims of one study and both
columns share them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from nmp.errors import SpecError
from nmp.gpu.kernel import kernel_config
from nmp.gpu.model import embedding_stage
from nmp.gpu.point import PROFILE_SEED_OFFSET
from nmp.gpu.spec import load_gpu
from nmp.plugins import claim_model
from nmp.workload import generate_batch, load_workload

QUICK_TABLES = 2
MEMORY_STALLS = ("index_load", "l1_hit", "l2_hit", "l2_queueing", "hbm_latency", "hbm_queueing")


def reuse_levels(quick: bool) -> tuple[str, ...]:
    """The workload's reuse levels a claim runs (two in the quick set)."""
    return ("high", "random") if quick else ("high", "medium", "low", "random")


WORKLOAD = "gpu-micro24"


@functools.cache
def _defaults(arch: str):
    return load_gpu(arch), load_workload(WORKLOAD)


def _lookup(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part, _MISSING)
    return obj


_MISSING = object()


def setup_config(arch: str, setup: Mapping[str, Any] | None) -> tuple[str, tuple, tuple]:
    """(GPU preset, GPU overrides, workload overrides) of ``setup`` (None: ``arch`` as is),
    each without the values equal to the preset's."""
    setup = dict(setup or {})
    arch = setup.pop("gpu", arch)
    gpu_over: dict[str, Any] = {}
    wl_over: dict[str, Any] = {}
    for key, value in setup.items():
        root, _, path = key.partition(".")
        if root not in ("arch", "workload") or not path:
            raise SpecError(
                "unknown setup key: the GPU claims take gpu, arch.*, workload.*", key=key
            )
        (gpu_over if root == "arch" else wl_over)[path] = value
    gpu, wl = _defaults(arch)
    gpu_over = {k: v for k, v in gpu_over.items() if _lookup(gpu, k) != v}
    wl_over = {k: v for k, v in wl_over.items() if _lookup(wl, k) != v}
    return arch, tuple(sorted(gpu_over.items())), tuple(sorted(wl_over.items()))


@functools.cache
def batches(reuse: str, quick: bool, wl_over: tuple = ()):
    """(the served batch, the profile batch) at one reuse level (a bound reads them too)."""
    over: dict[str, Any] = {**dict(wl_over), "reuse": reuse}
    if quick:
        over["num_tables"] = QUICK_TABLES
    spec = load_workload(WORKLOAD, over)
    return generate_batch(spec), generate_batch(spec, seed=spec.seed + PROFILE_SEED_OFFSET)


@functools.cache
def _run(arch: str, variant: str, reuse: str, quick: bool, gpu_over: tuple = (), wl_over=()):
    batch, profile = batches(reuse, quick, wl_over)
    gpu = load_gpu(arch, {**dict(gpu_over), "variant": variant})
    return embedding_stage(gpu, batch, pin_profile=profile if gpu.needs_profile else None)


def _setup(arch: str, quick: bool, setup: Mapping[str, Any] | None = None) -> str:
    name, gpu_over, wl_over = setup_config(arch, setup)
    tables = f"{QUICK_TABLES} of 12 tables" if quick else "12 tables"
    changed = "".join(f", {k}={v}" for k, v in gpu_over + wl_over)
    which = "paper's setup" if setup is not None else "kit defaults"
    return f"{name}, {WORKLOAD} ({tables}, batch 2048{changed}); {which}"


def floor_ns(arch: str, variant: str, reuse: str, quick: bool, setup=None) -> tuple[float, str]:
    """(the shortest time the variant's traffic allows, how): its HBM, L2 and L1 bytes each at
    its peak rate (HBM peak; L2 and L1 bytes per cycle at the SM clock), whichever is longest."""
    name, gpu_over, wl_over = setup_config(arch, setup)
    op = _run(name, variant, reuse, quick, gpu_over, wl_over)
    gpu = load_gpu(name, dict(gpu_over))
    ghz = gpu.sm.clock_mhz / 1e3
    terms = {
        "HBM": op.breakdown["hbm_bytes"] / gpu.hbm.peak_bandwidth_gbps,
        "L2": op.breakdown["l2_bytes"] / (gpu.l2.bytes_per_cycle * ghz),
        "L1": op.breakdown["l1_bytes"] / (gpu.l1.bytes_per_cycle * gpu.sm.count * ghz),
    }
    which = max(terms, key=terms.__getitem__)
    return terms[which], f"{which} bytes at peak {terms[which] / 1e3:.1f} us"


def gain_pct(arch: str, variant: str, reuse: str, quick: bool, setup=None) -> float:
    """Speedup of ``variant`` over the stock kernel, in percent (base time / time - 1)."""
    name, gpu_over, wl_over = setup_config(arch, setup)
    base = _run(name, "baseline", reuse, quick, gpu_over, wl_over)
    return (base.t_ns / _run(name, variant, reuse, quick, gpu_over, wl_over).t_ns - 1) * 100


def gain_bound_pct(
    arch: str, variant: str, reuse: str, quick: bool, setup=None
) -> tuple[float, str]:
    """(the largest gain the variant's traffic allows over the stock kernel as modeled, how)."""
    name, gpu_over, wl_over = setup_config(arch, setup)
    base = _run(name, "baseline", reuse, quick, gpu_over, wl_over).t_ns
    t_min, how = floor_ns(arch, variant, reuse, quick, setup)
    bound = (base / t_min - 1) * 100
    return bound, f"{reuse}: stock {base / 1e3:.1f} us / ({how}) - 1 = {bound:+.0f} %"


@claim_model
def best_gain(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    variant: str = "occupancy",
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """The largest gain of ``variant`` over the reuse levels (the paper's "up to"); the bound
    is the largest gain the variant's traffic allows at any level."""
    gains = {r: gain_pct(arch, variant, r, quick, setup) for r in reuse_levels(quick)}
    bounds = {r: gain_bound_pct(arch, variant, r, quick, setup) for r in reuse_levels(quick)}
    best = max(gains, key=gains.__getitem__)
    top = max(bounds, key=lambda r: bounds[r][0])
    text = ", ".join(f"{r} {g:+.1f} %" for r, g in gains.items())
    return {
        "value": gains[best],
        "detail": f"{_setup(arch, quick, setup)}; {variant}: {text}",
        "bound": bounds[top][0],
        "bound_detail": "; ".join(b[1] for b in bounds.values()),
    }


@claim_model
def stock_kernel_register_limited(
    *, quick: bool, arch: str = "a100-80gb", setup: Mapping[str, Any] | None = None
) -> dict:
    """Whether the stock kernel's occupancy is below 100 % because of its registers (margin:
    the occupancy it loses)."""
    name, gpu_over, _ = setup_config(arch, setup)
    cfg = kernel_config(load_gpu(name, dict(gpu_over)))
    holds = cfg.limited_by == "registers" and cfg.occupancy < 1.0
    return {
        "value": holds,
        "margin": 1.0 - cfg.occupancy,
        "detail": f"{name}: {cfg.regs_per_thread} registers/thread, {cfg.blocks_per_sm} blocks "
        f"of {cfg.warps_per_block} warps per SM, occupancy {cfg.occupancy:.0%} "
        f"(limited by {cfg.limited_by})",
    }


@claim_model
def latency_stalls_remain(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    reuse: str = "high",
    share: float = 0.5,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Whether memory-latency stalls still take more than ``share`` of the occupancy-optimized
    kernel's time (margin: their share over ``share``, less one)."""
    name, gpu_over, wl_over = setup_config(arch, setup)
    op = _run(name, "occupancy", reuse, quick, gpu_over, wl_over)
    frac = sum(op.breakdown["stall_fraction"][k] for k in MEMORY_STALLS)
    return {
        "value": bool(frac > share),
        "margin": frac / share - 1.0,
        "detail": f"{_setup(arch, quick, setup)}, {reuse} reuse: memory-latency stalls are "
        f"{frac:.0%} of the occupancy variant's time",
    }


@claim_model
def helps(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    variant: str,
    reuse: str = "high",
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Whether ``variant`` is faster than the stock kernel at ``reuse``."""
    g = gain_pct(arch, variant, reuse, quick, setup)
    bound, how = gain_bound_pct(arch, variant, reuse, quick, setup)
    return {
        "value": g > 0,
        "margin": g / 100,
        "detail": f"{_setup(arch, quick, setup)}, {reuse} reuse: {variant} {g:+.1f} %",
        "bound": 1 + bound / 100,
        "bound_detail": how,
    }


@claim_model
def complements(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    reuse: str = "high",
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Whether the combined kernel beats prefetch alone and pinning alone (margin: the
    combined kernel's speedup over the better of the two, less one)."""
    g = {v: gain_pct(arch, v, reuse, quick, setup) for v in ("prefetch", "pinning", "combined")}
    text = ", ".join(f"{v} {x:+.1f} %" for v, x in g.items())
    lead = (100 + g["combined"]) / (100 + max(g["prefetch"], g["pinning"])) - 1
    return {
        "value": g["combined"] > max(g["prefetch"], g["pinning"]),
        "margin": lead,
        "detail": f"{_setup(arch, quick, setup)}, {reuse} reuse: {text}",
    }


@claim_model
def shrinks_with_reuse(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    variant: str = "pinning",
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Whether ``variant``'s gain at high reuse exceeds its gain on uniform lookups (margin:
    the speedup at high reuse over that on uniform lookups, less one)."""
    hi = gain_pct(arch, variant, "high", quick, setup)
    lo = gain_pct(arch, variant, "random", quick, setup)
    return {
        "value": hi > lo,
        "margin": (100 + hi) / (100 + lo) - 1,
        "detail": f"{_setup(arch, quick, setup)}: {variant} {hi:+.1f} % at high reuse, "
        f"{lo:+.1f} % random",
    }
