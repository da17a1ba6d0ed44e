"""The model's lower bound on any placement's step, computed without running a sharder.

How :func:`nmp.shard.cost.evaluate` composes a step (``overlap=False``, the default): GPU ``g``
takes ``hbm_g + slow_g`` per batch, ``hbm_g`` the sum over its tables of each table's kernel
over the lookups that hit its HBM shard (:func:`nmp.gpu.model.embedding_stage` adds the
tables' kernels), ``slow_g = max(t_link_g, ps_g)`` with ``t_link_g = max(B_g / data_gbps,
latency + m_g x latency / reads_in_flight)`` for its ``m_g`` host-tier lookups of ``B_g``
bytes; the step is the largest per-GPU mean over the batches. A table lives on one GPU.

Premises (the model's, stated so a test can check them):

1. A table's kernel over ``h < n`` of its ``n`` lookups takes at least ``F + h x s``, ``s =
   (T - F) / n x L0 / L``: ``F`` its kernel with no lookups (offsets and outputs only: what it
   costs when every lookup misses HBM), ``T`` its kernel over all ``n`` lookups with the
   touched rows packed densely (the smallest HBM footprint a shard gives them), timed alone on
   a GPU; ``L0 / L`` the HBM's unloaded latency over its loaded one in that kernel; and ``s``
   no more than what a bag's first lookup adds (the kernel over each bag's first lookup: its
   index load is not hidden under an earlier row, and the model makes that chain of one a
   little cheaper per lookup than the mean). I.e. dropping lookups saves at most that: the
   kernel's latency floor and its per-bag chains make it sub-linear, the queueing of the
   loaded memory (Little's law, nmp.gpu) can only make each remaining lookup as fast as at no
   load (checked in ``tests/shard/test_lower_bound.py``).
2. A kernel is no faster next to other tables than alone.

Derivation. Table ``t`` with ``h`` hits and ``m = n - h`` misses on GPU ``g``:

* its GPU's time is at least ``k_t(h) + link_t(m)``, ``k_t(h) = F + h s`` (``h < n``; ``T``
  at ``h = n``) and
  ``link_t(m) = max(m a_t, latency + m b)`` for ``m > 0`` (0 for ``m = 0``), ``a_t = row
  bytes / data_gbps``, ``b = latency / reads_in_flight``: the other tables only add to
  ``hbm_g``, ``B_g`` and ``m_g``, and ``slow_g >= t_link_g``. Minimized over ``h = 0 .. n``:
  ``one_t`` (``max_table_ns``);
* summed over the GPUs, ``sum_g slow_g >= sum_t m_t a_t`` and ``>= sum_t m_t b`` (each term of
  ``t_link_g`` is additive over tables, dropping the once-per-GPU latency), so ``sum_g
  gpu_g >= sum_t min_h (k_t(h) + m x c)`` for ``c = a_t`` and for ``c = b``: linear in ``h``,
  so the minimum is an end: ``min(T, F + n c, F + (n - 1) s + c)``. The larger of the two sums is
  ``sum_table_ns``.

The step is at least the GPU that holds the worst table, and at least the mean GPU:
``lb_ns = max(max_t one_t, sum_table_ns / gpus)``, each per-table figure averaged over the
batches first (a placement is the same for every batch). ``ps_g`` (host DRAM shared) is
dropped: it only adds. Where HBM is the faster path (``T <= F + n min(a_t, b)``, a loaded
GPU) this is the all-HBM bound ``max(max_t T, sum_t T / gpus)``.

``overlap=True`` (``max(hbm_g, slow_g)``) is not covered: there a table's lookups can be split
between the two paths running at once, and the bound would be about half of this one.
"""

from __future__ import annotations

import numpy as np

from nmp.gpu import load_gpu
from nmp.shard.topology import TopologySpec
from nmp.workload import LookupBatch, TableLookups


def kernel_ns(gpu, lookups: TableLookups, elem_bytes: int) -> float:
    """One table's EmbeddingBag kernel alone on ``gpu``, its touched rows packed densely."""
    return _kernel(gpu, lookups, elem_bytes).t_ns


def kernel_slope_ns(gpu, lookups: TableLookups, elem_bytes: int) -> tuple[float, float, float]:
    """(``T``, ``F``, ``s``) of premise 1: the kernel over all lookups, the kernel over none,
    and the least time a lookup
    adds to a kernel over fewer of them: the mean ``(T - F) / n`` at the unloaded HBM latency,
    and no more than a bag's first lookup adds (the kernel over each bag's first lookup alone:
    a bag's first lookup waits for no earlier row, so a chain of one is the cheapest per
    lookup)."""
    full = _kernel(gpu, lookups, elem_bytes)
    empty = empty_kernel_ns(gpu, lookups, elem_bytes)
    n = lookups.num_lookups
    if n == 0:
        return full.t_ns, empty, 0.0
    loaded = float(full.breakdown.get("hbm_latency_loaded_ns") or 0.0)
    unloaded = float(full.breakdown["latency_ns"]["hbm"])
    ratio = min(1.0, unloaded / loaded) if loaded > 0 else 1.0
    slope = max(0.0, full.t_ns - empty) / n * ratio
    sizes = np.diff(lookups.offsets)
    firsts = lookups.offsets[:-1][sizes > 0]
    if 0 < firsts.size < n:
        first = TableLookups(
            lookups.indices[firsts],
            np.concatenate(([0], np.cumsum(sizes > 0))).astype(np.int64),
            None if lookups.weights is None else lookups.weights[firsts],
            lookups.num_rows,
            lookups.dim,
        )
        slope = min(slope, max(0.0, kernel_ns(gpu, first, elem_bytes) - empty) / firsts.size)
    return full.t_ns, empty, slope


