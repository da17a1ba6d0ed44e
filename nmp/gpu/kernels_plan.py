"""The real MICRO'24 kernels' launches, built and checked on the CPU: the variants a GPU
preset defines (:class:`RealVariant`), each table's arrays and hot rows (:class:`TablePlan`,
from the batch ``nmp run`` models and its profile batch), the launch arguments, and the checks
``benchmarks/gpu_kernels.py --dry-run`` runs in CI (:func:`check_plan`). What runs them on a
GPU and records the times is :mod:`nmp.gpu.kernels_real`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.gpu.hot_layout import (
    check_window,
    hot_first_order,
    remap_indices,
    window_bytes,
    window_hit_ratio,
)
from nmp.gpu.options import PINNING_MECHANISMS
from nmp.gpu.point import PROFILE_SEED_OFFSET
from nmp.gpu.spec import GpuSpec, load_gpu
from nmp.gpu.stage_pinning import hot_rows

BLOCK = (32, 8, 1)  # torch's block for this kernel
GRID = 1024  # torch's grid (fixed, independent of the batch)
PIN_THREADS = 256


@dataclass(frozen=True)
class RealVariant:
    """One real kernel configuration and the model point that describes it."""

    name: str
    description: str
    model_variant: str
    model_overrides: dict[str, Any] = field(default_factory=dict)
    nvrtc: bool = False  # the hand-written kernel (else torch's own)
    prefetch: int = 1  # rows loaded before summing (hand-written kernel)
    maxrregcount: int = 0  # 0: no cap
    # an L2 pinning mechanism of the model (nmp.gpu.options.PINNING_MECHANISMS), "" for none:
    # the real kernel does what its switches say
    pinning: str = ""
    hot_first: bool = False  # runs on the table laid out hot rows first (nmp.gpu.hot_layout)
    # The variant this one is the control for: the same kernel and layout without that
    # variant's mechanism (reported beside it, judged by no issue #37 criterion); "" if none.
    control_for: str = ""

    @property
    def pre_kernel(self) -> bool:
        """An evict_last pre-kernel pins the hottest rows before the table's kernel."""
        return bool(self.pinning) and PINNING_MECHANISMS.get(self.pinning).pre_kernel

    @property
    def access_window(self) -> bool:
        """The kernel runs under an access-policy window over the hot rows laid out first."""
        return bool(self.pinning) and PINNING_MECHANISMS.get(self.pinning).access_window


def real_variants(gpu: GpuSpec) -> dict[str, RealVariant]:
    """The variants as this GPU preset's kernel spec defines them."""
    k = gpu.kernel
    return {
        v.name: v
        for v in (
            RealVariant("baseline", "torch EmbeddingBag (stock kernel)", "baseline"),
            RealVariant(
                "occupancy",
                f"torch's work split, --maxrregcount={k.maxrregcount}",
                "occupancy",
                nvrtc=True,
                maxrregcount=k.maxrregcount,
            ),
            RealVariant(
                "prefetch",
                f"torch's work split, {1 + k.prefetch_distance} rows loaded before summing",
                "prefetch",
                nvrtc=True,
                prefetch=1 + k.prefetch_distance,
            ),
            RealVariant(
                "pinning",
                f"stock kernel after an evict_last pre-kernel over {gpu.pinning.rows} hot rows",
                "pinning",
                {"pinning.mechanism": "evict_last_prefetch", "pinning.scope": "per_table"},
                pinning="evict_last_prefetch",
            ),
            RealVariant(
                "pinning-window",
                f"stock kernel, table laid out hot rows first, an access-policy window over its "
                f"{gpu.pinning.rows} hot rows",
                "pinning",
                {"pinning.mechanism": "access_window", "pinning.hit_ratio": 0.0},
                pinning="access_window",
                hot_first=True,
            ),
            RealVariant(
                "layout-hot-first",
                f"stock kernel, table laid out hot rows first ({gpu.pinning.rows} hot rows), "
                "no window: the window's control",
                "baseline",
                {"layout": "hot_first"},
                hot_first=True,
                control_for="pinning-window",
            ),
        )
    }


