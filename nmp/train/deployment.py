"""A deployment at the papers' scale (:class:`DeploymentSpec`): its fields, the limits they are
held to and the check of them, and the bytes of one stored record.

What a setup may ask for is apart from what it costs (:mod:`nmp.train.step_costs`) and from
the strategies' comparison on it (:mod:`nmp.train.extrapolate`). Split from
:mod:`nmp.train.extrapolate`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.errors import NmpError
from nmp.train.config import SLOWEST
from nmp.train.intervals import INTERVAL_RULES

# The largest deployment taken (chosen): a million nodes of either kind, each a process or a
# machine, and rows of a million elements, beyond any recommendation model the papers train;
# a step's cost is measured on one batch, whose memory the guard bounds (nmp train's
# cli_scale.deployment). workers = 1e17 split the batch into 1e17 slices.
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
