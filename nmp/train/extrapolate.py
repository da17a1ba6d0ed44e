"""The comparison at the papers' scale: closed-form expectation and Monte-Carlo over failures.

A setup (``workloads/train/<name>.toml``, loaded by :mod:`nmp.train.setup`) gives the table
size, servers, workers, storage bandwidth, checkpoint interval rule, MTBF and restart time. The
per-step costs come from the hardware models (:func:`step_costs`): the architecture's
gather-reduce on a generated batch of the workload (split evenly over the servers), its update
of the touched rows with and without parity (``parity_update``: the delta's trip to the parity
node and the read-modify-write there), the dense compute at ``host_flops`` per worker.

Per strategy (system MTBF ``M = server MTBF / servers``; full checkpoint time ``δ = bytes /
(servers × storage bandwidth)``; a failure at time t since the last save):

- ``checkpoint``: saves every τ (fixed minutes, or Young/Daly); a failure costs the work since
  the last save (re-executed), the load of every shard and the restart;
- ``cpr-*``: saves every τ = 2 · PLS · servers · M (CPR's bound on the portion of lost samples),
  every ``cpr_full_every``-th one full, the others the rows the strategy's policy picks
  (:mod:`nmp.train.partial_save`: MFU the ``cpr_fraction`` most used, SSU those a
  ``cpr_ssu_sample`` of the inputs touched), which sets the save's cost and the updates a
  failure loses (``pls_effective``); a failure costs the failed shard's load and the restart;
  no re-execution;
- ``ecrec``: every step pays the parity's extra update work (memory, and with ``network_gbps``
  the deltas sent to the parity servers); a failure costs the rebuild's traffic (the survivors'
  reads and the replacement's writes, or the records pulled over the replacement's NIC,
  whichever is longer); training never pauses. A second failure during the rebuild (r = 1)
  loses data: its probability is reported;
- ``none``: a failure re-initializes the shard (its learned rows are lost).

:func:`monte_carlo` draws failure counts (Poisson) and times (uniform over the horizon) with a
seed and reports each strategy's overhead with a 95 % confidence interval; :func:`expected`
gives the closed-form mean the draws converge to (the crossover sweep uses it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, cast

import numpy as np

from nmp.errors import NmpError
from nmp.train.config import SLOWEST
from nmp.train.cost import layer_weights
from nmp.train.data import NUM_DENSE
from nmp.train.intervals import INTERVAL_RULES
from nmp.train.partial_save import at_scale, workload_rates
from nmp.train.schedule import COMMON, phase_costs_ns

HOUR_NS = 3600e9
# The largest deployment taken (chosen): a million nodes of either kind, each a process or a
# machine, and rows of a million elements, beyond any recommendation model the papers train;
# a step's cost is measured on one batch, whose memory the guard bounds (nmp train's
# _deployment). workers = 1e17 split the batch into 1e17 slices.
MAX_NODES = 2**20
MAX_DIM = 2**20
# CPR's cycle of partial saves (chosen: 1,024; CPR's papers save fully every 2-10): its
# policies keep a column per save of the cycle for every row (10^5 ran out of memory)
MAX_FULL_EVERY = 1024
# The shortest MTBF of one server a deployment given as input may have (chosen: one minute; a
# server failing more often than that recovers nothing, and 1e-300 h drew ~1e305 failures:
# refused by the memory guard with a 300-digit count). A deployment the kit derives (the
# crossover's scaled MTBF, a measured cluster's from its steps) is not held to it.
MIN_SERVER_MTBF_HOURS = 1 / 60


@dataclass(frozen=True)
class DeploymentSpec:
    name: str = "default"
    workload: str = "criteo-terabyte"
    table_rows: int = 0  # total rows of all tables; 0: the workload's tables
    dim: int = 0  # 0: the workload's dim
    batch: int = 0  # 0: the workload's batch
    servers: int = 5  # PAPERS.md: ECRec's 5 servers
    workers: int = 15  # PAPERS.md: ECRec's 15 workers (dense compute)
    server_mtbf_hours: float = 24.0 * 30  # chosen: one failure per server-month
    storage_gbps: float = 2.0  # per server; chosen: one NVMe SSD
    host_flops: float = 1.0e12  # per worker; as TrainConfig.host_flops
    # chosen: rescheduling a job (CPR's fourth part), one minute. Paid once per failure by the
    # strategies that roll the job back (checkpoint, CPR), in every row kind (expected,
    # Monte-Carlo, scheduled); ECRec and none keep training and pay none of it. Most of CPR's
    # overhead on its setups: swept x1/16..x16 by the crossover (papers/cpr, papers/ecrec).
    restart_s: float = 60.0
    optimizer_state_words: int = 1  # row-wise Adagrad
    k: int = 4  # PAPERS.md: ECRec k = 4
    r: int = 1
    rebuild_share: float = 0.5
    cpr_fraction: float = 0.1
    cpr_pls: float = 0.02
    cpr_full_every: int = 4
    cpr_ssu_sample: float = 0.05  # as TrainConfig.ssu_sample
    interval: str = "young"  # a checkpoint interval rule (nmp.train.intervals; fixed: interval_min)
    interval_min: tuple[float, ...] = ()
    arch: str = "recnmp"
    bottom: tuple[int, ...] = (512, 256, 64)  # PAPERS.md: Criteo Terabyte bottom 13-512-256-64
    top: tuple[int, ...] = (512, 512, 256, 1)  # PAPERS.md: top 512-512-256-1
    horizon_hours: float = 24.0
    trials: int = 2000
    seed: int = 0
    # 0: the step time the hardware model gives (gather + plain update + dense); > 0: the step
    # time of the paper's system, against which the modeled parity work is set (a switch: the
    # papers' parameter-server steps are network- and CPU-bound, longer than the modeled step).
    step_ms: float = 0.0
    # 0: the memory nodes sit in one near-memory system (no network between them). > 0: they
    # are parameter servers with a NIC of this many GB/s each, as in ECRec and CPR: a step also
    # moves the looked-up rows to the workers and their gradients back (the step is the longer
    # of the memory side and the network side: the servers overlap the two, chosen), the coded
    # update sends each delta to its parity server, and a rebuild pulls k survivors' records
    # per lost one into the replacement server.
    network_gbps: float = 0.0
    # Bytes sent per unit of work, by kind (nmp.train.traffic): per lookup, per sparse partial
    # sum, per (worker, row) gradient, per updated row to its parity server, per rebuilt
    # position. 0: the message layout's value (nmp.train.traffic.layout); a setup sets the
    # values a distributed run counted (nmp train --procs ... --json: traffic_per_unit).
    traffic_lookup: float = 0.0
    traffic_pooled: float = 0.0
    traffic_row_grad: float = 0.0
    traffic_parity_delta: float = 0.0
    traffic_repair: float = 0.0
    # Cost of one message beyond its bytes (us; one-way, measured by a ping-pong): per step a
    # server takes each worker's lookups and gradients and sends it partial sums (3 per
    # worker), and the coded update one delta message to each other server. 0: not charged.
    message_us: float = 0.0
    # 0: the workers' NICs are not a limit; > 0: each worker's NIC in GB/s (its lookups,
    # partial sums and gradients cross it; the servers' parity deltas do not).
    worker_network_gbps: float = 0.0
    # False: ``batch`` is the step's batch, split over the workers; True: every worker trains
    # a batch of its own (asynchronous parameter-server workers, as XDL's in ECRec's artifact),
    # so the servers serve ``workers`` batches per step and update their rows for each.
    batch_per_worker: bool = False
    # False: one bag per table (DLRM: a pooled vector per sample and table); True: every
    # sample's ids of all tables in one sum-pooled bag (ECRec's artifact feeds its 26 ids into
    # one xdl.embedding), so a server sends one partial sum per (sample, server) and the top
    # MLP takes one vector beside the bottom MLP's.
    one_bag: bool = False
    # > 0: memory of one server (GB); its share of the records and parity must fit.
    server_memory_gb: float = 0.0

    def validate(self, *, given: bool = True) -> None:
        """Raise :class:`NmpError` at the first key out of range; ``given``: a deployment given
        as input, held to :data:`MIN_SERVER_MTBF_HOURS` too."""
        for key in ("servers", "workers", "k", "r", "trials", "cpr_full_every"):
            if getattr(self, key) < 1:
                raise NmpError("must be >= 1", key=key)
        for key in ("table_rows", "dim", "batch", "optimizer_state_words", "seed"):
            if getattr(self, key) < 0:
                raise NmpError("must be >= 0", key=key)
        for key in ("server_mtbf_hours", "storage_gbps", "host_flops", "horizon_hours"):
            if not getattr(self, key) > 0:
                raise NmpError("must be > 0", key=key)
        for key, least in SLOWEST.items():
            if getattr(self, key) < least:
                raise NmpError(f"must be >= {least:g}, got {getattr(self, key):g}", key=key)
        if given and self.server_mtbf_hours < MIN_SERVER_MTBF_HOURS:
            raise NmpError(
                f"must be >= {MIN_SERVER_MTBF_HOURS:.4g} h (one minute), got "
                f"{self.server_mtbf_hours:g}",
                key="server_mtbf_hours",
            )
        for key in ("lookup", "pooled", "row_grad", "parity_delta", "repair"):
            if not getattr(self, f"traffic_{key}") >= 0:
                raise NmpError("must be >= 0", key=f"traffic_{key}")
        for key in ("message_us", "worker_network_gbps", "server_memory_gb"):
            if not getattr(self, key) >= 0:
                raise NmpError("must be >= 0", key=key)
        for key in ("restart_s", "step_ms", "network_gbps"):
            if getattr(self, key) < 0:
                raise NmpError("must be >= 0", key=key)
        # 0 means no network; a link is at least as fast as the slowest storage taken (1e-300
        # GB/s made every overhead infinite)
        for key in ("network_gbps", "worker_network_gbps"):
            if 0 < getattr(self, key) < SLOWEST["storage_gbps"]:
                raise NmpError(
                    f"must be 0 (no network) or >= {SLOWEST['storage_gbps']:g}, got "
                    f"{getattr(self, key):g}",
                    key=key,
                )
        for key in ("servers", "workers", "k", "r"):
            if getattr(self, key) > MAX_NODES:
                raise NmpError(f"must be <= {MAX_NODES:,}, got {getattr(self, key):,}", key=key)
        if self.cpr_full_every > MAX_FULL_EVERY:
            raise NmpError(
                f"must be <= {MAX_FULL_EVERY:,}, got {self.cpr_full_every:,}", key="cpr_full_every"
            )
        if self.optimizer_state_words > MAX_DIM:
            raise NmpError(
                f"must be <= {MAX_DIM:,}, got {self.optimizer_state_words:,}",
                key="optimizer_state_words",
            )
        if self.dim > MAX_DIM:
            raise NmpError(f"must be <= {MAX_DIM:,}, got {self.dim:,}", key="dim")
        if self.servers <= self.r:
            raise NmpError(f"must exceed r ({self.r})", key="servers")
        for key in ("rebuild_share", "cpr_fraction", "cpr_ssu_sample"):
            if not 0 < getattr(self, key) <= 1:
                raise NmpError(f"must be in (0, 1], got {getattr(self, key):g}", key=key)
        if not 0 < self.cpr_pls < 1:
            raise NmpError(f"must be in (0, 1), got {self.cpr_pls:g}", key="cpr_pls")
        if self.interval not in INTERVAL_RULES:
            raise NmpError(INTERVAL_RULES.unknown_message(self.interval), key="interval")
        INTERVAL_RULES.get(self.interval).check(self.interval_min)
        from nmp.workload import load_workload

        try:
            spec = load_workload(self.workload)
        except NmpError as exc:
            raise NmpError(exc.message, key="workload") from None
        if self.server_memory_gb:
            rows = self.table_rows or sum(t.rows for t in spec.tables)
            data = rows * record_bytes(self.dim or spec.tables[0].dim, self.optimizer_state_words)
            per_server_gb = data * (self.k + self.r) / self.k / self.servers / 1e9
            if per_server_gb > self.server_memory_gb:
                # the value that makes the records large where the setup sets one
                key = "table_rows" if self.table_rows else "dim" if self.dim else "server_memory_gb"
                raise NmpError(
                    f"{per_server_gb:.4g} GB of records and parity per server do not fit in "
                    f"server_memory_gb = {self.server_memory_gb:g}",
                    key=key,
                )


def record_bytes(dim: int, state_words: int) -> int:
    """Bytes of one stored record: the row and its optimizer state in fp32, padded to an even
    number of words."""
    width = dim + state_words
    return (width + width % 2) * 4


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


@dataclass(frozen=True)
class _Model:
    """Every strategy's costs as (per unit time, per failure) pieces, in ns."""

    m_ns: float
    horizon_ns: float
    delta_ns: float
    load_ns: float
    restart_ns: float
    shard_load_ns: float
    ckpt_taus_ns: tuple[float, ...]
    cpr_tau_ns: float
    phase_ns: dict[str, float]  # every phase's time at scale (nmp.train.schedule)
    step_ns: float  # the step the fractions are taken of
    rebuild_traffic_ns: float
    rebuild_ns: float
    reinit_ns: float
    data_bytes: float
    base_mem: float
    c: StepCosts


