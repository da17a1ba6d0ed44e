"""First-principles bounds of the MICRO'24 GPU claims (``claims.toml`` beside this file).

Each table's EmbeddingBag kernel is a grid of equal blocks (stock PyTorch: 1024 blocks of 8
warps; one warp per bag and 32-element chunk, ``pooling`` row loads each). With every load at
its unloaded latency ``L`` and a warp keeping ``k`` loads in flight, a block takes
``pooling x L / k``; an SM holds ``S`` blocks (the CUDA occupancy calculator on the stated
registers, warps and block slots), so the kernel takes at least ``rounds x pooling x L / k``,
and at least its bytes at the HBM's peak. ``k`` is the variant's loads in flight under the L1's
stated miss entries.

A design (the variant) at its most favourable choices: its blocks share the SMs' slots evenly
(``blocks / S`` rounds, no whole-round rounding), every pinned row a hit at the L2's latency
(the hottest rows of the served batch itself that fit the set-aside: a perfect profile), its
HBM bytes less the pinned ones. A baseline (the stock kernel, or another variant) at its least
favourable: whole rounds, every load a miss at the HBM's unloaded latency, a set-aside that
serves nothing. The bound is the baseline's floor over the design's, summed over the tables.
Nothing here runs the kernel model (:mod:`nmp.gpu.model`); the batch is the workload's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from nmp.gpu.hbm import dram_latency_ns
from nmp.gpu.kernel import kernel_config
from nmp.gpu.spec import load_gpu
from nmp.memory import load_memory
from nmp.papers.micro24.model import batches, reuse_levels, setup_config
from nmp.plugins import claim_model


@functools.cache
def _hot_share(reuse: str, quick: bool, wl_over: tuple, rows: int) -> tuple[float, ...]:
    """Per table: the share of the served batch's lookups to its ``rows`` hottest rows."""
    batch, _ = batches(reuse, quick, wl_over)
    out = []
    for lk in batch.tables:
        counts = np.sort(np.unique(lk.indices, return_counts=True)[1])[::-1]
        out.append(float(counts[:rows].sum()) / max(lk.num_lookups, 1))
    return tuple(out)


