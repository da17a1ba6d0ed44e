"""``nmp measure host --check``: real lookups on the kit's own workload batches, beside the model
configured from a host preset (docs/host-model.md).

For each skew (the workload's own, and uniform), batch size and thread count (1 and every
core), the same generator gives the batches the model times. Each row is measured from the
state the model times its batch in: the model warms its caches with ``W`` batches from cold
(``breakdown.llc.warmup_batches``) and times the next one; a sample of the check maps every
table's rows through a fresh bijection (:class:`nmp.measure.kernel.RowMap`: the caches hold
none of the rows it reads, as cold as the model's), runs ``W`` batches untimed and times the
next one. Samples repeat until a round has timed at least ``ROUND_LOOKUPS``; the rows take
their rounds in turn (interleaved: a change of load on a shared machine meets every row), and
a row's figure is the median of its rounds. The measured figure is lookups per second of the
busiest thread's CPU time (the batch's time where nothing else runs: the other threads wait for
it at the join, as the model's batch takes its busiest core's time); the model's is ``nmp
run``'s lookups/s of the preset with ``arch.host.threads`` set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.arch.lru_cache import MAX_WARMUP_BATCHES
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
# chosen: rounds per row (its figure is their median) and the lookups a round times at least
# (~1-5 ms of one core; a round of small batches takes several samples)
ROUNDS = 5
ROUND_LOOKUPS = 50_000
# The model warms with at most MAX_WARMUP_BATCHES batches: the check holds that many and one
# more drawn batches per skew and batch size.
POOL_BATCHES = MAX_WARMUP_BATCHES + 1


@dataclass(frozen=True)
class CheckRow:
    kernel: str
    skew: str
    batch: int
    threads: int
    measured: float  # lookups/s (the busiest thread's CPU time): the median of the rounds
    measured_wall: float  # lookups/s (wall clock): the median of the rounds
    model: float  # lookups/s
    model_bottleneck: str
    spread: float = 1.0  # the rounds' fastest / slowest
    rounds: tuple[float, ...] = ()  # each round's lookups/s (CPU time)
    warmup_batches: int = 0  # the model's warm-up, repeated before every timed batch
    timed_lookups: int = 0
    measured_mean_thread: float = 0.0  # lookups/s (every thread's CPU time over the threads)
    preempted: float = 0.0  # the share of timed batches during which a thread was preempted
    # lookups/s (busiest thread's CPU time): the median of the rounds' samples during which no
    # thread was preempted (None: every one was)
    unpreempted: float | None = None

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
            "measured_rounds_lookups_per_s": list(self.rounds),
            "measured_timed_lookups": self.timed_lookups,
            "measured_mean_thread_lookups_per_s": self.measured_mean_thread,
            "measured_preempted_share": self.preempted,
            "measured_unpreempted_lookups_per_s": self.unpreempted,
            "model_warmup_batches": self.warmup_batches,
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
    rounds: int = ROUNDS
    round_lookups: int = ROUND_LOOKUPS
    skipped: dict[str, str] = field(default_factory=dict)  # kernel -> why

    def workload_overrides(self, skew: str, batch: int, rows: tuple[int, ...]) -> dict[str, Any]:
        return {"workload.rows": list(rows), "workload.batch": batch, **SKEWS[skew]}

    def rows(self) -> int:
        return len(SKEWS) * len(self.batches) * len(self.thread_counts)

    def steps(self) -> int:
        """Progress steps: each row's model run and its rounds."""
        return self.rows() * (1 + self.rounds)


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
    if len(dims) != 1 or any(not t.element.holds_float32 for t in wl.tables):
        raise NmpError(f"workload '{workload}': the check fuses tables of one dim, float32")
    return tuple(min(t.rows, max_rows) for t in wl.tables), dims.pop()


@dataclass(frozen=True)
class ModelPoint:
    lookups_per_s: float
    bottleneck: str
    warmup_batches: int  # the batches that warmed its caches before the timed one


def model_point(plan: CheckPlan, skew: str, batch: int, threads: int, rows) -> ModelPoint:
    from nmp.evaluate.point import run_point

    ov = plan.workload_overrides(skew, batch, rows)
    ov["arch.host.threads"] = threads
    res = run_point(plan.preset, plan.workload, None, ov, seed=plan.seed).to_json()
    bd = res.get("breakdown") or {}
    # a host without an LLC reports no warm-up: it warms its L1 and L2 with at most
    # MAX_WARMUP_BATCHES batches (chosen: that many, the longest warm-up it can have)
    warm = int((bd.get("llc") or {}).get("warmup_batches", MAX_WARMUP_BATCHES))
    return ModelPoint(float(res["lookups_per_s"]), str(bd.get("bottleneck", "")), warm)


@dataclass
class _Row:
    skew: str
    batch: int
    threads: int
    model: ModelPoint
    samples: dict[str, list[list[Any]]] = field(default_factory=dict)  # kernel -> rounds