def _model(dep: DeploymentSpec, units: dict[str, int] | None = None) -> _Model:
    """The pieces of every strategy's cost; ``units`` (lookups, pooled_vectors, worker_rows,
    rows_touched, rows_total) replace the generated batch's where a run's own step is known."""
    dep.validate(given=False)  # (a derived deployment may model a shorter MTBF)
    c = step_costs(dep)
    if units:
        c = replace(c, **cast(dict[str, Any], units))
    data_bytes = float(c.rows_total) * c.record_bytes
    if dep.server_memory_gb:  # (validate checked the workload's rows; a run's own may differ)
        per_server = data_bytes * (dep.k + dep.r) / dep.k / dep.servers / 1e9
        if per_server > dep.server_memory_gb:
            raise NmpError(
                f"setup {dep.name}: {per_server:.0f} GB of records and parity per server do "
                f"not fit in server_memory_gb = {dep.server_memory_gb:g}"
            )
    m_ns = dep.server_mtbf_hours * HOUR_NS / dep.servers
    bw = dep.servers * dep.storage_gbps  # bytes per ns, all servers writing in parallel
    delta_ns = data_bytes / bw
    taus = INTERVAL_RULES.get(dep.interval).intervals_ns(delta_ns, m_ns, dep.interval_min)
    shard_rows = c.rows_total / dep.servers
    # Rebuild: every lost position reads k survivors and writes one record, on the survivors'
    # and the replacement's memory; positions include the parity (shard_rows * (k + r) / k).
    positions = shard_rows * (dep.k + dep.r) / dep.k
    traffic = positions * (dep.k * c.read_ns_per_record + c.write_ns_per_record)
    # Batches a server serves per step: one (the step's batch, split over the workers), or
    # one per worker (every worker trains its own batch: XDL's workers in ECRec's artifact).
    nb = dep.workers if dep.batch_per_worker else 1
    dense_ns = c.step_ns - c.gather_ns - c.upd_plain_ns  # per worker, its share of the batch
    if dep.batch_per_worker:
        dense_ns *= dep.workers  # each worker computes its whole batch
    compute = {
        "gather": nb * c.gather_ns,
        "dense": dense_ns,
        "optimizer": nb * c.upd_plain_ns,
        "parity_xor": nb * (c.upd_coded_ns - c.upd_plain_ns),  # the parity's in-memory update
    }
    step_bytes: dict[str, float] = {}
    if dep.network_gbps:
        # The step's bytes by kind (nmp.train.traffic): lookups in, sparse partial sums out,
        # row gradients in; the coded update's delta per touched row and parity; a rebuild
        # receives k survivors' shards per lost position.
        tp = traffic_profile(dep, c)
        grad_rows = c.rows_touched if dep.batch_per_worker else c.worker_rows
        step_bytes = {
            "lookup": nb * c.lookups * tp.lookup,
            "pooled": nb * c.pooled_vectors * tp.pooled,
            "row_grad": nb * grad_rows * tp.row_grad,
            "parity_delta": nb * c.rows_touched * dep.r * tp.parity_delta,
        }
        traffic = max(traffic, positions * tp.repair / dep.network_gbps)
    phase_ns = phase_costs_ns(
        step_bytes=step_bytes,
        server_gbps=dep.network_gbps,
        worker_gbps=dep.worker_network_gbps,
        servers=dep.servers,
        workers=dep.workers,
        message_ns=dep.message_us * 1e3 if dep.network_gbps else 0.0,
        compute_ns=compute,
    )
    # the plain step's critical path (every strategy's schedule extends the common one)
    step = dep.step_ms * 1e6 or COMMON.critical_path_ns(phase_ns)
    return _Model(
        m_ns=m_ns,
        horizon_ns=dep.horizon_hours * HOUR_NS,
        delta_ns=delta_ns,
        load_ns=delta_ns,
        restart_ns=dep.restart_s * 1e9,
        shard_load_ns=data_bytes / dep.servers / dep.storage_gbps,
        ckpt_taus_ns=taus,
        cpr_tau_ns=2.0 * dep.cpr_pls * dep.servers * m_ns,
        phase_ns=phase_ns,
        step_ns=step,
        rebuild_traffic_ns=traffic,
        rebuild_ns=traffic / dep.rebuild_share,
        reinit_ns=shard_rows * c.write_ns_per_record,
        data_bytes=data_bytes,
        base_mem=data_bytes + c.dense_bytes,
        c=c,
    )


