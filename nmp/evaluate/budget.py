"""The resource guard's estimates for design points and sweeps (``nmp run``, ``nmp evaluate``).

:mod:`nmp.guard` holds the measured coefficients and the limit; what a design point allocates
depends on its design's spec and memory, which this layer resolves (:mod:`nmp.evaluate.point`).
"""

from __future__ import annotations

import math
from typing import Any

from nmp.config import apply_overrides, split_overrides
from nmp.errors import NmpError, SpecError
from nmp.evaluate.point import (
    OVERRIDE_ROOTS,
    check_arch_name,
    design_memory_args,
    load_design_spec,
    own_memory,
)
from nmp.evaluate.sweep import grid_size
from nmp.guard import (
    LINE_BYTES,
    POINT_BASE_BYTES,
    SWEEP_POINT_BYTES,
    Estimate,
    format_bytes,
    limit_bytes,
    memory_estimate,
)
from nmp.memory import load_memory
from nmp.workload import load_workload

# Workload keys that change which rows a batch reads, not how many lines it moves
LINE_NEUTRAL = frozenset(
    ("seed", "alpha", "distribution", "hot_alpha", "hot_rows", "hot_fraction", "reuse", "locality")
)


def point_estimate(
    arch: str,
    workload: str,
    memory: str | None,
    overrides: dict[str, Any],
    memo: dict[str, Any] | None = None,
) -> Estimate:
    """``nmp run``: the lines one batch moves (lookups x 64-B lines per vector) and the memory
    system's state. Loads only the specs (milliseconds), never the design; ``memo`` keeps the
    specs a sweep's points share (each distinct workload and memory loaded once)."""
    check_arch_name(arch)
    memo = {} if memo is None else memo
    grouped = split_overrides(overrides or {}, OVERRIDE_ROOTS)
    # (keys that move no line share a workload's estimate: a sweep over seeds loads it once)
    sized = {k: v for k, v in (grouped.get("workload") or {}).items() if k not in LINE_NEUTRAL}
    wkey = repr(("workload", workload, sorted(sized.items())))
    if wkey not in memo:
        memo[wkey] = load_workload(workload, grouped.get("workload") or None)
    wl = memo[wkey]
    lines = 0.0
    for t, table in enumerate(wl.tables):
        per_vector = math.ceil(table.row_bytes / 64)
        lines += wl.batch * wl.table_pooling(t).mean_lookups * per_vector
    # the key that makes it large: the override that multiplies the lines (tables first)
    sizes = ("workload.num_tables", "workload.rows", "workload.tables", "workload.pooling")
    keys = [k for k in (*sizes, "workload.batch", "workload.dim") if k in overrides]
    file = None
    if keys:
        lines_key = keys[0]
    else:  # the workload's own values: the largest factor, at its file where it is one
        lookups = sum(wl.table_pooling(t).mean_lookups for t in range(len(wl.tables)))
        factors = {
            "batch": float(wl.batch),
            "pooling": lookups / max(1, len(wl.tables)),
            "rows": float(len(wl.tables)),
        }
        largest = max(factors, key=factors.__getitem__)
        if workload.endswith(".toml"):
            lines_key, file = largest, workload
        else:
            lines_key = f"workload.{largest}"
    est = Estimate(
        POINT_BASE_BYTES + lines * LINE_BYTES, lines_key, f"{lines:,.0f} 64-B lines", file=file
    )
    mkey = repr(
        (
            "memory", arch, memory, sorted((grouped.get("arch") or {}).items()),
            sorted((grouped.get("memory") or {}).items()),
        )
    )  # fmt: skip
    if mkey not in memo:
        memo[mkey] = _memory_estimate(arch, memory, grouped)
    mem_est = memo[mkey]
    if mem_est is None:
        return est
    if mem_est.bytes_ > lines * LINE_BYTES:
        key = "arch.memory." + mem_est.key
        return Estimate(est.bytes_ + mem_est.bytes_, key, mem_est.detail)
    return Estimate(est.bytes_ + mem_est.bytes_, est.key, est.detail, file=est.file)


def _memory_estimate(arch: str, memory: str | None, grouped: dict[str, Any]) -> Estimate | None:
    """The memory system's state of a design on its memory (None: a design without a DRAM
    memory of its own, a GPU)."""
    spec = load_design_spec(arch, memory)
    mem_args = design_memory_args(spec)
    if mem_args is None:
        return None
    if grouped.get("arch"):
        spec = apply_overrides(spec, grouped["arch"], root="arch")
        mem_args = design_memory_args(spec)
    assert mem_args is not None  # overrides keep a design's own memory
    preset, kwargs = mem_args
    mem = load_memory(preset, overrides=grouped.get("memory") or None, key_root="memory", **kwargs)
    return memory_estimate(mem, 0, key_of_requests="lines", base=0)


def check_sweep(
    points: list[Any], parallel: int, max_memory: str | None = None, flag: str = "--jobs"
) -> None:
    """``nmp evaluate``: the largest point times the points that run at once (one per local
    worker) must fit; else refuse before the first point runs, naming the point and the key."""
    limit, source = limit_bytes(max_memory)
    if limit is None or not points:
        return
    worst: tuple[float, Any, Estimate] | None = None
    memo: dict[str, Any] = {}
    for point in points:
        est = point_estimate(point.arch, point.workload, point.memory, point.overrides, memo)
        if worst is None or est.bytes_ > worst[0]:
            worst = (est.bytes_, point, est)
    assert worst is not None
    need = worst[0] * max(1, min(parallel, len(points)))
    if need <= limit:
        return
    est, point = worst[2], worst[1]
    raise NmpError(
        f"point {point.label()} on {point.workload} needs about {format_bytes(est.bytes_)} "
        f"({est.detail}); with {min(parallel, len(points))} at once "
        f"{format_bytes(need)}, above the limit of {format_bytes(limit)} ({source}; fewer "
        f"{flag} need less)",
        key=est.key,
    )


def sweep_estimate(sweep: Any, file: str) -> Estimate:
    """``nmp evaluate``: the points of a sweep before they are expanded (a few axes of many
    values multiply into more points than memory holds): :data:`SWEEP_POINT_BYTES` each."""
    try:
        points = grid_size(sweep, own_memory)
    except NmpError as exc:  # a design's architecture unknown: the sweep's file and key
        raise SpecError(exc.message, file=exc.file or file, key=exc.key) from None
    sampler = sweep.sampler
    points = sampler.most_points(points, sweep.samples)
    return Estimate(
        POINT_BASE_BYTES + points * SWEEP_POINT_BYTES,
        "samples" if sampler.takes_samples else "axes",
        f"{points:,} points in {file}",
    )