@dataclass
class TablePlan:
    """One table's launch: its arrays (host), the kernels' arguments and the hot rows."""

    rows: int
    dim: int
    indices: np.ndarray
    offsets: np.ndarray  # batch + 1 entries (CSR); torch and the kernel take the first batch
    hot: np.ndarray  # hottest rows of the profile batch, hottest first

    @property
    def bags(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def row_bytes(self) -> int:
        return self.dim * 4

    @property
    def window_bytes(self) -> int:
        """The access-policy window over the hot rows laid out first."""
        return window_bytes(self.hot.shape[0], self.row_bytes)


def window_layout(table: TablePlan) -> tuple[np.ndarray, np.ndarray]:
    """(order, remapped indices) of ``table`` laid out hot rows first: the window variant runs
    ``weight[order]`` with the remapped indices (:mod:`nmp.gpu.hot_layout`)."""
    order = hot_first_order(table.rows, table.hot)
    return order, remap_indices(table.indices, order)


@dataclass
class Plan:
    arch: str
    gpu: GpuSpec
    workload: str
    overrides: dict[str, Any]
    seed: int
    tables: list[TablePlan]
    variants: dict[str, RealVariant]
    set_aside_bytes: int

    def window_ratio(self, table: TablePlan) -> float:
        """The window's hitRatio over ``table``'s hot rows (as the model takes it)."""
        return window_hit_ratio(
            self.set_aside_bytes, table.window_bytes, self.gpu.pinning.hit_ratio
        )


def build_plan(
    arch: str,
    workload: str,
    overrides: dict[str, Any] | None = None,
    seed: int = 0,
    variants: list[str] | None = None,
) -> Plan:
    """The batch ``nmp run`` models for this point (same generator and seed), the profile batch
    the pinned rows come from, and the variants to run."""
    from nmp.workload import generate_batch, load_workload

    overrides = dict(overrides or {})
    gpu = load_gpu(arch)
    spec = load_workload(workload, overrides)
    batch = generate_batch(spec, seed=seed)
    profile = generate_batch(spec, seed=seed + PROFILE_SEED_OFFSET)
    all_variants = real_variants(gpu)
    chosen = variants or list(all_variants)
    unknown = [v for v in chosen if v not in all_variants]
    if unknown:
        raise NmpError(f"unknown real variant '{unknown[0]}' (known: {', '.join(all_variants)})")
    tables = []
    for t, (table, lookups) in enumerate(zip(spec.tables, batch.tables, strict=True)):
        if not table.element.holds_float32:
            raise NmpError(f"table {t}: the real kernels run fp32 tables only ({table.dtype})")
        ((_, hot),) = hot_rows(profile, gpu.pinning.rows, [t])
        tables.append(
            TablePlan(
                rows=table.rows,
                dim=table.dim,
                indices=np.ascontiguousarray(lookups.indices, dtype=np.int64),
                offsets=np.ascontiguousarray(lookups.offsets, dtype=np.int64),
                hot=np.ascontiguousarray(hot, dtype=np.int64),
            )
        )
    set_aside = int(gpu.pinning.set_aside_fraction * gpu.l2.size_bytes)
    return Plan(
        arch,
        gpu,
        workload,
        overrides,
        seed,
        tables,
        {v: all_variants[v] for v in chosen},
        set_aside,
    )


def launch_args(table: TablePlan) -> tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]:
    """(grid, block, scalar arguments) of the hand-written kernel for ``table``."""
    scalars = {
        "num_bags": table.bags,
        "num_indices": int(table.indices.shape[0]),
        "dim": table.dim,
    }
    return (GRID, 1, 1), BLOCK, scalars