def recovery_parts_s(dep: DeploymentSpec) -> dict[str, float]:
    """A failure's recovery pieces in seconds: loading every shard of a checkpoint, the
    restart, and ECRec's rebuild of the lost shard (the model's terms, for a claim's detail)."""
    md = _model(dep)
    return {
        "load_s": md.load_ns / 1e9,
        "restart_s": md.restart_ns / 1e9,
        "rebuild_s": md.rebuild_ns / 1e9,
    }


def _partial_save(md: _Model, dep: DeploymentSpec, cls) -> tuple[float, Any]:
    """(mean write time of one CPR save, full and partial mixed; the policy's PartialSave)."""
    rates = workload_rates(dep.workload, dep.table_rows, dep.batch)
    steps = md.cpr_tau_ns / md.step_ns
    f = dep.cpr_full_every
    ps = at_scale(cls.partial_rows, rates, steps, f, dep.cpr_fraction, dep.cpr_ssu_sample)
    # a partial save writes its rows' records and their int64 ids
    partial_ns = md.delta_ns * ps.rows_per_partial * (md.c.record_bytes + 8) / md.data_bytes
    return (md.delta_ns + (f - 1) * partial_ns) / f, ps


def _ckpt_name(name: str, dep: DeploymentSpec, i: int) -> str:
    return INTERVAL_RULES.get(dep.interval).label(name, dep.interval_min, i)


