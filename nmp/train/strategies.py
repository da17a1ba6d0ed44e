"""Recovery strategies: what happens when a memory node fails during training.

- ``ecrec``: erasure-coded store; training never pauses. Lost rows are decoded from survivors
  on read; a background rebuild restores the node range by range (updates to the range in
  flight are buffered and applied after); the two-phase commit's log rolls a half-done update
  forward when a node fails between data write and parity delta.
- ``checkpoint``: full recovery. Checkpoints to real files every τ (Young or Daly with the
  modeled write time and the MTBF); a failure rolls every node back to the last checkpoint and
  re-executes the lost steps.
- ``cpr-mfu`` / ``cpr-ssu``: partial recovery (CPR, Maeng et al. MLSys'21). Saves every τ, with
  τ chosen from the bound on the portion of lost samples; every ``cpr_full_every``-th save is a
  full checkpoint, the others save a subset of rows: the most-frequently-used since the last
  save (MFU: a counter per row, top-k, the saved rows' counters reset) or the rows touched by a
  sample of the inputs (SSU). A failure reloads only the failed node's rows.
- ``none``: the failed node's rows are re-initialized.
- ``failure-free``: no protection (the baseline that overheads are measured against).

Each strategy registers itself (:func:`register`); the CLI's list, help and the comparison's
rows come from :data:`REGISTRY`. The dense MLP is replicated on ``dense_replicas`` nodes in
every strategy: a failure erases the replica on its node and a survivor is copied; with no
survivor the checkpointing strategies reload it from their checkpoint and the others re-create
it from the seed (its learned weights are lost, an event says so).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.train.checkpoint import daly_interval, load_npz, save_npz, young_interval
from nmp.train.config import TrainConfig
from nmp.train.failures import Failure

REGISTRY: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if cls.name in REGISTRY:
        raise NmpError(f"strategy '{cls.name}' registered twice")
    REGISTRY[cls.name] = cls
    return cls


def strategy_names(*, baseline: bool = False) -> tuple[str, ...]:
    """Registered strategies in registration order (the baseline ``failure-free`` optional)."""
    return tuple(n for n, c in REGISTRY.items() if baseline or not c.is_baseline)


def strategy_help() -> str:
    """One line per strategy: name and the first line of its docstring."""
    return "; ".join(
        f"{n}: {(c.__doc__ or '').strip().splitlines()[0].rstrip('.')}" for n, c in REGISTRY.items()
    )


class Strategy:
    """No protection: the baseline that overheads are measured against."""

    name = "failure-free"
    uses_parity = False
    is_baseline = True
    # Which closed form models the strategy at a paper's scale (nmp.train.extrapolate):
    # "coded", "rollback", "partial", "reinit"; None: not a protection (the baseline).
    scale_model: str | None = None
    tracking_bits_per_row = 0.0  # per-row bookkeeping memory (CPR's counters or marks)

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.events: list[dict[str, Any]] = []
        self.recovery_ns = 0.0  # modeled time training stood still because of failures
        self.redundancy_ns: list[float | None] = []  # per failure: until fully protected again
        self.extra_memory_bytes = 0
        self.dense_reinitialized = 0  # failures that took the MLP's only replica
        self.wall_s: dict[str, float] = {}  # measured wall time of the real work, by part

    def attach(self, trainer) -> None:
        self.t = trainer
        self.store = trainer.store
        self.cost = trainer.cost
        self.ledger = trainer.ledger
        b0 = trainer.data.batch_at(0)
        self.cost.calibrate(b0, np.unique(trainer.global_rows(b0)))

    def before_step(self) -> None:
        pass

    def after_step(self) -> None:
        pass

    def finish(self) -> None:
        pass

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        raise NmpError(f"strategy '{self.name}' was given a failure (node {f.node})")

    def _dense_failure(self, node: int) -> None:
        """The failure erases the MLP replica on ``node``: copy a survivor to the replacement
        node, or (no survivor) :meth:`_dense_lost`."""
        if node not in self.t.dense_nodes:
            return
        if self.t.erase_dense_replica(node):
            t_ns, e_pj = self.cost.copy_bytes_cost(self.t.dense_bytes())
            self.ledger.add("rebuild", t_ns, e_pj)
        else:
            self._dense_lost(node)

    def _dense_lost(self, node: int) -> None:
        """The only MLP replica died: re-create it from the seed (learned weights lost)."""
        self.t.reinit_dense()
        self.dense_reinitialized += 1

    def _event(self, f: Failure, **kw: Any) -> dict[str, Any]:
        ev = {"step": f.step, "node": f.node, "phase": f.phase, "at_ns": self.ledger.total_ns}
        ev.update(kw)
        self.events.append(ev)
        return ev

    def memory_overhead(self) -> float:
        """Extra memory of the protection over the unprotected model (fraction)."""
        if self.name == "failure-free":
            return 0.0  # the unprotected baseline itself
        t = self.t
        base = t.store.data_bytes + t.dense_bytes()
        extra = (self.cfg.dense_replicas - 1) * t.dense_bytes() + self.extra_memory_bytes
        if self.uses_parity:
            extra += t.store.parity_bytes
        return extra / base

    def summary(self) -> dict[str, Any]:
        red = [r for r in self.redundancy_ns if r is not None]
        return {
            "recovery_ns": self.recovery_ns,
            "time_to_full_redundancy_ns": max(red) if red else None,
            "redundancy_restored": all(r is not None for r in self.redundancy_ns),
            "memory_overhead": self.memory_overhead(),
            "dense_reinitialized": self.dense_reinitialized,
            "measured_wall_s": dict(self.wall_s),
        }

    def _timed(self, part: str, t0: float) -> None:
        self.wall_s[part] = self.wall_s.get(part, 0.0) + time.perf_counter() - t0


# ------------------------------------------------------------------------------------------------


@register
class ECRec(Strategy):
    """Erasure-coded store, degraded reads and a background rebuild; training never pauses."""

    name = "ecrec"
    uses_parity = True
    is_baseline = False
    scale_model = "coded"

    def attach(self, trainer) -> None:
        super().attach(trainer)
        self.queue: list[int] = []
        self.failed_at: dict[int, list[tuple[int, float]]] = {}  # node -> (failure, time)
        self.range_left = 0  # steps until the range in flight commits
        self.range_ns = 0.0
        self.range_pj = 0.0
        self.ranges_done = 0

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        store = self.store
        if pending_commit is not None and not self.cfg.two_phase:
            # Without a commit log, the deltas of rows whose data unit just died die with it.
            keep = store.node_of_row(pending_commit.rows) != f.node
            pending_commit.rows = pending_commit.rows[keep]
            pending_commit.old = pending_commit.old[keep]
            pending_commit.new = pending_commit.new[keep]
        self._dense_failure(f.node)
        rebuilding = list(self.queue)
        inflight = store.inflight
        if inflight is not None and inflight.node == f.node:
            self.range_left = 0  # the replacement died: its range restarts with the others
        store.fail_node(f.node)
        if f.node not in self.queue:
            self.queue.append(f.node)
        self.failed_at.setdefault(f.node, []).append(
            (len(self.redundancy_ns), self.ledger.total_ns)
        )
        self._event(f, lost_rows=int(len(store.rows_on_node(f.node))), during_rebuild_of=rebuilding)
        self.redundancy_ns.append(None)

    def _range_stripes(self, node: int) -> np.ndarray:
        lost = self.store.lost_positions(node)
        size = math.ceil(self.store.stripes / self.cfg.rebuild_ranges)
        return lost[:size]

    def before_step(self) -> None:
        store = self.store
        while store.inflight is None and self.queue:
            node = self.queue[0]
            stripes = self._range_stripes(node)
            if len(stripes) == 0:
                self.queue.pop(0)
                self._restored(node)
                continue
            t0 = time.perf_counter()
            store.start_range(node, stripes)
            self._timed("rebuild_decode", t0)
            self.range_ns, self.range_pj = self.cost.rebuild_cost(node, stripes)
            budget = self.cfg.rebuild_share * self.cost.baseline_step_ns()
            self.range_left = max(1, math.ceil(self.range_ns / budget))
            self._range_steps = self.range_left

    def after_step(self) -> None:
        if self.store.inflight is None:
            return
        self.ledger.add(
            "rebuild", self.range_ns / self._range_steps, self.range_pj / self._range_steps
        )
        self.range_left -= 1
        if self.range_left <= 0:
            t0 = time.perf_counter()
            self.store.commit_range()
            self._timed("rebuild_commit", t0)
            self.ranges_done += 1
            node = self.queue[0]
            if len(self.store.lost_positions(node)) == 0:
                self.queue.pop(0)
                self._restored(node)

    def _restored(self, node: int) -> None:
        for i, t0 in self.failed_at.pop(node, []):  # every failure of this node is healed
            self.redundancy_ns[i] = self.ledger.total_ns - t0
            after = self.redundancy_ns[i]
            self.events.append(
                {"rebuilt_node": node, "at_ns": self.ledger.total_ns, "after_ns": after}
            )

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["code"] = self.cfg.code
        out["parities"] = self.store.r
        out["rebuild_ranges_done"] = self.ranges_done
        out["degraded_decoded_rows"] = self.store.counters["decoded_rows"]
        if (
            self.store.scheme is not None
            and not self.store.scheme.exact
            and not self.store.lost_nodes()
        ):
            out["float_sum_drift"] = float_sum_drift(self.store)
        return out


def float_sum_drift(store) -> dict[str, float]:
    """How far a float-sum parity has drifted: maintained parity vs a fresh sum, and the error
    of rows decoded from it (max abs, fraction of elements not bit-equal)."""
    fresh = store.scheme.encode(store.data)
    par = store.parity
    diff = np.abs(par - fresh)
    k = store.k
    worst, bad, n = 0.0, 0, 0
    for j in range(k):
        others = np.delete(store.data, j, axis=1)
        dec = store.scheme.decode(
            np.concatenate(
                [others[:, :j], np.zeros_like(store.data[:, :1]), others[:, j:]], axis=1
            ),
            par,
            [j],
        )[:, j]
        err = np.abs(dec - store.data[:, j])
        worst = max(worst, float(err.max()))
        bad += int(np.count_nonzero(dec.view(np.uint32) != store.data[:, j].view(np.uint32)))
        n += dec.size
    return {
        "parity_max_abs": float(diff.max()),
        "parity_mismatch_fraction": float(np.count_nonzero(diff) / diff.size),
        "decode_max_abs": worst,
        "decode_mismatch_fraction": bad / n,
    }


# ------------------------------------------------------------------------------------------------


class _Checkpointing(Strategy):
    """Shared by full (checkpoint) and partial (CPR) recovery: the files and the interval."""

    is_baseline = False

    def attach(self, trainer) -> None:
        super().attach(trainer)
        if self.cfg.ckpt_dir:
            self.dir = Path(self.cfg.ckpt_dir)
            self.dir.mkdir(parents=True, exist_ok=True)
            self._own_dir = False
        else:
            self.dir = Path(tempfile.mkdtemp(prefix=f"nmp-train-{self.name}-"))
            self._own_dir = True
        self.ckpt_bytes = self.store.data_bytes + trainer.dense_bytes()
        self.write_wall_s: list[float] = []
        self.full_path = self.dir / "full.npz"
        self.full_step = -1
        self.saves = 0
        self.partial_count = 0
        # δ: the write time of one full checkpoint, modeled (bytes / storage bandwidth) or the
        # measured wall time of writing the initial checkpoint file on this machine. The initial
        # file is the state at step 0, which the seed re-creates: it is written (rollback needs
        # it) but not charged, as the papers' baselines do not pay a save at the start.
        self.delta_ns = self.cost.storage_ns(self.ckpt_bytes)
        self._save_full(charge=False)
        if self.cfg.write_time == "measured":
            self.delta_ns = self.write_wall_s[0] * 1e9
        self.step_ns = self.cost.baseline_step_ns()
        self.interval_steps = self._interval_steps()

    def _interval_steps(self) -> int:
        """Young or Daly with δ and the MTBF (both in modeled time)."""
        mtbf_ns = self.cfg.mtbf_steps * self.step_ns
        fn = young_interval if self.cfg.interval == "young" else daly_interval
        self.tau_ns = fn(self.delta_ns, mtbf_ns)
        return max(1, round(self.tau_ns / self.step_ns))

    def _save_full(self, *, charge: bool = True) -> None:
        t = self.t
        t0 = time.perf_counter()
        arrays = {"records": self.store.snapshot_all(), "step": np.int64(t.step)}
        arrays.update(t.dense_state())
        self.write_wall_s.append(save_npz(self.full_path, **arrays))
        self._timed("checkpoint_write", t0)
        self.full_step = t.step
        if charge:
            self.ledger.add("ckpt_write", self.delta_ns)

    def after_step(self) -> None:
        if self.t.step % self.interval_steps == 0:
            self._save_full()

    def finish(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out.update(
            interval_steps=self.interval_steps,
            interval_rule=self.cfg.interval,
            write_time_source=self.cfg.write_time,
            checkpoint_bytes=self.ckpt_bytes,
            checkpoint_write_modeled_ns=self.delta_ns,
            checkpoint_write_measured_s_mean=float(np.mean(self.write_wall_s)),
            checkpoints_written=len(self.write_wall_s),
            initial_checkpoint_charged=False,
        )
        return out


@register
class FullCheckpoint(_Checkpointing):
    """Full recovery: periodic checkpoints (Young/Daly), a failure rolls every node back."""

    name = "checkpoint"
    scale_model = "rollback"

    def _dense_lost(self, node: int) -> None:
        pass  # the rollback below reloads the MLP from the checkpoint

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        t = self.t
        self._dense_failure(f.node)
        self.store.fail_node(f.node)
        t0 = time.perf_counter()
        z = load_npz(self.full_path)
        self.store.load_all(z["records"])
        t.load_dense_state(z)
        t._sync_mirrors()
        self._timed("checkpoint_load", t0)
        back_to = int(z["step"])
        load_ns = self.cost.storage_ns(self.ckpt_bytes)
        w_ns, w_pj = self.cost.write_rows_cost(self.store.total_rows)
        self.ledger.add("ckpt_load", load_ns + w_ns, w_pj)
        self.ledger.add("restart", self.cfg.restart_s * 1e9)
        lost_steps = t.step - back_to
        self.ledger.reexec_until = max(self.ledger.reexec_until, t.step)
        # The stall is load + restart + re-execution; the re-executed steps' time is added by
        # the ledger as they run ("reexec"), so the total is completed in summary().
        self._stall_fixed += load_ns + w_ns + self.cfg.restart_s * 1e9
        self._event(f, rolled_back_to=back_to, reexecuted_steps=lost_steps)
        t.step = back_to

    def attach(self, trainer) -> None:
        self._stall_fixed = 0.0
        super().attach(trainer)

    def summary(self) -> dict[str, Any]:
        failures = [e for e in self.events if "rolled_back_to" in e]
        self.recovery_ns = self._stall_fixed + self.ledger.t_ns["reexec"]
        # Full recovery restores everything once the lost steps are re-executed.
        self.redundancy_ns = [self.recovery_ns] if failures else []
        out = super().summary()
        out["reexecuted_steps"] = int(sum(e["reexecuted_steps"] for e in failures))
        return out


class _CPR(_Checkpointing):
    """Partial recovery (see the module docstring); subclasses choose the partial rows."""

    scale_model = "partial"

    def attach(self, trainer) -> None:
        n = trainer.store.total_rows
        self.counts = np.zeros(n, dtype=np.int64)  # MFU: accesses per row since its last save
        self.marked = np.zeros(n, dtype=bool)  # SSU: rows touched by sampled inputs
        self.partials: list[Path] = []
        super().attach(trainer)
        self.top_k = max(1, int(self.cfg.cpr_fraction * n))

    def _interval_steps(self) -> int:
        """CPR's interval from the bound on the portion of lost samples (PLS): a failure of
        one of N nodes loses on average half an interval of that node's updates, so
        PLS = τ / (2 N M) and τ = 2 · PLS · N · M (M = system MTBF)."""
        steps = 2.0 * self.cfg.cpr_pls * self.cfg.nodes * self.cfg.mtbf_steps
        self.tau_ns = steps * self.step_ns
        return max(1, round(steps))

    def _save_full(self, *, charge: bool = True) -> None:
        super()._save_full(charge=charge)
        for p in self.partials:
            p.unlink(missing_ok=True)
        self.partials = []
        self.counts[:] = 0
        self.marked[:] = False

    def _record(self, g: np.ndarray, b) -> None:
        raise NotImplementedError

    def _partial_rows(self) -> np.ndarray:
        raise NotImplementedError

    def after_step(self) -> None:
        t = self.t
        self._record(t.global_rows(t.last_batch), t.last_batch)
        if t.step % self.interval_steps:
            return
        self.saves += 1
        if self.saves % self.cfg.cpr_full_every == 0:
            self._save_full()
        else:
            self._save_partial()

    def _save_partial(self) -> None:
        t0 = time.perf_counter()
        rows = self._partial_rows()
        path = self.dir / f"partial-{len(self.partials):04d}.npz"
        recs = self.store.read(rows)
        self.write_wall_s.append(save_npz(path, rows=rows, records=recs))
        self._timed("checkpoint_write", t0)
        self.partials.append(path)
        self.partial_count += 1
        self.ledger.add("ckpt_write", self.cost.storage_ns(rows.nbytes + recs.nbytes))

    def _dense_lost(self, node: int) -> None:
        """Partial recovery of the MLP: its state as of the last full checkpoint."""
        self.t.load_dense_state(load_npz(self.full_path))
        self.t._sync_mirrors()
        self.dense_reinitialized += 1

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        self._dense_failure(f.node)
        store = self.store
        store.fail_node(f.node)
        t0 = time.perf_counter()
        rows = store.rows_on_node(f.node)
        full = load_npz(self.full_path)["records"]
        recs = full[rows]
        nbytes = recs.nbytes
        for p in self.partials:  # newer partial saves override older values
            z = load_npz(p)
            pos = np.searchsorted(rows, z["rows"])
            pos = np.minimum(pos, len(rows) - 1)
            hit = rows[pos] == z["rows"]
            recs[pos[hit]] = z["records"][hit]
            nbytes += int(hit.sum()) * recs.shape[1] * 4
        store.restore_rows(rows, recs)
        self._timed("checkpoint_load", t0)
        load_ns = self.cost.storage_ns(nbytes)
        w_ns, w_pj = self.cost.write_rows_cost(len(rows))
        restart_ns = self.cfg.restart_s * 1e9  # the replacement node is rescheduled too
        self.ledger.add("ckpt_load", load_ns + w_ns, w_pj)
        self.ledger.add("restart", restart_ns)
        self.recovery_ns += load_ns + w_ns + restart_ns
        self.redundancy_ns.append(load_ns + w_ns + restart_ns)
        self._event(f, reloaded_rows=int(len(rows)), partial_files=len(self.partials))

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out.update(pls_bound=self.cfg.cpr_pls, partial_saves=self.partial_count)
        return out


@register
class CPRMFU(_CPR):
    """Partial recovery; partial saves keep the rows most frequently used since their last save."""

    name = "cpr-mfu"
    tracking_bits_per_row = 32.0  # one access counter per row

    def attach(self, trainer) -> None:
        super().attach(trainer)
        self.extra_memory_bytes = int(trainer.store.total_rows * self.tracking_bits_per_row / 8)

    def _record(self, g: np.ndarray, b) -> None:
        self.counts += np.bincount(g.ravel(), minlength=len(self.counts))

    def _partial_rows(self) -> np.ndarray:
        used = np.flatnonzero(self.counts)
        order = np.argsort(-self.counts[used], kind="stable")[: self.top_k]
        rows = np.sort(used[order])
        self.counts[rows] = 0  # saved: its count starts again
        return rows


@register
class CPRSSU(_CPR):
    """Partial recovery; partial saves keep the rows that a sample of the inputs touched."""

    name = "cpr-ssu"
    tracking_bits_per_row = 1.0  # one mark per row

    def attach(self, trainer) -> None:
        super().attach(trainer)
        self.extra_memory_bytes = -(-trainer.store.total_rows // 8)  # tracking_bits_per_row

    def _record(self, g: np.ndarray, b) -> None:
        rng = np.random.default_rng([self.cfg.seed, 0x55, self.t.step])
        take = max(1, round(self.cfg.ssu_sample * b.size))
        samples = rng.choice(b.size, size=take, replace=False)
        self.marked[g[:, samples].ravel()] = True

    def _partial_rows(self) -> np.ndarray:
        rows = np.flatnonzero(self.marked)
        self.marked[:] = False
        return rows


@register
class Reinit(Strategy):
    """No protection of the tables: the failed node's rows are re-initialized."""

    name = "none"
    is_baseline = False
    scale_model = "reinit"

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        from nmp.train.trainer import init_records

        self._dense_failure(f.node)
        store = self.store
        store.fail_node(f.node)
        rows = store.rows_on_node(f.node)
        seed = self.cfg.seed + 7919 * (len(self.events) + 1)
        store.restore_rows(rows, init_records(self.t.geo, store.width, seed, rows))
        w_ns, w_pj = self.cost.write_rows_cost(len(rows))
        self.ledger.add("reinit", w_ns, w_pj)
        self.recovery_ns += w_ns
        self.redundancy_ns.append(None)
        self._event(f, reinitialized_rows=int(len(rows)))

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["time_to_full_redundancy_ns"] = None  # the lost state is never restored
        return out


register(Strategy)


def make_strategy(name: str, cfg: TrainConfig) -> Strategy:
    cls = REGISTRY.get(name)
    if cls is None:
        known = ", ".join(REGISTRY)
        raise NmpError(f"unknown strategy '{name}' (known: {known})")
    return cls(cfg)
