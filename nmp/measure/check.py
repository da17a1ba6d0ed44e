"""``nmp measure host --check``: real lookups on the kit's own workload batches, beside the model
configured from a host preset (docs/host-model.md).

For each skew (the workload's own, and uniform), batch size and thread count (1 and every
core), the same generator and seeds give the batches the model times: the warm-up batches
first (the caches at steady state, as the model's), then the timed ones. The measured figure
is lookups per second of the threads' CPU time (:mod:`nmp.measure.kernel`); the model's is
``nmp run``'s lookups/s of the preset with ``arch.host.threads`` set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.errors import NmpError

# The skews a check runs: each step's workload overrides (skewed: the workload's own locality).
SKEWS: dict[str, dict[str, Any]] = {
    "skewed": {},
    "uniform": {"workload.distribution": "uniform"},
}
DEFAULT_BATCHES = (8, 32, 128)
# chosen: the check's fused table must fit a small machine: each table's rows capped at this
# (recross-eval's fused 33.8 M x 256 B table is 8.6 GB; capped: 3.1 M rows, 0.79 GB, still
# beyond this kit's reference machines' LLC)
DEFAULT_MAX_ROWS = 500_000
TOLERANCE = 0.25  # the done-when: model within +-25 % of measured
WARM_BATCHES = 8  # chosen: batches run before timing (the caches' steady state)
# chosen: each row times GROUPS groups of fresh batches, each group at least GROUP_LOOKUPS
# lookups (~5-20 ms of one core), and keeps the fastest group (the least disturbed by other
# programs); the groups' spread is reported
GROUPS = 3
GROUP_LOOKUPS = 200_000


@dataclass(frozen=True)
class CheckRow:
    kernel: str
    skew: str
    batch: int
    threads: int
    measured: float  # lookups/s (threads' CPU time)
    measured_wall: float  # lookups/s (wall clock)
    model: float  # lookups/s
    model_bottleneck: str
    spread: float = 1.0  # the measured groups' slowest / fastest

    @property
    def ratio(self) -> float:
        """model / measured."""
        return self.model / self.measured if self.measured else float("inf")

    @property
    def within(self) -> bool:
        return abs(self.ratio - 1.0) <= TOLERANCE

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "skew": self.skew,
            "batch": self.batch,
            "threads": self.threads,
            "measured_lookups_per_s": self.measured,
            "measured_wall_lookups_per_s": self.measured_wall,
            "model_lookups_per_s": self.model,
            "model_bottleneck": self.model_bottleneck,
            "measured_spread": self.spread,
            "ratio": self.ratio,
            "within_tolerance": self.within,
        }


@dataclass
class CheckPlan:
    preset: str  # an arch preset name or TOML path
    workload: str = "recross-eval"
    batches: tuple[int, ...] = DEFAULT_BATCHES
    thread_counts: tuple[int, ...] = (1,)
    max_rows: int = DEFAULT_MAX_ROWS
    seed: int = 0
    groups: int = GROUPS
    group_lookups: int = GROUP_LOOKUPS
    skipped: dict[str, str] = field(default_factory=dict)  # kernel -> why

    def workload_overrides(self, skew: str, batch: int, rows: tuple[int, ...]) -> dict[str, Any]:
        return {"workload.rows": list(rows), "workload.batch": batch, **SKEWS[skew]}

    def rows(self) -> int:
        return len(SKEWS) * len(self.batches) * len(self.thread_counts)


def parse_batches(text: str) -> tuple[int, ...]:
    """'8,32,128' -> (8, 32, 128); one-line errors for anything else."""
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise NmpError(f"--batches {text!r}: give positive integers separated by commas") from None
    if not out or min(out) < 1:
        raise NmpError(f"--batches {text!r}: give positive integers separated by commas")
    return out


def capped_rows(workload: str, seed: int, max_rows: int) -> tuple[tuple[int, ...], int]:
    """(each table's rows, capped at ``max_rows``; the tables' common dim)."""
    from nmp.workload.spec import load_workload

    wl = load_workload(workload)
    dims = {t.dim for t in wl.tables}
    if len(dims) != 1 or any(t.dtype != "float32" for t in wl.tables):
        raise NmpError(f"workload '{workload}': the check fuses tables of one dim, float32")
    return tuple(min(t.rows, max_rows) for t in wl.tables), dims.pop()


def model_lookups_per_s(plan: CheckPlan, skew: str, batch: int, threads: int, rows) -> tuple:
    from nmp.evaluate.point import run_point

    ov = plan.workload_overrides(skew, batch, rows)
    ov["arch.host.threads"] = threads
    res = run_point(plan.preset, plan.workload, None, ov, seed=plan.seed).to_json()
    return float(res["lookups_per_s"]), str((res.get("breakdown") or {}).get("bottleneck", ""))


def run_check(plan: CheckPlan, on_row: Callable[[CheckRow], None]) -> list[CheckRow]:
    """Every row of the plan: measured (embedding_bag, and FBGEMM's TBE where it imports)
    beside the model."""
    from nmp.measure import kernel
    from nmp.workload.batch import generate_batch
    from nmp.workload.spec import load_workload

    torch = kernel.torch_quiet()
    rows, dim = capped_rows(plan.workload, plan.seed, plan.max_rows)
    base = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    gen = torch.Generator().manual_seed(plan.seed)
    weights = torch.rand(int(base[-1]), dim, generator=gen)
    runners: dict[str, Callable] = {"embedding_bag": kernel.embedding_bag_runner(weights)}
    tbe, why = kernel.fbgemm_runner(rows, dim, plan.seed)
    if tbe is None:
        plan.skipped["fbgemm_tbe"] = str(why)
    else:
        runners["fbgemm_tbe"] = tbe
    out: list[CheckRow] = []
    for skew, batch in _cases(plan):
        wl = load_workload(
            plan.workload, overrides=_strip(plan.workload_overrides(skew, batch, rows))
        )
        # the model's warm-up seeds are its own; the check warms with other draws of the
        # same distribution and times the model's timed seeds onwards
        warm = [
            kernel.fuse(generate_batch(wl, seed=plan.seed + 1000 + k), base)
            for k in range(WARM_BATCHES)
        ]
        per_batch = max(kernel.fuse(generate_batch(wl, seed=plan.seed), base).lookups, 1)
        per_group = -(-plan.group_lookups // per_batch)
        groups = [
            [
                kernel.fuse(generate_batch(wl, seed=plan.seed + g * per_group + k), base)
                for k in range(per_group)
            ]
            for g in range(plan.groups)
        ]
        for threads in plan.thread_counts:
            model, bottleneck = model_lookups_per_s(plan, skew, batch, threads, rows)
            for name, run in runners.items():
                t = kernel.timed_lookups_per_s(run, warm, groups, threads)
                row = CheckRow(
                    name, skew, batch, threads, t.cpu_rate, t.wall_rate, model, bottleneck, t.spread
                )
                out.append(row)
                on_row(row)
    return out


def _cases(plan: CheckPlan) -> Iterator[tuple[str, int]]:
    for skew in SKEWS:
        for batch in plan.batches:
            yield skew, batch


def _strip(overrides: dict[str, Any]) -> dict[str, Any]:
    """Workload overrides without their 'workload.' prefix (load_workload's form)."""
    return {k.split(".", 1)[1]: v for k, v in overrides.items()}


__all__ = ["CheckPlan", "CheckRow", "capped_rows", "parse_batches", "run_check"]