def pin_launch(table: TablePlan) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(grid, block, lines) of the evict_last pre-kernel over ``table``'s hot rows."""
    lines = table.hot.shape[0] * -(-table.row_bytes // 128)
    blocks = max(1, min(-(-lines // PIN_THREADS), 65535))
    return (blocks, 1, 1), (PIN_THREADS, 1, 1), lines


def check_plan(plan: Plan) -> list[str]:
    """Check every launch's arrays and arguments on the CPU; one line per table (and one per
    table for its window where a variant runs one: :func:`check_window_plan`). Raises
    :class:`NmpError` naming the table on the first mismatch."""
    lines = []
    for t, tb in enumerate(plan.tables):
        off, idx = tb.offsets, tb.indices
        if off[0] != 0 or off[-1] != idx.shape[0] or np.any(np.diff(off) < 0):
            raise NmpError(f"table {t}: offsets do not delimit the indices")
        if idx.size and (idx.min() < 0 or idx.max() >= tb.rows):
            raise NmpError(f"table {t}: an index lies outside its {tb.rows} rows")
        if tb.hot.size and (tb.hot.min() < 0 or tb.hot.max() >= tb.rows):
            raise NmpError(f"table {t}: a hot row lies outside the table")
        grid, block, scalars = launch_args(tb)
        if scalars["num_bags"] * -(-tb.dim // 32) < 1 or block[0] != 32:
            raise NmpError(f"table {t}: no chunk to run")
        pgrid, _, plines = pin_launch(tb)
        if tb.rows * tb.row_bytes >= 2**63 or plines < tb.hot.shape[0]:
            raise NmpError(f"table {t}: the pre-kernel's lines do not cover its rows")
        window = any(v.access_window for v in plan.variants.values())
        layout = any(v.hot_first for v in plan.variants.values())
        window_line = (
            check_window_plan(plan, t) if window else check_layout_plan(plan, t) if layout else ""
        )
        lines.append(
            f"table {t}: weight ({tb.rows}, {tb.dim}) fp32, indices ({idx.shape[0]},) int64, "
            f"offsets ({tb.bags},) int64; kernel grid {grid[0]} x block {block[:2]}, "
            f"{scalars['num_bags']} bags; pre-kernel {pgrid[0]} blocks over {plines} lines "
            f"of {tb.hot.shape[0]} hot rows"
        )
        if window_line:
            lines.append(f"table {t}: {window_line}")
    return lines


def check_layout_plan(plan: Plan, t: int) -> str:
    """The hot-first layout of table ``t`` (both ``hot_first`` variants), on the CPU: the order
    is a permutation with the hot rows first and every remapped index reads the row it read
    before (so the output is the unpermuted one, bit for bit). Raises :class:`NmpError` naming
    the table; returns a line saying what it checked."""
    tb = plan.tables[t]
    order, remapped = window_layout(tb)
    if not np.array_equal(np.sort(order), np.arange(tb.rows)):
        raise NmpError(f"table {t}: the hot-first layout is not a permutation of its rows")
    if not np.array_equal(order[: tb.hot.shape[0]], tb.hot):
        raise NmpError(f"table {t}: the hot rows are not the layout's first rows")
    if not np.array_equal(order[remapped], tb.indices):
        raise NmpError(f"table {t}: a remapped index reads another row than before")
    return f"{tb.hot.shape[0]} hot rows laid out first, every remapped index reads its old row"


def check_window_plan(plan: Plan, t: int) -> str:
    """The window variant's layout (:func:`check_layout_plan`) and limits for table ``t``, on the
    CPU: the window fits the preset's ``pinning.max_window_bytes`` and the set-aside its L2's
    persisting maximum. Raises :class:`NmpError` naming the table; returns a line saying what
    it checked."""
    tb = plan.tables[t]
    check_layout_plan(plan, t)
    nbytes = tb.window_bytes
    check_window(nbytes, plan.gpu.pinning.max_window_bytes, f"table {t}")
    ratio = plan.window_ratio(tb)
    if not 0.0 < ratio <= 1.0:
        raise NmpError(f"table {t}: the window's hitRatio {ratio} lies outside (0, 1]")
    return (
        f"window over {tb.hot.shape[0]} hot rows laid out first, {nbytes:,} B <= "
        f"{plan.gpu.pinning.max_window_bytes:,} B, hitRatio {ratio:.3f}, set-aside "
        f"{plan.set_aside_bytes:,} B"
    )


def check_set_aside(nbytes: int, max_bytes: int) -> None:
    """``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)`` accepts at most
    ``cudaDevAttrMaxPersistingL2CacheSize``: say so before."""
    if nbytes > max_bytes:
        raise NmpError(
            f"a persisting L2 set-aside of {nbytes:,} B exceeds the device's largest, "
            f"{max_bytes:,} B (cudaDevAttrMaxPersistingL2CacheSize)"
        )


def reference_sums(table: TablePlan, weight: np.ndarray, bags: int = 4) -> np.ndarray:
    """The first ``bags`` bags' sums in index order in fp32 (the kernels' order), on the CPU:
    the dry run's check that the offsets convention gives each bag its own lookups."""
    out = np.zeros((bags, table.dim), dtype=np.float32)
    for b in range(min(bags, table.bags)):
        for e in range(table.offsets[b], table.offsets[b + 1]):
            out[b] += weight[table.indices[e]]
    return out