def row_labels(name: str, dep: DeploymentSpec) -> frozenset[str]:
    """The ``strategy`` labels of strategy ``name``'s rows at scale: its name, or one label per
    checkpoint interval (``checkpoint-30min``). A stage picks a strategy's rows by these, never by
    a prefix of its name, which would take another strategy's rows (``checkpoint-lite``)."""
    rule = INTERVAL_RULES.get(dep.interval)
    return frozenset(
        {name, *(rule.label(name, dep.interval_min, i) for i in range(len(dep.interval_min)))}
    )


def _strategies() -> list[tuple[str, Any]]:
    """The registered protections (each prices itself at scale: ``scale_expected``,
    ``scale_scheduled``, ``scale_draws``)."""
    from nmp.train.strategies import REGISTRY

    return [(name, cls) for name, cls in REGISTRY.items() if not cls.is_baseline]


def steady_fraction(md: _Model, cls) -> float:
    """A strategy's failure-free time per unit of training: its schedule's critical path beyond
    the common step's (the phases it adds in series; background phases cost nothing)."""
    extra = cls.schedule.critical_path_ns(md.phase_ns) - COMMON.critical_path_ns(md.phase_ns)
    return extra / md.step_ns


def expected(dep: DeploymentSpec) -> list[dict[str, Any]]:
    """Closed-form expected overhead per strategy (failures at rate 1/M, a failure a uniform
    time after the last save)."""
    md = _model(dep)
    return [row for _, cls in _strategies() for row in cls.scale_expected(md, dep)]


