"""ReCross's bandwidth-aware cross-level partition, as a linear program.

Rows are grouped into buckets of equal profiled access frequency per table (so that Criteo's
33.8M rows become a few hundred variables). ``x[b, l]`` is the fraction of bucket ``b``'s rows
placed at level ``l``. The program minimizes the time ``T`` of the slowest level, where a
level's time is the bytes its rows draw per batch over its aggregate bandwidth, subject to each
level's capacity and to the instruction bandwidth that the in-DRAM levels share:

    min T   s.t.   sum_l x[b, l] = 1                                  (every row placed)
                   sum_b rows_b * bytes_b * x[b, l] <= capacity_l         (capacity)
                   sum_b freq_b * bytes_b * x[b, l] * ns_per_byte_l + fixed_l <= T
                                                                          (bandwidth)
                   sum_b freq_b * bytes_b * (x[b, l] + sum_m shared[l, m] * x[b, m])
                       * peak_ns_per_byte_l <= T                          (shared paths)
                   sum_b freq_b * x[b, l in shared] * ns_per_lookup <= T  (instruction C/A)

where ``shared[l, m]`` is the part of level ``m``'s bytes that also crosses level ``l``'s data
paths at their peak (a bank unit reading through its bank group's column path,
``arch.shared_bankgroup_column_path``: the timing's ``bankgroup_column_path`` bound).
HiGHS (scipy.optimize.linprog) solves it; a vertex solution splits at most a few buckets.
``ns_per_byte`` starts from each level's peak; a calibration pass (see
:func:`nmp.arch.placement.solve_cross_level`) replaces it by the level's measured time per byte
and adds the measured time of work that does not scale with its rows (the partial sums that
bank-group and bank units return over the rank bus) as ``fixed``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from nmp.errors import NmpError


@dataclass(frozen=True)
class PartitionProblem:
    rows: np.ndarray  # rows per bucket (float64 [B])
    freq: np.ndarray  # expected lookups per batch per bucket (float64 [B])
    row_bytes: np.ndarray  # bytes per row of the bucket's table (float64 [B])
    capacity_bytes: np.ndarray  # per level (float64 [L])
    ns_per_byte: np.ndarray  # per level: 1 / aggregate bandwidth (float64 [L])
    ca_ns_per_lookup: np.ndarray  # per level: shared instruction time per lookup (0: none)
    fixed_ns: np.ndarray | None = None  # per level: time not proportional to its rows
    # [L, L]: part of level m's bytes that also crosses level l's paths (None: none shared),
    # and per level the peak ns per byte of its paths (the shared rows' cost)
    shared: np.ndarray | None = None
    peak_ns_per_byte: np.ndarray | None = None


@dataclass(frozen=True)
class PartitionResult:
    fractions: np.ndarray  # float64 [B, L], rows sum to 1
    t_ns: float  # the bound the LP achieved (estimated per-batch time of the slowest level)
    level_t_ns: np.ndarray  # estimated time per level
    solve_s: float


def solve_partition(p: PartitionProblem) -> PartitionResult:
    """Solve the partition LP; raises NmpError if the rows cannot fit."""
    # scipy: loaded on use (start-up time: `nmp evaluate --check` never solves one)
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    nb, nl = p.rows.size, p.capacity_bytes.size
    nvar = nb * nl + 1  # x[b, l] row-major, then T
    t0 = time.perf_counter()
    # scale the time rows so coefficients are O(1) for HiGHS
    load = p.freq * p.row_bytes
    t_scale = max(float(load.sum() * p.ns_per_byte.max()), 1e-9)
    cap_scale = max(float(p.capacity_bytes.max()), 1.0)
    b_idx = np.repeat(np.arange(nb), nl)
    l_idx = np.tile(np.arange(nl), nb)
    var = b_idx * nl + l_idx
    # equality: sum_l x[b, l] = 1
    a_eq = coo_matrix((np.ones(nb * nl), (b_idx, var)), shape=(nb, nvar))
    b_eq = np.ones(nb)
    rows_ub, cols_ub, vals_ub, b_ub = [], [], [], []
    # capacity per level
    rows_ub.append(l_idx)
    cols_ub.append(var)
    vals_ub.append((p.rows * p.row_bytes)[b_idx] / cap_scale)
    b_ub.extend((p.capacity_bytes / cap_scale).tolist())
    # bandwidth per level: load - T <= 0
    rows_ub.append(nl + l_idx)
    cols_ub.append(var)
    vals_ub.append(load[b_idx] * p.ns_per_byte[l_idx] / t_scale)
    rows_ub.append(nl + np.arange(nl))
    cols_ub.append(np.full(nl, nvar - 1))
    vals_ub.append(-np.ones(nl))
    fixed = np.zeros(nl) if p.fixed_ns is None else np.asarray(p.fixed_ns, dtype=np.float64)
    b_ub.extend((-fixed / t_scale).tolist())
    nrows = 2 * nl
    if p.shared is not None:  # a level's paths carry its own bytes and the shared part of others'
        assert p.peak_ns_per_byte is not None
        for lvl in np.flatnonzero(p.shared.any(axis=1)):
            share = p.shared[lvl].copy()
            share[lvl] = 1.0
            rows_ub.append(np.full(nb * nl, nrows))
            cols_ub.append(var)
            vals_ub.append(load[b_idx] * share[l_idx] * p.peak_ns_per_byte[lvl] / t_scale)
            rows_ub.append(np.array([nrows]))
            cols_ub.append(np.array([nvar - 1]))
            vals_ub.append(np.array([-1.0]))
            b_ub.append(0.0)
            nrows += 1
    shared = p.ca_ns_per_lookup > 0
    if shared.any():
        sel = shared[l_idx]
        rows_ub.append(np.full(int(sel.sum()), nrows))
        cols_ub.append(var[sel])
        vals_ub.append(p.freq[b_idx[sel]] * p.ca_ns_per_lookup[l_idx[sel]] / t_scale)
        rows_ub.append(np.array([nrows]))
        cols_ub.append(np.array([nvar - 1]))
        vals_ub.append(np.array([-1.0]))
        b_ub.append(0.0)
        nrows += 1
    a_ub = coo_matrix(
        (np.concatenate(vals_ub), (np.concatenate(rows_ub), np.concatenate(cols_ub))),
        shape=(nrows, nvar),
    )
    c = np.zeros(nvar)
    c[-1] = 1.0
    res = linprog(
        c,
        A_ub=a_ub.tocsr(),
        b_ub=np.asarray(b_ub),
        A_eq=a_eq.tocsr(),
        b_eq=b_eq,
        bounds=(0, None),
        method="highs",
    )
    solve_s = time.perf_counter() - t0
    if res.status != 0:
        raise NmpError(f"cross-level partition LP failed: {res.message} (do the tables fit?)")
    x = np.clip(res.x[:-1].reshape(nb, nl), 0.0, 1.0)
    x /= x.sum(axis=1, keepdims=True)
    level_t = (load[:, None] * x).sum(axis=0) * p.ns_per_byte + fixed
    return PartitionResult(x, float(res.x[-1] * t_scale), level_t, solve_s)


__all__ = ["PartitionProblem", "PartitionResult", "solve_partition"]
