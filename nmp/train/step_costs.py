"""One training step's costs at a deployment's scale (:class:`StepCosts`), from the hardware
models: the gather, the plain and the coded update, the dense compute, and the units of work
the network carries.

The per-step costs are apart from the strategies' pricing built on them
(:mod:`nmp.train.extrapolate`), and computed once per set of values (:func:`_step_costs` is
cached). Split from :mod:`nmp.train.extrapolate`, which re-exports these names.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from nmp.train.cost import layer_weights
from nmp.train.data import NUM_DENSE
from nmp.train.deployment import DeploymentSpec, record_bytes


@dataclass(frozen=True)
class StepCosts:
    """Per-step costs at the deployment's scale (ns), from the hardware models."""

    step_ns: float
    gather_ns: float
    upd_plain_ns: float
    upd_coded_ns: float
    rows_touched: int
    lookups: int
    pooled_vectors: int  # sparse partial sums a step sends: distinct (sample, table, server)
    worker_rows: int  # row gradients a step sends: distinct rows per worker, summed
    dim: int
    read_ns_per_record: float  # one record read in a rebuild (per server)
    write_ns_per_record: float  # one record written (per server)
    record_bytes: int
    rows_total: int
    dense_bytes: int
    backend: str


class _StoreShape:
    """What the cost backends read from a store: record size and parity count."""

    def __init__(self, record_bytes: int, k: int, r: int) -> None:
        self.record_bytes, self.k, self.r = record_bytes, k, r


def step_costs(dep: DeploymentSpec) -> StepCosts:
    return _step_costs(
        dep.workload, dep.table_rows, dep.dim, dep.batch, dep.servers, dep.workers, dep.k,
        dep.r, dep.optimizer_state_words, dep.arch, dep.bottom, dep.top, dep.host_flops, dep.seed,
        dep.one_bag,
    )  # fmt: skip


@functools.cache
def _step_costs(
    workload, table_rows, dim, batch, servers, workers, k, r, state_words, arch, bottom, top,
    host_flops, seed, one_bag=False,
) -> StepCosts:  # fmt: skip
    from nmp.train.config import TrainConfig
    from nmp.train.data import Batch
    from nmp.train.hwcost import BURST_BYTES, make_backend
    from nmp.workload import generate_batch, load_workload

    spec = load_workload(workload)
    if batch and batch != spec.batch:
        spec = replace(spec, batch=batch)
    dim = dim or spec.tables[0].dim
    rows_total = table_rows or sum(t.rows for t in spec.tables)
    record_b = record_bytes(dim, state_words)

    # What the cost backends read of the trainer's geometry.
    geo = SimpleNamespace(
        table_rows=tuple(t.rows for t in spec.tables), pooling=1, dim=dim, batch=spec.batch
    )
    cfg = TrainConfig(workload=workload, nodes=servers, arch=arch, seed=seed)
    lb = generate_batch(spec, seed=seed)
    ids = np.stack([t.indices.reshape(spec.batch, -1) for t in lb.tables])
    batch_ = Batch(dense=np.zeros((spec.batch, NUM_DENSE), np.float32), ids=ids, label=np.zeros(0))
    g_rows = np.unique(ids + np.concatenate([[0], np.cumsum(geo.table_rows)[:-1]])[:, None, None])
    plain = make_backend(cfg, geo, _StoreShape(record_b, servers, 0))
    coded = make_backend(cfg, geo, _StoreShape(record_b, k, r))
    gather_ns = plain.gather(batch_)[0] / servers  # each server gathers its share in parallel
    upd_plain_ns = plain.update(g_rows)[0] / servers
    upd_coded_ns = coded.update(g_rows)[0] / servers
    mlp = _mlp_weights(1 if one_bag else len(spec.tables), dim, bottom, top)
    dense_ns = 6.0 * mlp * spec.batch / (workers * host_flops) * 1e9
    burst = -(-record_b // BURST_BYTES) * BURST_BYTES
    # A record read costs the gather's time per looked-up byte (bursts of the record).
    read_ns = gather_ns * servers / ids.size * (burst / (dim * 4))
    g_all = ids + np.concatenate([[0], np.cumsum(geo.table_rows)[:-1]])[:, None, None]
    t_n, b_n, _ = ids.shape
    slot = np.arange(b_n)[None, :, None] * t_n + np.arange(t_n)[:, None, None]
    if one_bag:  # one bag per sample: a partial sum per (sample, server)
        slot = np.broadcast_to(np.arange(b_n)[None, :, None], ids.shape)
    pooled_vectors = int(np.unique(slot * servers + g_all % servers).size)  # rows round robin
    worker_rows = sum(
        int(np.unique(g_all[:, sl]).size) for sl in np.array_split(np.arange(b_n), workers)
    )
    return StepCosts(
        step_ns=gather_ns + upd_plain_ns + dense_ns,
        gather_ns=gather_ns,
        upd_plain_ns=upd_plain_ns,
        upd_coded_ns=upd_coded_ns,
        rows_touched=len(g_rows),
        lookups=int(ids.size),
        pooled_vectors=pooled_vectors,
        worker_rows=worker_rows,
        dim=int(dim),
        read_ns_per_record=read_ns,
        write_ns_per_record=upd_plain_ns * servers / len(g_rows),
        record_bytes=record_b,
        rows_total=int(rows_total),
        dense_bytes=mlp * 4,
        backend=plain.name,
    )


def traffic_profile(dep: DeploymentSpec, c: StepCosts):
    """The setup's bytes per unit of work (:mod:`nmp.train.traffic`): its counted values where
    it gives them, the message layout's elsewhere."""
    from nmp.train.traffic import KINDS, TrafficProfile, layout

    lay = layout(c.dim, c.record_bytes, dep.k).as_dict()
    return TrafficProfile(**{k: getattr(dep, f"traffic_{k}") or lay[k] for k in KINDS})


def _mlp_weights(tables: int, dim: int, bottom, top) -> int:
    # torch (nmp.train.model) loaded here: a setup or flag is checked before its import
    from nmp.train.model import interaction_dim

    bottom = (*bottom[:-1], dim) if bottom and bottom[-1] != dim else tuple(bottom)
    sizes_b = (NUM_DENSE, *bottom)
    sizes_t = (interaction_dim(tables, dim), *top)
    return layer_weights(sizes_b) + layer_weights(sizes_t)
