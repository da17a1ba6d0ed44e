"""The model's lower bound on any placement's step, computed without running a sharder.

How :func:`nmp.shard.cost.evaluate` composes a step (``overlap=False``, the default): GPU ``g``
takes ``hbm_g + slow_g`` per batch, ``hbm_g`` the sum over its tables of each table's kernel
over the lookups that hit its HBM shard (:func:`nmp.gpu.model.embedding_stage` adds the
tables' kernels), ``slow_g = max(t_link_g, ps_g)`` with ``t_link_g = max(B_g / data_gbps,
latency + m_g x latency / reads_in_flight)`` for its ``m_g`` host-tier lookups of ``B_g``
bytes; the step is the largest per-GPU mean over the batches. A table lives on one GPU.

Premises (the model's, stated so a test can check them):

1. A table's kernel over ``h`` of its ``n`` lookups takes at least ``F + h x (T - F) / n``:
   ``F`` its kernel with no lookups (offsets and outputs only: what it costs when every lookup
   misses HBM), ``T`` its kernel over all ``n`` lookups with the touched rows packed densely
   (the smallest HBM footprint a shard gives them), timed alone on a GPU. I.e. dropping
   lookups saves at most the mean time per lookup: the kernel's latency floor and its
   per-bag chains make it sub-linear, never super-linear (checked in
   ``tests/shard/test_lower_bound.py``).
2. A kernel is no faster next to other tables than alone.

Derivation. Table ``t`` with ``h`` hits and ``m = n - h`` misses on GPU ``g``:

* its GPU's time is at least ``k_t(h) + link_t(m)``, ``k_t(h) = F + h (T - F) / n`` and
  ``link_t(m) = max(m a_t, latency + m b)`` for ``m > 0`` (0 for ``m = 0``), ``a_t = row
  bytes / data_gbps``, ``b = latency / reads_in_flight``: the other tables only add to
  ``hbm_g``, ``B_g`` and ``m_g``, and ``slow_g >= t_link_g``. Minimized over ``h = 0 .. n``:
  ``one_t`` (``max_table_ns``);
* summed over the GPUs, ``sum_g slow_g >= sum_t m_t a_t`` and ``>= sum_t m_t b`` (each term of
  ``t_link_g`` is additive over tables, dropping the once-per-GPU latency), so ``sum_g
  gpu_g >= sum_t min_h (k_t(h) + m x c)`` for ``c = a_t`` and for ``c = b``: linear in ``h``,
  so the minimum is an end, ``min(T, F + n c)``. The larger of the two sums is
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
    # numba: loaded on use (start-up time)
    from nmp.gpu.model import embedding_stage

    rows, local = np.unique(lookups.indices, return_inverse=True)
    dense = TableLookups(
        local.astype(np.int64), lookups.offsets, lookups.weights, max(1, rows.size), lookups.dim
    )
    return embedding_stage(gpu, LookupBatch((dense,)), elem_bytes=[elem_bytes]).t_ns


def empty_kernel_ns(gpu, lookups: TableLookups, elem_bytes: int) -> float:
    """The same kernel with every lookup gone (every bag empty): its cost when all miss HBM."""
    empty = TableLookups(
        np.zeros(0, np.int64), np.zeros(lookups.batch + 1, np.int64), None, 1, lookups.dim
    )
    return kernel_ns(gpu, empty, elem_bytes)


def alone_bound_ns(
    full_ns: float, empty_ns: float, n: int, a_ns: float, b_ns: float, latency_ns: float
) -> float:
    """Least time of the GPU that holds a table of ``n`` lookups, over every split of them
    between its HBM shard and the link: ``min_h k(h) + link(n - h)`` (module docstring)."""
    if n == 0:
        return full_ns
    per_lookup = max(0.0, full_ns - empty_ns) / n
    h = np.arange(n, dtype=np.float64)  # h = n (no miss) is the full kernel
    m = n - h
    split = empty_ns + h * per_lookup + np.maximum(m * a_ns, latency_ns + m * b_ns)
    return min(float(split.min()), full_ns)


def shared_bound_ns(full_ns: float, empty_ns: float, n: int, per_miss_ns: float) -> float:
    """A table's least part of the sum over all GPUs when each miss costs ``per_miss_ns``
    there: ``min_h k(h) + (n - h) per_miss_ns``, linear in ``h``, so one of its ends."""
    return min(full_ns, empty_ns + n * per_miss_ns)


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
            t_full = kernel_ns(gpu, lk, elem_bytes[t])
            t_empty = empty_kernel_ns(gpu, lk, elem_bytes[t])
            a_ns = lk.dim * elem_bytes[t] / link.data_gbps
            n = lk.num_lookups
            one = alone_bound_ns(t_full, t_empty, n, a_ns, b_ns, link.latency_ns)
            alone[t] += one / len(batches)
            full[t] += t_full / len(batches)
            shared_a += shared_bound_ns(t_full, t_empty, n, a_ns)
            shared_b += shared_bound_ns(t_full, t_empty, n, b_ns)
        shared_sum += max(shared_a, shared_b) / len(batches)
    return {
        "lb_ns": max(float(alone.max()), shared_sum / topo.gpus),
        "sum_table_ns": shared_sum,
        "max_table_ns": float(alone.max()),
        "gpus": float(topo.gpus),
        "all_hbm_ns": max(float(full.max()), float(full.sum()) / topo.gpus),
    }