def scheduled(
    dep: DeploymentSpec,
    steps: int,
    failure_steps: list[int],
    units: dict[str, int] | None = None,
    regroup_s: float = 0.0,
) -> list[dict[str, Any]]:
    """Overhead per strategy of one run of ``steps`` steps with a failure before each of
    ``failure_steps``: the closed form's pieces on that schedule (no draws), the restart where
    the closed form charges it (the rolling-back strategies). The checkpoint rows use the
    first interval; a failure at step f re-executes f mod the interval. ``regroup_s``: a
    runtime's regroup on every failure, which every strategy stands still for (the kit's
    processes re-form their group whatever the strategy, ``nmp train --procs``; 0, as the
    papers' models, where no such runtime is modeled)."""
    md = _model(dep, units)
    horizon = steps * md.step_ns
    regroup_ns = regroup_s * 1e9 * len(failure_steps)
    rows = [
        row
        for _, cls in _strategies()
        for row in cls.scale_scheduled(md, dep, horizon, failure_steps)
    ]
    for row in rows:
        row["overhead_pct"] += 100.0 * regroup_ns / horizon
        if failure_steps:
            row["recovery_s"] += regroup_s
    return rows


def _row(name: str, steady: float, failures: float, recovery_ns: float) -> dict[str, Any]:
    return {
        "strategy": name,
        "overhead_pct": 100.0 * (steady + failures),
        "overhead_no_failure_pct": 100.0 * steady,
        "recovery_s": recovery_ns / 1e9,
    }


