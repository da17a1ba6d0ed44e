"""The training loop: DLRM whose embeddings live in the near-memory store.

One step: read the touched records from the store (decoding rows of failed nodes), sum-pool
them per bag (what the memory-side units return), run the dense DLRM in torch, turn the pooled
gradients into per-row gradients, apply the sparse optimizer, and write the new records with the
two-phase commit (phase 1 data, phase 2 parity deltas). A :class:`~nmp.train.strategies.Strategy`
hooks in before and after each step and at failures. The cost model charges modeled time to
each part (see :mod:`nmp.train.cost`).

Determinism: batch ``s`` is a pure function of (seed, s); torch runs single-threaded with
deterministic algorithms; the store's reductions run in a fixed order. Two runs that read the
same bits therefore write the same bits, which is what lets a recovered run be compared with the
failure-free one by a hash of the final state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from nmp.errors import NmpError
from nmp.train import dense as dense_step
from nmp.train import optim
from nmp.train.config import TrainConfig
from nmp.train.cost import CostLedger, CostModel
from nmp.train.data import NUM_DENSE, Batch, CriteoTSV, SyntheticCriteo
from nmp.train.failures import Failure
from nmp.train.metrics import all_metrics
from nmp.train.model import DenseDLRM
from nmp.train.shard import (
    NodeMemory,
    ShardMap,
    add_partials,
    combine_row_grads,
    micro_row_grads,
    request_for,
    worker_slices,
)
from nmp.train.store import StripedStore


@dataclass(frozen=True)
class Geometry:
    """Resolved model shape: the capped tables of the workload and the MLPs."""

    table_rows: tuple[int, ...]
    dim: int
    batch: int
    pooling: int
    alpha: float
    bottom: tuple[int, ...]
    top: tuple[int, ...]

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.table_rows)]).astype(np.int64)

    @property
    def total_rows(self) -> int:
        return int(sum(self.table_rows))


def resolve_geometry(cfg: TrainConfig) -> Geometry:
    from nmp.workload import load_workload

    spec = load_workload(cfg.workload)
    tables = spec.tables[: cfg.max_tables] if cfg.max_tables else spec.tables
    dim = cfg.dim or tables[0].dim
    rows = tuple(min(t.rows, cfg.max_rows) for t in tables)
    pooling = max(1, min(cfg.max_pooling, round(spec.mean_pooling)))
    alpha = cfg.zipf_alpha or (spec.alpha if spec.alpha else 1.05)
    return Geometry(
        table_rows=rows,
        dim=dim,
        batch=cfg.batch or spec.batch,
        pooling=pooling,
        alpha=float(alpha),
        bottom=(*cfg.bottom, dim),
        top=(*cfg.top, 1),
    )


def make_data(cfg: TrainConfig, geo: Geometry):
    """(geometry, data stream): the synthetic teacher, or a Criteo TSV file (one id per bag)."""
    if cfg.data:
        data = CriteoTSV(cfg.data, geo.table_rows, batch=geo.batch)
        if geo.pooling != 1:
            geo = Geometry(**{**geo.__dict__, "pooling": 1})
        return geo, data
    return geo, SyntheticCriteo(
        geo.table_rows, batch=geo.batch, pooling=geo.pooling, alpha=geo.alpha, seed=cfg.seed
    )


def make_dense(cfg: TrainConfig, geo: Geometry) -> DenseDLRM:
    """The MLP as at step 0 (seeded: every replica and every process builds the same one)."""
    torch.manual_seed(cfg.seed)
    return DenseDLRM(NUM_DENSE, len(geo.table_rows), geo.dim, geo.bottom, geo.top)


def record_width(cfg: TrainConfig, geo: Geometry) -> int:
    """float32 words of one record: the row, its optimizer state, padding to whole 64-bit
    words (as the store keeps it)."""
    w = geo.dim + optim.state_width(cfg.optimizer, geo.dim)
    return w + (w % 2)


def init_records(
    geo: Geometry, width: int, seed: int, rows: np.ndarray | None = None
) -> np.ndarray:
    """Initial records of ``rows`` (all rows by default): values uniform in ±sqrt(1/rows_t)
    as DLRM initializes its tables, optimizer state zero. A pure function of (seed, row)."""
    offsets = geo.offsets
    rows = np.arange(geo.total_rows, dtype=np.int64) if rows is None else np.asarray(rows)
    table = np.searchsorted(offsets, rows, side="right") - 1
    bound = np.sqrt(1.0 / np.asarray(geo.table_rows, dtype=np.float64))[table]
    # Counter-based draw per row, so re-initializing any subset gives the same values as at start.
    out = np.zeros((len(rows), width), dtype=np.float32)
    for lo in range(0, len(rows), 1 << 16):
        sl = slice(lo, lo + (1 << 16))
        keys = rows[sl].astype(np.uint64)[:, None] * np.uint64(geo.dim) + np.arange(
            geo.dim, dtype=np.uint64
        )
        u = _uniform_hash(keys, np.uint64(seed))
        out[sl, : geo.dim] = ((2.0 * u - 1.0) * bound[sl, None]).astype(np.float32)
    return out


def _uniform_hash(keys: np.ndarray, seed: np.uint64) -> np.ndarray:
    salt = np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E5) % (1 << 64))
    z = keys + salt
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def state_digest(records: np.ndarray, dense: dict[str, np.ndarray]) -> str:
    """SHA-256 of the records of every row (float32 [rows, width], row order) and of the MLP
    arrays (by name): the one fingerprint of a run's state, in every trainer."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(records, dtype=np.float32).tobytes())
    for k, v in sorted(dense.items()):
        h.update(k.encode())
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


