"""RecShard's placement as a mixed-integer linear program (Sethi et al., ASPLOS'22).

Each table goes to one GPU; within it, rows are split between the GPU's HBM and the host tier
by their profiled frequency. Rows are grouped into frequency classes (:mod:`nmp.shard.stats`),
so Criteo Terabyte's 49M rows are ~300 classes. Variables: ``x[t, g]`` (binary: table t on GPU
g) and ``m[t, k, g]`` (rows of class k of table t in GPU g's HBM, 0..n_k). With the linearized
costs of :func:`nmp.shard.cost.coefficients` (per table: fixed kernel time F_t, time per HBM
lookup h_t, per host lookup s_t; A_t lookups per batch, a_tk those of class k, n_k its rows):

    cost_g = sum_t x[t,g] (F_t + s_t A_t) - sum_{t,k} m[t,k,g] (s_t - h_t) a_tk / n_k
    min z + eps sum_g cost_g    s.t.  sum_g x[t,g] = 1
                                      m[t,k,g] <= n_k x[t,g]
                                      sum_{t,k} m[t,k,g] row_bytes_t <= HBM_g
                                      cost_g <= z
                                      cost_g >= cost_{g+1}   (identical GPUs: breaks symmetry)

``eps`` (1e-3, chosen) prefers the least total time among placements with the same slowest GPU.
HiGHS (``scipy.optimize.milp``) solves it within ``time_limit_s``; the gap is reported. By
default ``m`` is continuous (rows in a class are interchangeable; rounding down loses under one
row per class); ``integer_rows=True`` makes it exact at row granularity. Classes never touched
in the profile get no variable; HBM left over after the solve is filled with the GPU's
remaining rows, hottest class first (it can only help rows the profile did not see). With
``unseen="good-turing"`` the never-seen rows form a class with the Good-Turing share of the
lookups, so the program itself weighs them (an extension, not in the paper).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from nmp.errors import NmpError
from nmp.shard.placement import Placement, TablePlacement
from nmp.shard.registry import ShardProblem, register

EPS = 1e-3
ORDER_GPUS = True
MIP_REL_GAP = 1e-3  # chosen: HiGHS stops within 0.1 % of the bound


@dataclass(frozen=True)
class _Program:
    """The program's index space and coefficients (the module docstring's notation): costs in
    microseconds and capacities in GiB, so that HiGHS sees coefficients near 1."""

    gpus: int
    classes: list  # per table, its frequency classes
    pairs: list[tuple[int, int]]  # the (table, class) pairs that get an m variable
    fixed: np.ndarray  # per table: F_t + s_t A_t
    gain: np.ndarray  # per pair: (s_t - h_t) a_tk / n_k
    n_rows: np.ndarray  # per pair: n_k
    rbytes: np.ndarray  # per pair: the table's row bytes, in GiB

    @property
    def n_x(self) -> int:
        return len(self.fixed) * self.gpus

    @property
    def n_y(self) -> int:
        return len(self.pairs) * self.gpus

    @property
    def n_var(self) -> int:  # x[t, g] table-major, then m[p, g] pair-major, then z
        return self.n_x + self.n_y + 1

    def xi(self, t: int, g: int) -> int:
        return t * self.gpus + g

    def yi(self, p: int, g: int) -> int:
        return self.n_x + p * self.gpus + g


def _program(problem: ShardProblem) -> _Program:
    """The variables: every table on every GPU, and the (table, class) pairs that carry
    accesses and gain from HBM."""
    stats = problem.stats.tables
    classes = [s.classes(problem.unseen) for s in stats]
    pairs = [
        (t, k)
        for t in range(len(stats))
        for k, c in enumerate(classes[t])
        if c.accesses_per_batch > 0
        and problem.coef[t].slow_ns_per_lookup > problem.coef[t].hbm_ns_per_lookup
    ]
    us, gib = 1e-3, 1.0 / 2**30
    fixed = (
        np.array(
            [
                c.fixed_ns + c.slow_ns_per_lookup * s.lookups_per_batch
                for c, s in zip(problem.coef, stats, strict=True)
            ]
        )
        * us
    )
    gain = (
        np.array(
            [
                (problem.coef[t].slow_ns_per_lookup - problem.coef[t].hbm_ns_per_lookup)
                * classes[t][k].density
                for t, k in pairs
            ]
        )
        * us
    )
    n_rows = np.array([classes[t][k].n_rows for t, k in pairs], dtype=float)
    rbytes = np.array([stats[t].row_bytes for t, _ in pairs], dtype=float) * gib
    return _Program(problem.gpus, classes, pairs, fixed, gain, n_rows, rbytes)


def _table_lower_bounds(prog: _Program, cap_gib: float) -> np.ndarray:
    """Per table: its cost alone on one GPU, the HBM filled by gain per byte (fractional
    knapsack: optimal for one table when rows are divisible)."""
    gain, rbytes, n_rows = prog.gain, prog.rbytes, prog.n_rows
    lb = prog.fixed.copy()
    for t in range(len(lb)):
        mine = [p for p, (tt, _) in enumerate(prog.pairs) if tt == t]
        mine.sort(key=lambda p: -gain[p] / rbytes[p])
        free = cap_gib
        for p in mine:
            take = min(n_rows[p], free / rbytes[p])
            lb[t] -= take * gain[p]
            free -= take * rbytes[p]
            if free <= 0:
                break
    return lb


class _Rows:
    """A sparse constraint matrix, a row at a time: ``low <= sum of entries <= high``."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    @property
    def count(self) -> int:
        return len(self.lo)

    def add(self, entries, low: float, high: float) -> None:
        r = self.count
        for c, v in entries:
            self.rows.append(r)
            self.cols.append(c)
            self.vals.append(v)
        self.lo.append(low)
        self.hi.append(high)

    def constraint(self, n_var: int) -> LinearConstraint:
        a = coo_matrix((self.vals, (self.rows, self.cols)), shape=(self.count, n_var)).tocsr()
        return LinearConstraint(a, self.lo, self.hi)


