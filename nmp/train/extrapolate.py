"""The comparison extrapolated to a Criteo-Terabyte-scale deployment (closed form).

Inputs: the ``criteo-terabyte`` workload (26 tables capped at 10M rows, dim 64, batch 2048;
PAPERS.md), the number of servers (memory nodes), the MTBF of one server, the storage bandwidth
per server, and the dense MLP of PAPERS.md (bottom 13-512-256-64, top 512-512-256-1). The
per-step costs come from the hardware models: the architecture's gather-reduce on a generated
Terabyte batch (split evenly over the servers), its update cost per touched row with and
without parity, and the dense compute at ``host_flops`` per worker.

Per strategy (system MTBF ``M = server MTBF / servers``, checkpoint time ``δ = bytes /
(servers × storage bandwidth)``, interval ``τ`` by Young or Daly; PAPERS.md):

- ``checkpoint``: overhead ``δ/τ + (τ/2 + load + restart)/M`` (expected re-execution τ/2);
- ``cpr-*``: overhead ``(δ + partial saves)/τ + load_shard/M``: no re-execution, but the failed
  shard loses up to τ of updates (its AUC cost is what the small run measures);
- ``ecrec``: overhead = parity maintenance per step + the rebuild's share of each step while it
  runs; recovery time 0 (no pause); time to full redundancy = the rebuild of one server's shard;
- ``none``: no overhead, no recovery; the shard's learned state is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nmp.train.checkpoint import daly_interval, young_interval
from nmp.train.data import NUM_DENSE
from nmp.train.model import interaction_dim

HOUR_NS = 3600e9


@dataclass(frozen=True)
class DeploymentSpec:
    workload: str = "criteo-terabyte"
    servers: int = 5  # PAPERS.md: ECRec's 5 servers
    workers: int = 15  # PAPERS.md: ECRec's 15 workers (dense compute)
    server_mtbf_hours: float = 24.0 * 30  # chosen: one failure per server-month
    storage_gbps: float = 2.0  # per server; chosen: one NVMe SSD
    host_flops: float = 1.0e12  # per worker; as TrainConfig.host_flops
    restart_s: float = 60.0  # chosen: rescheduling a job (CPR's fourth part), one minute
    optimizer_state_words: int = 1  # row-wise Adagrad
    k: int = 4  # PAPERS.md: ECRec k = 4
    r: int = 1
    rebuild_share: float = 0.5
    cpr_fraction: float = 0.1
    cpr_partials: int = 4
    interval: str = "young"
    arch: str = "recnmp"
    bottom: tuple[int, ...] = (512, 256, 64)  # PAPERS.md: Criteo Terabyte bottom 13-512-256-64
    top: tuple[int, ...] = (512, 512, 256, 1)  # PAPERS.md: top 512-512-256-1
    seed: int = 0


class _StoreShape:
    """What the cost backends read from a store: record size and parity count."""

    def __init__(self, record_bytes: int, k: int, r: int) -> None:
        self.record_bytes, self.k, self.r = record_bytes, k, r


def extrapolate(dep: DeploymentSpec) -> list[dict[str, Any]]:
    from nmp.train.hwcost import BURST_BYTES, make_backend
    from nmp.workload import generate_batch, load_workload

    spec = load_workload(dep.workload)
    dim = spec.tables[0].dim
    rows_total = sum(t.rows for t in spec.tables)
    width = dim + dep.optimizer_state_words
    width += width % 2
    record_bytes = width * 4
    data_bytes = rows_total * record_bytes

    class _Geo:
        table_rows = tuple(t.rows for t in spec.tables)
        batch = spec.batch
        pooling = 1

    _Geo.dim = dim
    from nmp.train.config import TrainConfig

    cfg = TrainConfig(workload=dep.workload, nodes=dep.servers, arch=dep.arch, seed=dep.seed)
    lb = generate_batch(spec, seed=dep.seed)
    ids = np.stack([t.indices.reshape(spec.batch, -1) for t in lb.tables])
    from nmp.train.data import Batch

    batch = Batch(dense=np.zeros((spec.batch, NUM_DENSE), np.float32), ids=ids, label=np.zeros(0))
    g_rows = np.unique(ids + np.concatenate([[0], np.cumsum(_Geo.table_rows)[:-1]])[:, None, None])
    plain = make_backend(cfg, _Geo, _StoreShape(record_bytes, dep.servers, 0))
    coded = make_backend(cfg, _Geo, _StoreShape(record_bytes, dep.k, dep.r))
    gather_ns, _ = plain.gather(batch)
    gather_ns /= dep.servers  # every server gathers its share of the lookups in parallel
    upd_plain_ns = plain.update(g_rows)[0] / dep.servers
    upd_coded_ns = coded.update(g_rows)[0] / dep.servers
    mlp = _mlp_weights(len(spec.tables), dim, dep.bottom, dep.top)
    dense_ns = 6.0 * mlp * spec.batch / (dep.workers * dep.host_flops) * 1e9
    step_ns = gather_ns + upd_plain_ns + dense_ns
    m_ns = dep.server_mtbf_hours * HOUR_NS / dep.servers
    bw = dep.servers * dep.storage_gbps  # bytes per ns, all servers writing in parallel
    delta_ns = data_bytes / bw
    fn = young_interval if dep.interval == "young" else daly_interval
    tau_ns = fn(delta_ns, m_ns)
    restart_ns = dep.restart_s * 1e9
    load_ns = data_bytes / bw
    shard_bytes = data_bytes / dep.servers
    shard_load_ns = shard_bytes / dep.storage_gbps
    dense_bytes = mlp * 4

    rows_out: list[dict[str, Any]] = []

    def row(name, overhead, recovery, redundancy, memory):
        rows_out.append(
            {
                "strategy": name,
                "overhead_pct": 100.0 * overhead,
                "recovery_s": recovery / 1e9 if recovery is not None else None,
                "time_to_full_redundancy_s": redundancy / 1e9 if redundancy is not None else None,
                "memory_overhead_pct": 100.0 * memory,
            }
        )

    base_mem = data_bytes + dense_bytes
    replica = dense_bytes / base_mem
    reexec = tau_ns / 2.0
    row(
        "checkpoint",
        delta_ns / tau_ns + (reexec + load_ns + restart_ns) / m_ns,
        load_ns + restart_ns + reexec,
        load_ns + restart_ns + reexec,
        replica,
    )
    partial_ns = dep.cpr_partials * dep.cpr_fraction * data_bytes / bw
    for name in ("cpr-mfu", "cpr-ssu"):
        row(
            name,
            (delta_ns + partial_ns) / tau_ns + shard_load_ns / m_ns,
            shard_load_ns,
            shard_load_ns,
            replica + (4 * rows_total if name == "cpr-mfu" else rows_total / 8) / base_mem,
        )
    # ECRec: decode reads k shards per lost row and writes it; the backend's per-row costs.
    shard_rows = rows_total / dep.servers * (dep.k + dep.r) / dep.k
    burst = -(-record_bytes // BURST_BYTES) * BURST_BYTES
    per_lookup_ns = gather_ns * dep.servers / ids.size * (burst / (dim * 4))
    rebuild_traffic_ns = shard_rows * (
        dep.k * per_lookup_ns + upd_plain_ns * dep.servers / len(g_rows)
    )
    rebuild_ns = rebuild_traffic_ns / dep.rebuild_share
    parity_ns = upd_coded_ns - upd_plain_ns
    row(
        "ecrec",
        parity_ns / step_ns + rebuild_traffic_ns / m_ns,
        0.0,
        rebuild_ns,
        dep.r / dep.k + replica,
    )
    row("none", shard_rows * upd_plain_ns / len(g_rows) / m_ns, 0.0, None, replica)
    for r in rows_out:
        r.update(
            step_ms=step_ns / 1e6,
            checkpoint_interval_s=tau_ns / 1e9,
            checkpoint_write_s=delta_ns / 1e9,
            system_mtbf_h=m_ns / HOUR_NS,
            table_bytes=data_bytes,
            cost_backend=plain.name,
        )
    return rows_out


def _mlp_weights(tables: int, dim: int, bottom, top) -> int:
    sizes_b = (NUM_DENSE, *bottom)
    sizes_t = (interaction_dim(tables, dim), *top)
    return sum(a * b for s in (sizes_b, sizes_t) for a, b in zip(s[:-1], s[1:], strict=True))


def print_extrapolation(rows: list[dict[str, Any]], dep: DeploymentSpec) -> None:
    from rich.table import Table

    r0 = rows[0]
    title = (
        f"Extrapolation: {dep.workload}, {r0['table_bytes'] / 2**30:.1f} GiB of records, "
        f"{dep.servers} servers, server MTBF {dep.server_mtbf_hours:g} h (system "
        f"{r0['system_mtbf_h']:.1f} h), step {r0['step_ms']:.3g} ms, checkpoint "
        f"{r0['checkpoint_write_s']:.3g} s every {r0['checkpoint_interval_s'] / 60:.3g} min"
    )
    t = Table(title=title, title_justify="left")
    for c in ("strategy", "overhead %", "recovery", "to full redundancy", "memory +%"):
        t.add_column(c, justify="left" if c == "strategy" else "right")

    def s(v):
        return "-" if v is None else f"{v:.3g} s"

    for r in rows:
        t.add_row(
            r["strategy"],
            f"{r['overhead_pct']:.3g}",
            s(r["recovery_s"]),
            s(r["time_to_full_redundancy_s"]),
            f"{r['memory_overhead_pct']:.3g}",
        )
    from nmp.train.compare import _console

    _console().print(t)