@dataclass
class RunResult:
    strategy: str
    steps: int
    metrics: dict[str, float]
    final_state_sha256: str
    ledger: CostLedger
    events: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    trainer: Any = field(default=None, repr=False)  # the finished run (store, model) for checks


class Trainer:
    """Owns the model, the store, the data stream and the cost model of one run."""

    def __init__(self, cfg: TrainConfig, *, parity: bool, cost: CostModel | None = None) -> None:
        from nmp.train.schedule import COMMON

        self.schedule = COMMON  # run() sets the strategy's (nmp.train.schedule)
        torch.manual_seed(cfg.seed)
        torch.set_num_threads(1)
        self.cfg = cfg
        self.geo = resolve_geometry(cfg)
        self.geo, self.data = make_data(cfg, self.geo)
        geo = self.geo
        self.dense = make_dense(cfg, geo)
        self.dense_params = list(self.dense.parameters())
        self.width = geo.dim + optim.state_width(cfg.optimizer, geo.dim)
        scheme = None
        if parity:
            from nmp.train.codes import make_scheme

            scheme = make_scheme(cfg.code, cfg.nodes, cfg.parities)
        self.store = StripedStore(
            geo.total_rows,
            self.width,
            cfg.nodes,
            scheme,
            layout_parities=cfg.parities,
            seed=cfg.seed,
        )
        self.store.load_all(init_records(geo, self.width, cfg.seed))
        self.shard = ShardMap(geo.table_rows, cfg.nodes, cfg.parities)
        self.slices = worker_slices(geo.batch, cfg.workers)
        # Every memory node is an embedding server whose memory is an nmp.arch design; its
        # units gather-reduce its rows (the values read from the store, decoded where lost).
        self.node_mem = [
            NodeMemory(cfg.arch, cfg.memory, cfg.seed, self.shard, n, geo.dim)
            for n in range(cfg.nodes)
        ]
        g0 = self.global_rows(self.data.batch_at(0))[:, self.slices[0]]
        for n, mem in enumerate(self.node_mem):
            mem.prime(request_for(self.shard, n, g0))
        self.cost = cost or CostModel(cfg, geo, self.store)
        self.cost.gather_fn = self.gather_cost
        self.ledger = CostLedger()
        from nmp.train.alltoall.exchange import make_alltoall

        self.alltoall = make_alltoall(cfg)  # None unless train.compress names a codec
        self.step = 0
        self.eval_set = self.data.eval_batches(cfg.eval_batches)
        # Dense optimizer state (momentum SGD's velocity per weight), carried with the weights.
        self.velocity = (
            [torch.zeros_like(p) for p in self.dense_params]
            if optim.DENSE_OPTIMIZERS.get(cfg.dense_optimizer).keeps_velocity
            else []
        )
        # The MLP (weights + optimizer state) is replicated on nodes 0..dense_replicas-1. The
        # torch module is the replica of the lowest live replica node; the others are copies
        # refreshed after every step (they apply the same all-reduced update). A failure erases
        # the replica on its node; recovery copies a surviving one.
        self.dense_nodes = list(range(cfg.dense_replicas))
        self.dense_primary = 0
        self.dense_mirrors: dict[int, dict[str, np.ndarray]] = {}
        self.sync_mirrors()
        self._mark = np.zeros(geo.total_rows, dtype=bool)
        self._pos = np.zeros(geo.total_rows, dtype=np.int64)

    # -- one step -------------------------------------------------------------------------------

    def global_rows(self, b: Batch) -> np.ndarray:
        return b.ids + self.geo.offsets[:-1, None, None]

    def _unique(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct rows and each lookup's index into them (``np.unique`` with
        ``return_inverse``, by a mark over the row space instead of a sort)."""
        mark = self._mark
        mark[g] = True
        uniq = np.flatnonzero(mark)
        mark[uniq] = False
        self._pos[uniq] = np.arange(len(uniq))
        return uniq, self._pos[g]

    def pool(self, g: np.ndarray, values, *, timed: bool = False):
        """The pooled vectors [B, T, dim] of one micro-batch (global rows ``g`` [T, B, P]):
        every server's units gather-reduce its rows, the partial sums added in server order.
        With ``timed``, also the servers' OpResults (None for a server without lookups)."""
        parts, ops = [], []
        for n, mem in enumerate(self.node_mem):
            part, op = mem.gather(request_for(self.shard, n, g), values, timed=timed)
            parts.append(part)
            ops.append(op)
        return add_partials(parts, g.shape[1], g.shape[0], self.geo.dim), ops

    def _values(self, b: Batch):
        """(distinct rows of ``b``, their records, inverse, a reader of their records)."""
        g = self.global_rows(b)
        uniq, inv = self._unique(g.ravel())
        rec = self.store.read(uniq)
        pos = self._pos
        return g, uniq, rec, inv, (lambda rows: rec[pos[rows]])

    def pooled(self, b: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Gather-reduce through the servers: (pooled [B, T, dim], unique rows, their records,
        inverse index of each lookup)."""
        g, uniq, rec, inv, values = self._values(b)
        pooled = np.concatenate([self.pool(g[:, sl], values)[0] for sl in self.slices])
        return pooled, uniq, rec, inv

    def gather_cost(self, b: Batch, ops_by_micro=None) -> tuple[float, float]:
        """Modeled (ns, pJ) of the step's gathers: every server serves the workers' requests
        one after the other and the servers work in parallel (the slowest one's time; energy
        summed)."""
        if ops_by_micro is None:
            g, _, _, _, values = self._values(b)
            ops_by_micro = [self.pool(g[:, sl], values, timed=True)[1] for sl in self.slices]
        per_node = np.zeros(len(self.node_mem))
        energy = 0.0
        for ops in ops_by_micro:
            for n, op in enumerate(ops):
                if op is not None:
                    per_node[n] += op.t_ns
                    energy += op.total_energy_pj
        return float(per_node.max()), energy

    def train_step(self, between_hook=None) -> float:
        """One optimizer step on batch ``self.step``; returns the loss."""
        b = self.data.batch_at(self.step)
        self.last_batch = b
        g, uniq, rec, inv, values = self._values(b)
        timed = self.cost.wants_sample(self.step)
        bsz = b.size
        loss_value, grads, row_parts, ops = 0.0, [], [], []
        for sl in self.slices:
            gw = g[:, sl]
            pooled, op = self.pool(gw, values, timed=timed)
            ops.append(op)
            exchange = (
                (lambda t, a2a=self.alltoall, s=self.step: a2a.apply(t, s))
                if self.alltoall
                else None
            )
            loss, grad_w, pooled_grad = dense_step.micro_step(
                self.dense, self.dense_params, b.dense[sl], pooled, b.label[sl], bsz, exchange
            )
            loss_value += loss
            grads.append(grad_w)
            row_parts.append(micro_row_grads(gw, pooled_grad))
        dense_step.apply_update(
            self.dense_params,
            self.velocity,
            dense_step.add_grads(grads),
            lr=self.cfg.lr_dense,
            momentum=self.cfg.momentum,
        )
        rows, row_grad = combine_row_grads(row_parts)
        assert np.array_equal(rows, uniq)
        new = optim.apply_rows(self.cfg.optimizer, rec, row_grad, lr=self.cfg.lr_embedding)
        pending = self.store.write_phase1(uniq, rec, new)
        if between_hook is not None:
            between_hook(pending)
        self.store.write_phase2(pending)
        gather = self.gather_cost(b, ops) if timed else None
        self.cost.charge_step(
            self.ledger, self.step, b, uniq, gather=gather, schedule=self.schedule
        )
        self.sync_mirrors()
        self.step += 1
        if not np.isfinite(loss_value):
            raise NmpError(
                f"training diverged: loss {loss_value} at step {self.step - 1} (lower "
                "train.lr_embedding / train.lr_dense)"
            )
        return loss_value

    # -- evaluation and state --------------------------------------------------------------------

    def evaluate(self) -> dict[str, Any]:
        labels, probs = [], []
        for b in self.eval_set:
            g, _, _, _, values = self._values(b)
            for sl in worker_slices(b.size, self.cfg.workers):
                pooled = self.pool(g[:, sl], values)[0]
                probs.append(dense_step.predict(self.dense, b.dense[sl], pooled))
            labels.append(b.label)
        label = np.concatenate(labels)
        out = all_metrics(label, np.concatenate(probs))
        if not (np.isfinite(out["logloss"]) and np.isfinite(out["accuracy"])):
            raise NmpError(f"evaluation produced non-finite metrics: {out}")
        if all(b.teacher_prob is not None for b in self.eval_set):
            # The ceiling: the AUC of the teacher's own probabilities on the same samples.
            teacher = np.concatenate([b.teacher_prob for b in self.eval_set])
            out["auc_teacher"] = all_metrics(label, teacher)["auc"]
        return out

    def dense_state(self) -> dict[str, np.ndarray]:
        """Weights (``dense.*``) and optimizer state (``dense_velocity.*``) of the MLP."""
        return self.dense_arrays(self.dense, self.velocity)

    @staticmethod
    def dense_arrays(model, velocity) -> dict[str, np.ndarray]:
        """:meth:`dense_state` of any replica (a distributed worker's too)."""
        out = {f"dense.{k}": v.detach().numpy().copy() for k, v in model.state_dict().items()}
        for i, vel in enumerate(velocity):
            out[f"dense_velocity.{i}"] = vel.numpy().copy()
        return out

    def load_dense_state(self, arrays: dict[str, np.ndarray]) -> None:
        sd = {
            k[len("dense.") :]: torch.from_numpy(v.copy())
            for k, v in arrays.items()
            if k.startswith("dense.")
        }
        self.dense.load_state_dict(sd)
        with torch.no_grad():
            for i, vel in enumerate(self.velocity):
                vel.copy_(torch.from_numpy(arrays[f"dense_velocity.{i}"]))

    def sync_mirrors(self) -> None:
        """Refresh the replicas other than the torch module's. They hold the same values and
        are never written in place, so one fresh snapshot serves every mirror node."""
        if len(self.dense_nodes) > 1:
            state = self.dense_state()
            for node in self.dense_nodes:
                if node != self.dense_primary:
                    self.dense_mirrors[node] = state

    def erase_dense_replica(self, node: int) -> bool:
        """A failure of ``node`` erases its MLP replica (the memory holds garbage). Returns
        whether a replica survives elsewhere; if so it is copied to the replacement node (and
        into the torch module if that was the erased one)."""
        if node not in self.dense_nodes:
            return True
        survivors = [n for n in self.dense_nodes if n != node]
        if node == self.dense_primary:
            rng = np.random.default_rng([self.cfg.seed, 0xDEAD, node, self.step])
            with torch.no_grad():
                for t in [*self.dense_params, *self.velocity]:
                    t.copy_(torch.from_numpy(rng.standard_normal(t.shape).astype(np.float32)))
            if survivors:
                self.load_dense_state(self.dense_mirrors[survivors[0]])
        else:
            self.dense_mirrors.pop(node, None)
        self.sync_mirrors()  # the replacement node receives a copy of a surviving replica
        return bool(survivors)

    def state_sha256(self) -> str:
        """SHA-256 of every embedding record (values and optimizer state) and MLP weight."""
        return state_digest(self.store.snapshot_all(), self.dense_state())

    def reinit_dense(self) -> None:
        """The MLP as at step 0 (its only replica was lost and nothing else holds it)."""
        torch.manual_seed(self.cfg.seed)
        geo = self.geo
        fresh = DenseDLRM(NUM_DENSE, len(geo.table_rows), geo.dim, geo.bottom, geo.top)
        with torch.no_grad():
            for dst, src in zip(self.dense_params, fresh.parameters(), strict=True):
                dst.copy_(src)
            for vel in self.velocity:
                vel.zero_()
        self.sync_mirrors()

    def dense_bytes(self) -> int:
        """Bytes of one MLP replica: weights and optimizer state."""
        n = sum(p.numel() for p in self.dense.parameters())
        return int(n * 4 * (2 if self.velocity else 1))


def run(
    cfg: TrainConfig,
    strategy: str,
    failures: list[Failure],
    *,
    cost: CostModel | None = None,
    on_step: Callable[[str, int, Trainer], None] | None = None,
) -> RunResult:
    """Train ``cfg.steps`` steps under ``strategy`` with ``failures`` injected; ``on_step``
    (strategy, step, trainer) is called after every executed step (progress display, the
    plateau criterion of :func:`nmp.train.seeds.plateau_steps`)."""
    from nmp.train.strategies import make_strategy

    strat = make_strategy(strategy, cfg)
    trainer = Trainer(cfg, parity=strat.uses_parity, cost=cost)
    trainer.schedule = strat.schedule  # the step's phases the cost model charges
    strat.attach(trainer)
    pending = sorted(failures)
    if not strat.uses_parity:
        # Without parity there is no commit to split: a failure between the phases of step s
        # is a failure after step s.
        pending = sorted(
            Failure(f.step + 1, f.node) if f.phase == "between" else f for f in pending
        )
    while trainer.step < cfg.steps:
        s = trainer.step
        now = [f for f in pending if f.step == s and f.phase == "before"]
        for f in now:
            pending.remove(f)
            strat.on_failure(f)
        if trainer.step != s:  # a rollback moved the clock back; the loop re-executes
            continue
        between = [f for f in pending if f.step == s and f.phase == "between"]
        hook = None
        if between:
            for f in between:
                pending.remove(f)

            def hook(p, fs=between):
                for f in fs:
                    strat.on_failure(f, pending_commit=p)

        strat.before_step()
        trainer.train_step(hook)
        strat.after_step()
        if on_step is not None:
            on_step(strategy, trainer.step, trainer)
    strat.finish()
    metrics = trainer.evaluate()
    return RunResult(
        strategy=strategy,
        steps=cfg.steps,
        metrics=metrics,
        final_state_sha256=trainer.state_sha256(),
        ledger=trainer.ledger,
        events=strat.events,
        extra={**strat.summary(), "cost_sampling": trainer.cost.sampling_report()},
        trainer=trainer,
    )