@dataclass(frozen=True)
class Draws:
    """The Monte-Carlo's failures (sorted by trial, then time) for the strategies' pricing."""

    t: np.ndarray  # ns into the horizon
    trial: np.ndarray
    node: np.ndarray
    per_trial: Any  # per-failure ns -> per-trial sums
    replica: float  # the MLP replica's memory, a fraction of the protected bytes
    trials: int


def monte_carlo(dep: DeploymentSpec, trials: int | None = None) -> list[dict[str, Any]]:
    """Overheads over ``trials`` seeded draws of the failures in ``horizon_hours``, with 95 %
    confidence intervals of the mean, next to the closed-form expectation."""
    md = _model(dep)
    trials = trials or dep.trials
    rng = np.random.default_rng([dep.seed, 0x3C])
    h = md.horizon_ns
    counts = rng.poisson(h / md.m_ns, trials)
    trial = np.repeat(np.arange(trials), counts)
    t = rng.uniform(0.0, h, trial.size)
    node = rng.integers(0, dep.servers, trial.size)
    order = np.lexsort((t, trial))
    trial, t, node = trial[order], t[order], node[order]
    exp = {r["strategy"]: r for r in expected(dep)}

    def per_trial(per_failure: np.ndarray) -> np.ndarray:
        return np.bincount(trial, weights=per_failure, minlength=trials)

    out: list[dict[str, Any]] = []

    def add(name, steady, extra, recovery, redundancy, memory, **kw):
        frac = steady + extra / h
        mean, half = float(frac.mean()), 1.96 * float(frac.std(ddof=1)) / np.sqrt(trials)
        row = {
            "strategy": name,
            "overhead_pct": 100.0 * mean,
            "overhead_ci95_pct": 100.0 * half,
            "overhead_expected_pct": exp[name]["overhead_pct"],
            "overhead_no_failure_pct": 100.0 * steady,
            "recovery_s": None if recovery is None else recovery / 1e9,
            "time_to_full_redundancy_s": None if redundancy is None else redundancy / 1e9,
            "memory_overhead_pct": 100.0 * memory,
        }
        row.update(kw)
        out.append(row)

    draws = Draws(t, trial, node, per_trial, md.c.dense_bytes / md.base_mem, trials)
    for _, cls in _strategies():
        for name, steady, extra, recovery, redundancy, memory, kw in cls.scale_draws(
            md, dep, draws
        ):
            add(name, steady, extra, recovery, redundancy, memory, **kw)
    c = md.c
    for r in out:
        r.update(
            setup=dep.name,
            trials=trials,
            failures_mean=float(counts.mean()),
            step_ms=md.step_ns / 1e6,
            step_source="setup"
            if dep.step_ms
            else ("modeled, with network" if dep.network_gbps else "modeled"),
            checkpoint_write_s=md.delta_ns / 1e9,
            system_mtbf_h=md.m_ns / HOUR_NS,
            table_bytes=md.data_bytes,
            update_plain_ns=c.upd_plain_ns,
            update_coded_ns=c.upd_coded_ns,
            cost_backend=c.backend,
        )
    return out