def _kernel(gpu, lookups: TableLookups, elem_bytes: int):
    # numba: loaded on use (start-up time)
    from nmp.gpu.model import embedding_stage

    rows, local = np.unique(lookups.indices, return_inverse=True)
    dense = TableLookups(
        local.astype(np.int64), lookups.offsets, lookups.weights, max(1, rows.size), lookups.dim
    )
    return embedding_stage(gpu, LookupBatch((dense,)), elem_bytes=[elem_bytes])


def empty_kernel_ns(gpu, lookups: TableLookups, elem_bytes: int) -> float:
    """The same kernel with every lookup gone (every bag empty): its cost when all miss HBM."""
    empty = TableLookups(
        np.zeros(0, np.int64), np.zeros(lookups.batch + 1, np.int64), None, 1, lookups.dim
    )
    return kernel_ns(gpu, empty, elem_bytes)


def alone_bound_ns(
    full_ns: float,
    empty_ns: float,
    n: int,
    a_ns: float,
    b_ns: float,
    latency_ns: float,
    per_lookup_ns: float | None = None,
) -> float:
    """Least time of the GPU that holds a table of ``n`` lookups, over every split of them
    between its HBM shard and the link: ``min_h k(h) + link(n - h)`` (module docstring);
    ``per_lookup_ns``: premise 1's ``s`` (default the mean ``(T - F) / n``)."""
    if n == 0:
        return full_ns
    mean = max(0.0, full_ns - empty_ns) / n
    per_lookup = mean if per_lookup_ns is None else min(mean, per_lookup_ns)
    h = np.arange(n, dtype=np.float64)  # h = n (no miss) is the full kernel
    m = n - h
    split = empty_ns + h * per_lookup + np.maximum(m * a_ns, latency_ns + m * b_ns)
    return min(float(split.min()), full_ns)


def shared_bound_ns(
    full_ns: float, empty_ns: float, n: int, per_miss_ns: float, per_lookup_ns: float | None = None
) -> float:
    """A table's least part of the sum over all GPUs when each miss costs ``per_miss_ns``
    there: ``min_h k(h) + (n - h) per_miss_ns``, linear in ``h`` below ``n``, so one of its
    ends (``per_lookup_ns``: premise 1's ``s``, default the mean)."""
    if per_lookup_ns is None or n == 0:
        return min(full_ns, empty_ns + n * per_miss_ns)
    slope = min(max(0.0, full_ns - empty_ns) / n, per_lookup_ns)
    # h = n: the full kernel; h < n: linear in h, so its ends h = 0 and h = n - 1
    return min(full_ns, empty_ns + n * per_miss_ns, empty_ns + (n - 1) * slope + per_miss_ns)


def placement_lower_bound(
    topo: TopologySpec, batches: list[LookupBatch], elem_bytes: list[int]
) -> dict[str, float]:
    """No placement's step (``overlap=False``) is shorter under the model; see the module
    docstring. ``all_hbm_ns``: the old every-lookup-from-HBM figure, for comparison."""
    gpu = load_gpu(topo.gpu)
    link = topo.link
    b_ns = link.latency_ns / link.reads_in_flight
    n_tables = len(batches[0].tables)
    alone = np.zeros(n_tables)
    full = np.zeros(n_tables)
    shared_sum = 0.0
    for batch in batches:
        shared_a = shared_b = 0.0
        for t, lk in enumerate(batch.tables):
            t_full, t_empty, slope = kernel_slope_ns(gpu, lk, elem_bytes[t])
            a_ns = lk.dim * elem_bytes[t] / link.data_gbps
            n = lk.num_lookups
            one = alone_bound_ns(t_full, t_empty, n, a_ns, b_ns, link.latency_ns, slope)
            alone[t] += one / len(batches)
            full[t] += t_full / len(batches)
            shared_a += shared_bound_ns(t_full, t_empty, n, a_ns, slope)
            shared_b += shared_bound_ns(t_full, t_empty, n, b_ns, slope)
        shared_sum += max(shared_a, shared_b) / len(batches)
    return {
        "lb_ns": max(float(alone.max()), shared_sum / topo.gpus),
        "sum_table_ns": shared_sum,
        "max_table_ns": float(alone.max()),
        "gpus": float(topo.gpus),
        "all_hbm_ns": max(float(full.max()), float(full.sum()) / topo.gpus),
    }