def run_check(
    plan: CheckPlan,
    on_row: Callable[[CheckRow], None],
    on_step: Callable[[], None] = lambda: None,
) -> list[CheckRow]:
    """Every row of the plan: measured (embedding_bag, and FBGEMM's TBE where it imports)
    beside the model; ``on_step`` after each model run and each row's round."""
    from nmp.measure import kernel
    from nmp.workload.batch import generate_batch
    from nmp.workload.spec import load_workload

    torch = kernel.torch_quiet()
    rows, dim = capped_rows(plan.workload, plan.seed, plan.max_rows)
    rows_arr = np.asarray(rows, dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    gen = torch.Generator().manual_seed(plan.seed)
    weights = torch.rand(int(base[-1]), dim, generator=gen)
    runners: dict[str, Callable] = {"embedding_bag": kernel.embedding_bag_runner(weights)}
    tbe, why = kernel.fbgemm_runner(rows, dim, plan.seed)
    if tbe is None:
        plan.skipped["fbgemm_tbe"] = str(why)
    else:
        runners["fbgemm_tbe"] = tbe
    pools: dict[tuple[str, int], list[kernel.PoolBatch]] = {}
    todo: list[_Row] = []
    for skew, batch in _cases(plan):
        wl = load_workload(
            plan.workload, overrides=_strip(plan.workload_overrides(skew, batch, rows))
        )
        # other draws of the same distribution than the model's (its seeds are its own)
        pools[skew, batch] = [
            kernel.pool_batch(generate_batch(wl, seed=plan.seed + 1000 + k))
            for k in range(POOL_BATCHES)
        ]
        for threads in plan.thread_counts:
            todo.append(_Row(skew, batch, threads, model_point(plan, skew, batch, threads, rows)))
            on_step()
    rng = np.random.default_rng(plan.seed)
    for _ in range(plan.rounds):
        for row in todo:
            pool = pools[row.skew, row.batch]
            for name, run in runners.items():
                got = _round(plan, run, pool, row, rows_arr, base, rng)
                row.samples.setdefault(name, []).append(got)
            on_step()
    out = [_result(name, row) for row in todo for name in runners]
    for r in out:
        on_row(r)
    return out


def _round(plan: CheckPlan, run, pool, row: _Row, rows_arr, base, rng) -> list[float]:
    """One round of a row: samples (fresh row map, the model's warm-up, one timed batch)
    until ``plan.round_lookups`` are timed; [lookups, busiest thread's CPU s, every thread's
    CPU s, wall s, samples, preempted samples, and the lookups and busiest thread's CPU s of
    the samples during which no thread was preempted]."""
    from nmp.measure import kernel

    warm_n = min(row.model.warmup_batches, len(pool) - 1)
    k = int(rng.integers(len(pool)))
    tally = np.zeros(8)
    while tally[0] < plan.round_lookups or not tally[0]:
        m = kernel.RowMap.draw(rows_arr, rng)
        batches = [pool[(k + i) % len(pool)] for i in range(warm_n + 1)]
        k += 1
        fused = [kernel.fuse_mapped(b, rows_arr, base, m) for b in batches]
        s = kernel.timed_after_warmup(run, fused[:-1], fused[-1], row.threads)
        clean = (s.lookups, s.busiest_s) if not s.preempted else (0, 0.0)
        tally += (s.lookups, s.busiest_s, s.cpu_s, s.wall_s, 1, s.preempted, *clean)
    return [float(x) for x in tally]


def _result(name: str, row: _Row) -> CheckRow:
    """A row's figures: the median of its rounds (lookups per second of the busiest thread's
    CPU time, of every thread's CPU time over the threads, and of the wall clock)."""
    r = np.asarray(row.samples[name], dtype=float)
    cpu = r[:, 0] / np.maximum(r[:, 1], 1e-12)
    mean_thread = r[:, 0] / np.maximum(r[:, 2] / row.threads, 1e-12)
    wall = r[:, 0] / np.maximum(r[:, 3], 1e-12)
    clean = r[r[:, 6] > 0]
    unpreempted = float(np.median(clean[:, 6] / clean[:, 7])) if clean.size else None
    return CheckRow(
        name,
        row.skew,
        row.batch,
        row.threads,
        float(np.median(cpu)),
        float(np.median(wall)),
        row.model.lookups_per_s,
        row.model.bottleneck,
        float(cpu.max() / max(cpu.min(), 1e-9)),
        tuple(float(x) for x in cpu),
        row.model.warmup_batches,
        int(r[:, 0].sum()),
        float(np.median(mean_thread)),
        float(r[:, 5].sum() / max(r[:, 4].sum(), 1.0)),
        unpreempted,
    )


def _cases(plan: CheckPlan) -> Iterator[tuple[str, int]]:
    for skew in SKEWS:
        for batch in plan.batches:
            yield skew, batch


def _strip(overrides: dict[str, Any]) -> dict[str, Any]:
    """Workload overrides without their 'workload.' prefix (load_workload's form)."""
    return {k.split(".", 1)[1]: v for k, v in overrides.items()}


__all__ = [
    "CheckPlan",
    "CheckRow",
    "ModelPoint",
    "capped_rows",
    "model_point",
    "parse_batches",
    "run_check",
]