def _constraints(prog: _Program, cap_gib: float, lb: np.ndarray) -> _Rows:
    """Assignment, class rows within their table's GPU, HBM capacity, each GPU's cost under z,
    the GPUs' order (symmetry) and the valid cuts from the tables' lower bounds."""
    n_t, n_g, n_p, zi = len(prog.fixed), prog.gpus, len(prog.pairs), prog.n_var - 1
    rows = _Rows()
    for t in range(n_t):
        rows.add([(prog.xi(t, g), 1.0) for g in range(n_g)], 1.0, 1.0)
    for p, (t, _) in enumerate(prog.pairs):
        for g in range(n_g):
            rows.add([(prog.yi(p, g), 1.0), (prog.xi(t, g), -prog.n_rows[p])], -np.inf, 0.0)
    # capacity rows as a fraction of the HBM (a row's share is then far above HiGHS's 1e-7
    # feasibility tolerance, which a GiB-scaled row would not be)
    share = prog.rbytes / cap_gib if cap_gib > 0 else np.full(n_p, 1e9)
    for g in range(n_g):
        rows.add([(prog.yi(p, g), share[p]) for p in range(n_p)], -np.inf, 1.0)

    def cost_row(g, sign=1.0):
        return [(prog.xi(t, g), sign * prog.fixed[t]) for t in range(n_t)] + [
            (prog.yi(p, g), -sign * prog.gain[p]) for p in range(n_p)
        ]

    for g in range(n_g):
        rows.add([*cost_row(g), (zi, -1.0)], -np.inf, 0.0)
    for g in range(n_g - 1 if ORDER_GPUS else 0):
        rows.add(cost_row(g) + cost_row(g + 1, -1.0), 0.0, np.inf)
    # Valid cuts: a table costs at least its cost alone on a GPU with the whole HBM (lb_t), so
    # z >= sum of lb_t over each GPU's tables. They tighten the LP bound (without them HiGHS
    # finds the optimum at once but cannot prove it within minutes).
    for g in range(n_g):
        rows.add([(zi, 1.0)] + [(prog.xi(t, g), -lb[t]) for t in range(n_t)], 0.0, np.inf)
    return rows