def describe(dep: DeploymentSpec, rows: list[dict[str, Any]]) -> str:
    """One sentence on the setup behind :func:`monte_carlo`'s ``rows`` (table title, report)."""
    r0 = rows[0]
    return (
        f"{dep.workload}, {r0['table_bytes'] / 2**30:.1f} GiB of records, {dep.servers} servers, "
        f"server MTBF {dep.server_mtbf_hours:g} h (system {r0['system_mtbf_h']:.1f} h), step "
        f"{r0['step_ms']:.3g} ms ({r0['step_source']}), full checkpoint "
        f"{r0['checkpoint_write_s']:.3g} s; {r0['trials']} seeded Monte-Carlo draws of "
        f"{dep.horizon_hours:g} h ({r0['failures_mean']:.2f} failures on average)"
    )


def print_extrapolation(rows: list[dict[str, Any]], dep: DeploymentSpec) -> None:
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(f"Setup {dep.name}: {describe(dep, rows)}"), title_justify="left")
    cols = (
        "strategy",
        "overhead % (±95%)",
        "expected %",
        "no-failure %",
        "recovery",
        "to full redundancy",
        "memory +%",
        "notes",
    )
    for c in cols:
        t.add_column(c, justify="left" if c in ("strategy", "notes") else "right")

    def s(v):
        return "-" if v is None else f"{v:.3g} s"

    for r in rows:
        notes = []
        if "interval_s" in r:
            notes.append(f"every {r['interval_s'] / 60:.3g} min")
        if "pls_realized_mean" in r:
            notes.append(
                f"PLS {r['pls_realized_mean']:.2%} (bound {r['pls_bound']:.0%}), with partial "
                f"saves {r['pls_effective_mean']:.2%}; saves {r['partial_save_fraction']:.0%} "
                "of rows"
            )
        if "p_data_loss" in r:
            notes.append(f"P(2nd failure in rebuild) {r['p_data_loss']:.2%}")
        t.add_row(
            r["strategy"],
            f"{r['overhead_pct']:.3g} ±{r['overhead_ci95_pct']:.2g}",
            f"{r['overhead_expected_pct']:.3g}",
            f"{r['overhead_no_failure_pct']:.3g}",
            s(r["recovery_s"]),
            s(r["time_to_full_redundancy_s"]),
            f"{r['memory_overhead_pct']:.3g}",
            "; ".join(notes),
        )
    from nmp.report.console import make_console

    make_console().print(t)
    for line in closing_note(rows, dep):
        print(line)


