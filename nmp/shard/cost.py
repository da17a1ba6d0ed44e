"""What a placement costs: the embedding stage of one batch on every GPU, the slowest one
setting the step.

Per GPU, for its tables:

* **HBM rows** are timed by :func:`nmp.gpu.model.embedding_stage` on the GPU's own kernels:
  each table's lookups that hit its HBM shard (local ids, so the shard's rows are dense), with
  the L1/L2 simulation and the HBM bounds of the GPU model.
* **Host-tier rows** cross the GPU's link: the larger of the link's bandwidth time
  (bytes / (raw x payload/(payload+overhead))), its latency bound (reads x round trip / reads in
  flight) and the host DRAM's time. Host DRAM is shared: every GPU's host-tier reads are replayed
  together on the host memory (``nmp.memory``, ``channels`` channels) to measure its effective
  bandwidth, and each GPU gets it by processor sharing (GPU g finishes after
  sum_h min(bytes_h, bytes_g) / bandwidth).
* The two parts add (``overlap=False``, default: a unified-memory access stalls the warp that
  issued it, and the GPU model already charges HBM latency per warp) or overlap
  (``overlap=True``: time = the larger). The sources leave this open, so it is a switch.

Load balance is max / mean of the per-GPU times (idle GPUs count as 0).

For the optimizer the same model is linearized (:func:`coefficients`): a table costs a fixed
kernel time plus a time per HBM lookup, both measured on the GPU model (uniform random lookups:
no cache reuse, a conservative figure for hot rows), plus a time per host-tier lookup.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np

from nmp.gpu import GpuSpec, load_gpu
from nmp.identity_cache import KeyedCache
from nmp.shard.placement import Placement, shard_lookups
from nmp.shard.topology import TopologySpec
from nmp.workload import LookupBatch, TableLookups

LINE_BYTES = 64
HOST_TABLE_ALIGN = 2 * 1024 * 1024
# Lookups per bag of the calibration batch for the per-lookup HBM time (chosen: large enough that
# the kernel leaves its latency-bound floor, the regime of a loaded GPU).
CALIBRATION_POOLING = 16
CALIBRATION_ROWS = 4_000_000
CALIBRATION_SEED = 7


@dataclass(frozen=True)
class TableCoefficients:
    """Linearized cost of one table on the topology's GPU (ns per batch)."""

    fixed_ns: float  # kernel time of the table with no lookups (indices, offsets, outputs)
    hbm_ns_per_lookup: float
    slow_ns_per_lookup: float


@functools.cache
def _gpu_line(gpu_name: str, dim: int, elem_bytes: int, batch: int) -> tuple[float, float]:
    """(fixed ns, ns per lookup) of one EmbeddingBag kernel on ``gpu_name``, measured on the GPU
    model with an empty table and with ``CALIBRATION_POOLING`` uniform lookups per bag."""
    # numba: loaded on use (start-up time)
    from nmp.gpu.model import embedding_stage

    gpu = load_gpu(gpu_name)
    empty = TableLookups(
        np.zeros(0, np.int64), np.zeros(batch + 1, np.int64), None, CALIBRATION_ROWS, dim
    )
    t0 = embedding_stage(gpu, LookupBatch((empty,)), elem_bytes=[elem_bytes]).t_ns
    n = batch * CALIBRATION_POOLING
    idx = np.random.default_rng(CALIBRATION_SEED).integers(0, CALIBRATION_ROWS, n, dtype=np.int64)
    offsets = np.arange(0, n + 1, CALIBRATION_POOLING, dtype=np.int64)
    full = TableLookups(idx, offsets, None, CALIBRATION_ROWS, dim)
    t1 = embedding_stage(gpu, LookupBatch((full,)), elem_bytes=[elem_bytes]).t_ns
    return t0, (t1 - t0) / n


@functools.cache
def host_bandwidth_gbps(preset: str, channels: int, row_bytes: int) -> float:
    """Effective bandwidth of the host memory for random row reads, replayed on ``nmp.memory``."""
    # numba: loaded on use (start-up time)
    from nmp.memory import load_memory, replay_lines

    spec = load_memory(preset, channels=channels)
    rows = np.random.default_rng(CALIBRATION_SEED).integers(0, 1 << 24, 16_384 * channels)
    addr = row_lines(rows * row_bytes, row_bytes)
    st = replay_lines(addr, spec)
    return addr.size * LINE_BYTES / st.t_drained_ns