def _floor_ns(
    arch: str, variant: str, role: str, reuse: str, quick: bool, setup
) -> tuple[float, dict[str, Any]]:
    """(the kernel's floor over all tables in ns, its terms) for ``variant`` as ``role``
    ("design": most favourable choices; "baseline": least favourable)."""
    name, gpu_over, wl_over = setup_config(arch, setup)
    gpu = load_gpu(name, {**dict(gpu_over), "variant": variant})
    cfg = kernel_config(gpu)
    batch, _ = batches(reuse, quick, wl_over)
    ghz = gpu.sm.clock_mhz / 1e3
    l_hbm = gpu.hbm.fabric_latency_ns + dram_latency_ns(load_memory(gpu.hbm.memory_preset))
    l_l2 = gpu.l2.hit_cycles / ghz
    slots = cfg.blocks_per_sm * gpu.sm.count
    pin_rows = 0
    if gpu.uses_pinning and role == "design":
        row_bytes = batch.tables[0].dim * 4
        set_aside = gpu.pinning.set_aside_fraction * gpu.l2.size_bytes
        pin_rows = min(gpu.pinning.rows, int(set_aside // row_bytes))
    hot = _hot_share(reuse, quick, wl_over, pin_rows) if pin_rows else (0.0,) * len(batch.tables)
    total = 0.0
    tables = []
    for lk, h in zip(batch.tables, hot, strict=True):
        row_bytes = lk.dim * 4
        chunks = -(-lk.dim // 32)
        units = (len(lk.offsets) - 1) * chunks  # warps' work: one bag chunk each
        blocks = -(-units // gpu.kernel.block_y)
        loads_per_unit = lk.num_lookups / max(len(lk.offsets) - 1, 1)
        per_block = max(1.0, units / (min(blocks, gpu.kernel.grid_blocks) * gpu.kernel.block_y))
        k = cfg.mlp_for(min(32, lk.dim) * 4 // gpu.l1.sector_bytes)
        grid = min(blocks, gpu.kernel.grid_blocks)
        rounds = grid / slots if role == "design" else math.ceil(grid / slots)
        latency = (1.0 - h) * l_hbm + h * l_l2
        t_lat = rounds * per_block * loads_per_unit * latency / k
        t_bw = (1.0 - h) * lk.num_lookups * row_bytes / gpu.hbm.peak_bandwidth_gbps
        total += max(t_lat, t_bw)
        tables.append({"latency_ns": t_lat, "hbm_ns": t_bw, "pinned_share": h})
    terms = {
        "name": variant,
        "role": role,
        "time_ns": total,
        "arithmetic": (
            f"{len(tables)} table(s) of {grid} blocks, {slots} slots ({cfg.blocks_per_sm}/SM at "
            f"{cfg.regs_per_thread} registers): {rounds:.3g} rounds x {loads_per_unit:g} loads x "
            f"{(1 - hot[0]) * l_hbm + hot[0] * l_l2:.0f} ns / {k:g} in flight; HBM {l_hbm:.0f} "
            f"ns, L2 hit {l_l2:.0f} ns, pinned share {hot[0]:.3f}: {total / 1e3:.1f} us"
        ),
        "tables": tables,
    }
    return total, terms


def _ratio_bound(
    arch: str, design: str, baseline: str, reuse: str, quick: bool, setup
) -> tuple[float, dict[str, Any]]:
    mine, d_terms = _floor_ns(arch, design, "design", reuse, quick, setup)
    base, b_terms = _floor_ns(arch, baseline, "baseline", reuse, quick, setup)
    ratio = base / mine
    how = (
        f"{reuse}: {baseline} >= {base / 1e3:.1f} us over {design} >= {mine / 1e3:.1f} us = "
        f"{ratio:.3g}x"
    )
    return ratio, {"bound": ratio, "arithmetic": how, "design": d_terms, "baseline": b_terms}


CHOICES = [
    "the variant: its blocks share the SM slots evenly (most favourable; alternative: whole "
    "rounds, as the stock's equal blocks run)",
    "pinned rows: the served batch's own hottest rows that fit the set-aside, each an L2 hit "
    "(most favourable; alternative: a profile of another batch, the model's)",
    "the baseline: every load a miss at the HBM's unloaded latency and a set-aside serving "
    "nothing (least favourable; alternative: the L2 hits its reuse gives it)",
]


@claim_model
def best_gain(
    *, quick: bool, arch: str = "a100-80gb", variant: str, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The largest gain (%) of ``variant`` over the stock kernel at any reuse level."""
    per = {r: _ratio_bound(arch, variant, "baseline", r, quick, setup) for r in reuse_levels(quick)}
    top = max(per, key=lambda r: per[r][0])
    bound = (per[top][0] - 1.0) * 100.0
    how = f"the largest over the reuse levels: {per[top][1]['arithmetic']}: {bound:+.0f} %"
    terms = {**per[top][1], "bound": bound, "arithmetic": how, "choices": CHOICES}
    terms["levels"] = {r: (b - 1.0) * 100.0 for r, (b, _) in per.items()}
    return {"bound": bound, "bound_terms": terms, "bound_detail": how}


@claim_model
def helps(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    variant: str,
    reuse: str = "high",
    setup: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The most ``variant`` can be faster than the stock kernel at ``reuse`` (a ratio)."""
    bound, terms = _ratio_bound(arch, variant, "baseline", reuse, quick, setup)
    return {
        "bound": bound,
        "bound_terms": {**terms, "choices": CHOICES},
        "bound_detail": terms["arithmetic"],
    }


@claim_model
def complements(
    *,
    quick: bool,
    arch: str = "a100-80gb",
    reuse: str = "high",
    setup: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The most the combined kernel can be faster than the better of prefetch and pinning."""
    each = [_ratio_bound(arch, "combined", v, reuse, quick, setup) for v in ("prefetch", "pinning")]
    bound, terms = min(each, key=lambda bt: bt[0])
    return {
        "bound": bound,
        "bound_terms": {**terms, "choices": CHOICES},
        "bound_detail": terms["arithmetic"],
    }