def closing_note(rows: list[dict[str, Any]], dep: DeploymentSpec) -> list[str]:
    """Per strategy whose schedule adds phases to the common step: which, whether they are on
    the critical path, what they cost, and whether its overhead stays below the cheapest
    rolling-back (checkpointing) strategy's, with failures and without."""
    from nmp.train.strategies import REGISTRY

    md = _model(dep)
    by = {r["strategy"]: r for r in rows}
    rolling = set().union(*(row_labels(n, dep) for n, c in REGISTRY.items() if c.rolls_back))
    ckpt = [r for r in rows if r["strategy"] in rolling]
    out = []
    for name, cls in _strategies():
        added = [p for p in cls.schedule.step if not COMMON.has(p.name)]
        if not added or name not in by or not ckpt:
            continue
        fg = [p.name for p in added if not p.background]
        bg = [p.name for p in added if p.background]
        costs = ", ".join(f"{n} {md.phase_ns.get(n, 0.0) / 1e6:.3g} ms" for n in fg + bg)
        best_ff = min(ckpt, key=lambda r: r["overhead_no_failure_pct"])
        best = min(ckpt, key=lambda r: r["overhead_pct"])
        ff, tot = by[name]["overhead_no_failure_pct"], by[name]["overhead_pct"]
        out.append(
            f"{name}'s schedule adds {', '.join(fg) or 'nothing'} on the critical path"
            + (f" and {', '.join(bg)} in the background" if bg else "")
            + f" ({costs}; step {md.step_ns / 1e6:.3g} ms): failure-free {ff:.3g} % against "
            f"{best_ff['strategy']}'s {best_ff['overhead_no_failure_pct']:.3g} % ("
            + ("below" if ff < best_ff["overhead_no_failure_pct"] else "NOT below")
            + f"); with failures {tot:.3g} % against {best['strategy']}'s "
            f"{best['overhead_pct']:.3g} % ("
            + ("below" if tot < best["overhead_pct"] else "NOT below")
            + ")."
        )
        v = verdict(md, cls, ff, best_ff, tot, best)
        by[name].update(v)
        out.append(
            f"Schedule charged: {v['schedule']}. The paper's conclusion ({name}'s overhead "
            "below checkpointing's) "
            + ("HOLDS" if v["paper_conclusion_holds"] else "does NOT hold")
            + f" on setup '{dep.name}' with this schedule; with its added phases overlapped "
            f"(assumed, not run) its failure-free overhead would be "
            f"{v['overlapped_no_failure_pct']:.3g} %."
        )
    return out


def verdict(md: _Model, cls, ff: float, best_ff: dict, tot: float, best: dict) -> dict:
    """Which schedule the rows charge and whether the paper's conclusion (this strategy's
    overhead below checkpointing's, failure-free and with failures) holds with it; beside it
    the same step with the added phases overlapped (background), which the conclusion would
    need where it fails."""
    holds = ff < best_ff["overhead_no_failure_pct"] and tot < best["overhead_pct"]
    over = cls.schedule.overlapped(COMMON)
    ff_over = over.critical_path_ns(md.phase_ns) - COMMON.critical_path_ns(md.phase_ns)
    return {
        "schedule": cls.schedule.basis or "as declared",
        "paper_conclusion_holds": bool(holds),
        "overlapped_no_failure_pct": 100.0 * ff_over / md.step_ns,
    }
