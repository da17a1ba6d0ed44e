"""The model's side of the MICRO'24 GPU paper's claims (``nmp/validate/claims/micro24.toml``).

Each function runs the embedding-stage model (:func:`nmp.gpu.model.embedding_stage`) on
gpu-micro24 as ``nmp run`` does (same batch, the pinned rows profiled on another batch) and
returns the figure or ordering a claim compares; nothing here knows the published numbers.
``quick=True`` models 2 of the 12 tables (every table's kernel is drawn alike and pinning is per
table, so the gains carry over; the detail says so) and fewer reuse levels; runs are cached so
that claims of one study share them.
"""

from __future__ import annotations

import functools
from typing import Any

from nmp.gpu.kernel import kernel_config
from nmp.gpu.model import embedding_stage
from nmp.gpu.point import PROFILE_SEED_OFFSET
from nmp.gpu.spec import load_gpu
from nmp.plugins import claim_model
from nmp.workload import generate_batch, load_workload

QUICK_TABLES = 2
MEMORY_STALLS = ("index_load", "l1_hit", "l2_hit", "hbm_latency", "hbm_queueing")


def _levels(quick: bool) -> tuple[str, ...]:
    return ("high", "random") if quick else ("high", "medium", "low", "random")


@functools.cache
def _batches(reuse: str, quick: bool):
    over: dict[str, Any] = {"reuse": reuse}
    if quick:
        over["num_tables"] = QUICK_TABLES
    spec = load_workload("gpu-micro24", over)
    return generate_batch(spec), generate_batch(spec, seed=spec.seed + PROFILE_SEED_OFFSET)


@functools.cache
def _run(arch: str, variant: str, reuse: str, quick: bool):
    batch, profile = _batches(reuse, quick)
    gpu = load_gpu(arch, {"variant": variant})
    return embedding_stage(gpu, batch, pin_profile=profile if gpu.uses_pinning else None)


def _setup(arch: str, quick: bool) -> str:
    tables = f"{QUICK_TABLES} of 12 tables" if quick else "12 tables"
    return f"{arch}, gpu-micro24 ({tables}, batch 2048)"


def gain_pct(arch: str, variant: str, reuse: str, quick: bool) -> float:
    """Speedup of ``variant`` over the stock kernel, in percent (base time / time - 1)."""
    return (
        _run(arch, "baseline", reuse, quick).t_ns / _run(arch, variant, reuse, quick).t_ns - 1
    ) * 100


@claim_model
def best_gain(*, quick: bool, arch: str = "a100-80gb", variant: str = "occupancy") -> dict:
    """The largest gain of ``variant`` over the reuse levels (the paper's "up to")."""
    gains = {r: gain_pct(arch, variant, r, quick) for r in _levels(quick)}
    best = max(gains, key=gains.__getitem__)
    text = ", ".join(f"{r} {g:+.1f} %" for r, g in gains.items())
    return {"value": gains[best], "detail": f"{_setup(arch, quick)}; {variant}: {text}"}


@claim_model
def stock_kernel_register_limited(*, quick: bool, arch: str = "a100-80gb") -> dict:
    """Whether the stock kernel's occupancy is below 100 % because of its registers."""
    cfg = kernel_config(load_gpu(arch))
    holds = cfg.limited_by == "registers" and cfg.occupancy < 1.0
    return {
        "value": holds,
        "detail": f"{arch}: {cfg.regs_per_thread} registers/thread, {cfg.blocks_per_sm} blocks "
        f"of {cfg.warps_per_block} warps per SM, occupancy {cfg.occupancy:.0%} "
        f"(limited by {cfg.limited_by})",
    }


@claim_model
def latency_stalls_remain(
    *, quick: bool, arch: str = "a100-80gb", reuse: str = "high", share: float = 0.5
) -> dict:
    """Whether memory-latency stalls still take more than ``share`` of the occupancy-optimized
    kernel's time."""
    op = _run(arch, "occupancy", reuse, quick)
    frac = sum(op.breakdown["stall_fraction"][k] for k in MEMORY_STALLS)
    return {
        "value": bool(frac > share),
        "detail": f"{_setup(arch, quick)}, {reuse} reuse: memory-latency stalls are {frac:.0%} "
        "of the occupancy variant's time",
    }


@claim_model
def helps(*, quick: bool, arch: str = "a100-80gb", variant: str, reuse: str = "high") -> dict:
    """Whether ``variant`` is faster than the stock kernel at ``reuse``."""
    g = gain_pct(arch, variant, reuse, quick)
    return {"value": g > 0, "detail": f"{_setup(arch, quick)}, {reuse} reuse: {variant} {g:+.1f} %"}


@claim_model
def complements(*, quick: bool, arch: str = "a100-80gb", reuse: str = "high") -> dict:
    """Whether the combined kernel beats prefetch alone and pinning alone."""
    g = {v: gain_pct(arch, v, reuse, quick) for v in ("prefetch", "pinning", "combined")}
    text = ", ".join(f"{v} {x:+.1f} %" for v, x in g.items())
    return {
        "value": g["combined"] > max(g["prefetch"], g["pinning"]),
        "detail": f"{_setup(arch, quick)}, {reuse} reuse: {text}",
    }


@claim_model
def shrinks_with_reuse(*, quick: bool, arch: str = "a100-80gb", variant: str = "pinning") -> dict:
    """Whether ``variant``'s gain at high reuse exceeds its gain on uniform lookups."""
    hi = gain_pct(arch, variant, "high", quick)
    lo = gain_pct(arch, variant, "random", quick)
    return {
        "value": hi > lo,
        "detail": f"{_setup(arch, quick)}: {variant} {hi:+.1f} % at high reuse, {lo:+.1f} % random",
    }