def _objective_and_bounds(prog: _Program, lb: np.ndarray, integer_rows: bool):
    """(objective, bounds, integrality) in variable order."""
    n_g = prog.gpus
    c = np.concatenate([EPS * np.repeat(prog.fixed, n_g), -EPS * np.repeat(prog.gain, n_g), [1.0]])
    upper = np.concatenate([np.ones(prog.n_x), np.repeat(prog.n_rows, n_g), [np.inf]])
    # Some GPU holds at least ceil(T/G) tables, each costing at least its lb_t: z is at least
    # the sum of the ceil(T/G) smallest lb_t (closes the bin-packing gap the LP leaves).
    z_min = float(np.sort(lb)[: -(-len(lb) // n_g)].sum())
    lower = np.concatenate([np.zeros(prog.n_var - 1), [z_min]])
    integrality = np.concatenate(
        [np.ones(prog.n_x), np.full(prog.n_y, 1 if integer_rows else 0), [0]]
    ).astype(int)
    return c, Bounds(lower, upper), integrality


def _table_placements(problem: ShardProblem, prog: _Program, x: np.ndarray) -> tuple:
    """Each table's GPU and HBM rows from the solution ``x`` (classes' rows rounded down,
    the HBM left over filled)."""
    stats, n_t, n_g = problem.stats.tables, len(prog.fixed), prog.gpus
    owner = np.argmax(x[: prog.n_x].reshape(n_t, n_g), axis=1)
    take = np.floor(x[prog.n_x : prog.n_x + prog.n_y].reshape(len(prog.pairs), n_g) + 1e-6)
    counts = [np.zeros(len(cl), dtype=np.int64) for cl in prog.classes]
    for p, (t, k) in enumerate(prog.pairs):
        counts[t][k] = int(min(take[p, owner[t]], prog.classes[t][k].n_rows))
    _fill_leftover(problem, prog.classes, owner, counts)
    return tuple(
        TablePlacement(
            int(owner[t]), stats[t].num_rows, _rows(stats[t], prog.classes[t], counts[t])
        )
        for t in range(n_t)
    )


def solve(problem: ShardProblem, *, integer_rows: bool = False) -> Placement:
    problem.check_capacity()
    t0 = time.perf_counter()
    prog = _program(problem)
    cap_gib = problem.hbm_bytes_per_gpu / 2**30
    lb = _table_lower_bounds(prog, cap_gib)
    rows = _constraints(prog, cap_gib, lb)
    c, bounds, integrality = _objective_and_bounds(prog, lb, integer_rows)
    with _quiet_stdout():
        res = milp(
            c,
            constraints=rows.constraint(prog.n_var),
            integrality=integrality,
            bounds=bounds,
            options={"time_limit": problem.time_limit_s, "mip_rel_gap": MIP_REL_GAP},
        )
    if res.x is None:
        raise NmpError(f"RecShard MILP found no placement ({res.message})")
    solve_s = time.perf_counter() - t0
    placed = _table_placements(problem, prog, res.x)
    info = {
        "status": res.message,
        "mip_gap": float(getattr(res, "mip_gap", 0.0) or 0.0),
        "objective_us": float(res.x[prog.n_var - 1]),
        "variables": prog.n_var,
        "binaries": prog.n_x,
        "constraints": rows.count,
        "classes": len(prog.pairs),
        "integer_rows": integer_rows,
    }
    return Placement("recshard", prog.gpus, placed, solve_s, info)


@contextlib.contextmanager
def _quiet_stdout():
    """Send the solver's stray prints (HiGHS writes some debugging lines to file descriptor 1
    even with output off) to stderr, so that ``nmp shard --json`` stays valid JSON."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _fill_leftover(problem, classes, owner, counts) -> None:
    stats = problem.stats.tables
    for g in range(problem.gpus):
        mine = [t for t in range(len(stats)) if owner[t] == g]
        used = sum(int(counts[t].sum()) * stats[t].row_bytes for t in mine)
        free = problem.hbm_bytes_per_gpu - used
        # the solver's tolerances may leave a GPU a fraction of a row over: drop coldest rows
        pairs = [(t, k) for t in mine for k in range(len(classes[t]))]
        for t, k in sorted(pairs, key=lambda tk: (classes[tk[0]][tk[1]].density, tk)):
            if free < 0:
                drop = min(int(counts[t][k]), -(free // stats[t].row_bytes))
                counts[t][k] -= drop
                free += drop * stats[t].row_bytes
        for t, k in sorted(pairs, key=lambda tk: (-classes[tk[0]][tk[1]].density, tk)):
            room = classes[t][k].n_rows - counts[t][k]
            add = min(room, free // stats[t].row_bytes)
            if add > 0:
                counts[t][k] += add
                free -= add * stats[t].row_bytes


def _rows(stats, classes, counts) -> np.ndarray | None:
    """The table's HBM rows, ascending (None: all of them): each class's first ``counts``."""
    if int(counts.sum()) >= stats.num_rows:
        return None
    parts = []
    for c, m in zip(classes, counts, strict=True):
        if m == 0:
            continue
        if c.rows.size:
            parts.append(c.rows[:m])
        else:  # the untouched class: the lowest ids not seen in the profile
            parts.append(_lowest_unseen(stats.rows, int(m)))
    if not parts:
        return np.empty(0, dtype=np.int64)
    rows = np.concatenate(parts)
    if rows.size * 16 < stats.num_rows:
        return np.sort(rows)
    # many rows of a table (criteo-terabyte's HBM halves: millions): a mark over the table's
    # ids gives them ascending in one pass, where the sort took most of the solve (the
    # classes are disjoint, so the rows are distinct)
    mark = np.zeros(stats.num_rows, dtype=bool)
    mark[rows] = True
    return np.flatnonzero(mark)


def _lowest_unseen(seen: np.ndarray, m: int) -> np.ndarray:
    """The ``m`` lowest ids not in ``seen`` (distinct ids): all lie below ``m + seen.size``,
    so a mark that far does (not one over the whole table)."""
    span = m + seen.size
    mask = np.ones(span, dtype=bool)
    mask[seen[seen < span]] = False
    return np.flatnonzero(mask)[:m]


class RecShardSharder:
    name = "recshard"
    uses_row_stats = True
    # The solver's memory per GPU and table (for the resource guard, nmp.guard): a binary and
    # ~8 frequency classes of variables per table and GPU; 7 KiB per variable measured from 8
    # to 32 GPUs of criteo-kaggle (HiGHS, its search included). Chosen: 9 x 7 KiB.
    memory_per_gpu_table_bytes = 9 * 7 * 1024
    description = "RecShard MILP: tables to GPUs, rows to HBM or host by profiled frequency"

    def place(self, problem):
        return solve(problem)


register(RecShardSharder())