def row_lines(byte_addr: np.ndarray, row_bytes: int) -> np.ndarray:
    per_row = -(-row_bytes // LINE_BYTES)
    lines = byte_addr.astype(np.uint64)[:, None] + (
        np.arange(per_row, dtype=np.uint64) * LINE_BYTES
    )
    return lines.ravel()


def coefficients(
    topo: TopologySpec, dims: list[int], elem_bytes: list[int], batch: int
) -> list[TableCoefficients]:
    """Per table: fixed kernel time, time per HBM lookup (GPU model) and per host lookup."""
    out = []
    for dim, eb in zip(dims, elem_bytes, strict=True):
        fixed, hbm = _gpu_line(topo.gpu, dim, eb, batch)
        row_bytes = dim * eb
        link = topo.link
        per_gpu_host = host_bandwidth_gbps(topo.host.memory_preset, topo.host.channels, row_bytes)
        slow = max(
            row_bytes / link.data_gbps,
            link.latency_ns / link.reads_in_flight,
            row_bytes * topo.gpus / per_gpu_host,  # host DRAM shared evenly by every GPU
        )
        out.append(TableCoefficients(fixed, hbm, slow))
    return out


# One GPU's embedding stage for one batch, by the content of what it is given: the sharders of a
# run, and a claim's seeds, often give a GPU the same tables and rows (every row in HBM where
# they fit), and the GPU model is a function of its inputs. RecShard's throughput claim priced
# 5658 stages of which 1578 differ (104 -> about 35 s). Keyed by a digest, so an entry holds
# 16 bytes and a float; 4096 entries cover that claim's distinct stages.
_STAGE_NS: KeyedCache[bytes, float] = KeyedCache(4096)


def _stage_key(gpu_repr: str, subs: list[TableLookups], elem_bytes: list[int]) -> bytes:
    """A digest of everything :func:`embedding_stage` reads of its arguments: the GPU, and per
    table its sizes, element bytes and lookups (each array with its dtype and shape, so no two
    inputs run together into the same bytes)."""
    h = hashlib.blake2b(gpu_repr.encode(), digest_size=16)
    for lk, eb in zip(subs, elem_bytes, strict=True):
        h.update(repr((lk.num_rows, lk.dim, eb, lk.weights is None)).encode())
        for arr in (lk.indices, lk.offsets, lk.weights):
            if arr is not None:
                a = np.ascontiguousarray(arr)
                h.update(repr((a.dtype.str, a.shape)).encode())
                h.update(a.data)
    return h.digest()


def stage_ns(gpu: GpuSpec, gpu_repr: str, subs: list[TableLookups], elem_bytes: list[int]) -> float:
    """:func:`nmp.gpu.model.embedding_stage`'s time for ``subs`` on ``gpu`` (``gpu_repr`` =
    ``repr(gpu)``, computed once per caller), kept by content (``_STAGE_NS``)."""
    # numba: loaded on use (start-up time)
    from nmp.gpu.model import embedding_stage

    key = _stage_key(gpu_repr, subs, elem_bytes)
    t_ns = _STAGE_NS.get(key)
    if t_ns is None:
        t_ns = embedding_stage(gpu, LookupBatch(tuple(subs)), elem_bytes=elem_bytes).t_ns
        _STAGE_NS.put(key, t_ns)
    return t_ns


@dataclass(frozen=True)
class PlacementCost:
    step_ns: float
    gpu_ns: np.ndarray  # per GPU
    hbm_ns: np.ndarray
    slow_ns: np.ndarray
    lookups: np.ndarray  # per GPU per batch
    slow_lookups: np.ndarray  # per GPU per batch
    hbm_bytes: np.ndarray  # per GPU
    host_gbps: float  # host DRAM's measured bandwidth under this placement's traffic

    @property
    def load_balance(self) -> float:
        mean = float(self.gpu_ns.mean())
        return float(self.gpu_ns.max()) / mean if mean > 0 else 1.0

    @property
    def slow_accesses_per_batch(self) -> float:
        return float(self.slow_lookups.sum())


def evaluate(
    placement: Placement,
    topo: TopologySpec,
    batches: list[LookupBatch],
    elem_bytes: list[int],
    *,
    overlap: bool = False,
) -> PlacementCost:
    """Cost of ``placement`` averaged over ``batches`` (see the module docstring)."""
    # numba: loaded on use (start-up time)
    from nmp.memory import load_memory, replay_lines

    gpu = load_gpu(topo.gpu)
    gpu_repr = repr(gpu)
    host = load_memory(topo.host.memory_preset, channels=topo.host.channels)
    n_gpu = placement.gpus
    row_bytes = [lk.dim * elem_bytes[t] for t, lk in enumerate(batches[0].tables)]
    bases = np.zeros(len(row_bytes), dtype=np.int64)
    addr = 0
    for t, tp in enumerate(placement.tables):
        bases[t] = addr
        addr += -(-tp.num_rows * row_bytes[t] // HOST_TABLE_ALIGN) * HOST_TABLE_ALIGN
    acc = {k: np.zeros(n_gpu) for k in ("gpu", "hbm", "slow", "lookups", "slow_lookups")}
    host_gbps = []
    link = topo.link
    for batch in batches:
        hbm_ns = np.zeros(n_gpu)
        slow_bytes = np.zeros(n_gpu)
        slow_n = np.zeros(n_gpu)
        lookups = np.zeros(n_gpu)
        host_addr = []
        for g in range(n_gpu):
            tables = placement.tables_of(g)
            if not tables:
                continue
            subs, ebs = [], []
            for t in tables:
                tp, lk = placement.tables[t], batch.tables[t]
                hit, local = tp.route(lk.indices)
                subs.append(shard_lookups(lk, hit, local, tp.n_hbm_rows))
                ebs.append(elem_bytes[t])
                miss = ~hit
                n_miss = int(np.count_nonzero(miss))
                lookups[g] += lk.num_lookups
                slow_n[g] += n_miss
                slow_bytes[g] += n_miss * row_bytes[t]
                if n_miss:
                    host_addr.append(
                        (g, row_lines(bases[t] + local[miss] * row_bytes[t], row_bytes[t]))
                    )
            hbm_ns[g] = stage_ns(gpu, gpu_repr, subs, ebs)
        slow_ns = np.zeros(n_gpu)
        if host_addr:
            # interleave the GPUs' streams (they run concurrently) by sorting on rank within each
            lines = [a for _, a in host_addr]
            order = np.argsort(
                np.concatenate([np.linspace(0, 1, a.size, endpoint=False) for a in lines]),
                kind="stable",
            )
            st = replay_lines(np.concatenate(lines)[order], host)
            gbps = float(slow_bytes.sum()) / st.t_drained_ns
            host_gbps.append(gbps)
            ps = np.array([np.minimum(slow_bytes, b).sum() for b in slow_bytes]) / gbps
            t_link = np.maximum(
                slow_bytes / link.data_gbps,
                np.where(
                    slow_n > 0,
                    link.latency_ns + slow_n * link.latency_ns / link.reads_in_flight,
                    0.0,
                ),
            )
            slow_ns = np.maximum(t_link, ps)
        gpu_ns = np.maximum(hbm_ns, slow_ns) if overlap else hbm_ns + slow_ns
        for key, val in (
            ("gpu", gpu_ns),
            ("hbm", hbm_ns),
            ("slow", slow_ns),
            ("lookups", lookups),
            ("slow_lookups", slow_n),
        ):
            acc[key] += val / len(batches)
    return PlacementCost(
        step_ns=float(acc["gpu"].max()),
        gpu_ns=acc["gpu"],
        hbm_ns=acc["hbm"],
        slow_ns=acc["slow"],
        lookups=acc["lookups"],
        slow_lookups=acc["slow_lookups"],
        hbm_bytes=placement.hbm_bytes_per_gpu(row_bytes),
        host_gbps=float(np.mean(host_gbps)) if host_gbps else 0.0,
    )
