"""``cpr-mfu`` / ``cpr-ssu``: partial recovery (CPR, Maeng et al. MLSys'21)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from nmp.train.checkpoint import load_npz, save_npz
from nmp.train.failures import Failure
from nmp.train.schedule import COMMON, Phase, RunPhase, Schedule
from nmp.train.strategies.base import register
from nmp.train.strategies.checkpointing import SAVE, _Checkpointing


class _CPR(_Checkpointing):
    """Partial recovery (see the module docstring); subclasses choose the partial rows."""

    partial_rows = ""  # its policy at scale (nmp.train.partial_save.POLICIES)
    tracks_rows = True
    listing_order = 2
    # CPR's servers count (MFU) or mark (SSU) the rows of every committed step's lookups
    # before they take the next step's: on the critical path
    schedule = Schedule(
        COMMON.step
        + (
            Phase(
                "track", "server", "compute", after=("vote",),
                what="the rows' counters or marks updated after the commit",
            ),
        ),
        COMMON.recovery,
        COMMON.run,
    ).with_run(
        SAVE,
        RunPhase(
            "restore", "per_failure",
            "the replacement loads its rows: the newest full save, then the newer partial ones",
        ),
    )  # fmt: skip

    @classmethod
    def restore_replacement(
        cls, ctx, role: str, rows: np.ndarray, rec: dict[str, Any]
    ) -> np.ndarray:
        """The newest complete full save, overridden by the newer partial saves."""
        from nmp.train.dist import files

        return files.partial_restore(ctx, role, rows, rec["resume_step"])

    @classmethod
    def scale_expected(cls, md, dep) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _partial_save, _row, steady_fraction

        per = md.shard_load_ns + md.restart_ns
        save_ns, ps = _partial_save(md, dep, cls)
        steady = save_ns / md.cpr_tau_ns + steady_fraction(md, cls)
        row = _row(cls.name, steady, per / md.m_ns, per)
        row["pls_effective"] = ps.staleness_ratio * dep.cpr_pls
        row["partial_save_fraction"] = ps.rows_per_partial / md.c.rows_total
        return [row]

    @classmethod
    def scale_scheduled(cls, md, dep, horizon_ns: float, failure_steps) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _partial_save, _row, steady_fraction

        per = [md.shard_load_ns + md.restart_ns for _ in failure_steps]
        steady = _partial_save(md, dep, cls)[0] / md.cpr_tau_ns + steady_fraction(md, cls)
        return [_row(cls.name, steady, sum(per) / horizon_ns, max(per, default=0.0))]

    @classmethod
    def scale_draws(cls, md, dep, draws) -> list[tuple]:
        from nmp.train.extrapolate import _partial_save, steady_fraction

        t = draws.t
        h = md.horizon_ns
        pls = draws.per_trial(np.mod(t, md.cpr_tau_ns)) / (dep.servers * h)
        per = md.shard_load_ns + md.restart_ns
        mem = md.c.rows_total * cls.tracking_bits_per_row / 8
        save_ns, ps = _partial_save(md, dep, cls)
        kw = {
            "interval_s": md.cpr_tau_ns / 1e9,
            "pls_bound": dep.cpr_pls,
            "pls_realized_mean": float(pls.mean()),
            "pls_effective_mean": float(pls.mean()) * ps.staleness_ratio,
            "partial_save_fraction": ps.rows_per_partial / md.c.rows_total,
        }
        steady = save_ns / md.cpr_tau_ns + steady_fraction(md, cls)
        extra = draws.per_trial(np.full(t.size, per))
        return [(cls.name, steady, extra, per, per, draws.replica + mem / md.base_mem, kw)]

    def attach(self, trainer) -> None:
        n = trainer.store.total_rows
        self.counts = np.zeros(n, dtype=np.int64)  # MFU: accesses per row since its last save
        self.marked = np.zeros(n, dtype=bool)  # SSU: rows touched by sampled inputs
        self.partials: list[Path] = []
        super().attach(trainer)
        self.top_k = max(1, int(self.cfg.cpr_fraction * n))
        self.extra_memory_bytes = math.ceil(n * self.tracking_bits_per_row / 8)

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
        self.t.sync_mirrors()
        self.dense_reinitialized += 1
        self.events.append(
            {
                "dense_lost_on": node,
                "dense_restored_from": f"full checkpoint of step {self.full_step}",
            }
        )

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
        restart_ns = self.restart_ns  # the replacement node is rescheduled too
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
    partial_rows = "top-frequency"

    @staticmethod
    def new_tracking(rows: int) -> np.ndarray:
        return np.zeros(rows, dtype=np.int64)  # accesses per row since its last save

    @staticmethod
    def track(state, rows, sample, batch_size: int, step: int, cfg) -> None:
        """Count the accesses of the lookups' ``rows`` (indices into ``state``): O(lookups)
        per step (a bincount over all rows would touch the whole table every step)."""
        np.add.at(state, rows, 1)

    @staticmethod
    def choose(state, top_k: int) -> np.ndarray:
        """The ``top_k`` most used rows (never-used rows are not saved); their counts restart."""
        used = np.flatnonzero(state)
        order = np.argsort(-state[used], kind="stable")[:top_k]
        rows = np.sort(used[order])
        state[rows] = 0  # saved: its count starts again
        return rows

    def _record(self, g: np.ndarray, b) -> None:
        self.track(self.counts, g.ravel(), None, b.size, self.t.step, self.cfg)

    def _partial_rows(self) -> np.ndarray:
        return self.choose(self.counts, self.top_k)


@register
class CPRSSU(_CPR):
    """Partial recovery; partial saves keep the rows that a sample of the inputs touched."""

    name = "cpr-ssu"
    tracking_bits_per_row = 1.0  # one mark per row
    tracks_samples = True
    partial_rows = "sampled-inputs"

    @staticmethod
    def new_tracking(rows: int) -> np.ndarray:
        return np.zeros(rows, dtype=bool)  # touched by a sampled input since the last save

    @staticmethod
    def track(state, rows, sample, batch_size: int, step: int, cfg) -> None:
        """Mark the ``rows`` of lookups whose ``sample`` (index in the batch) is drawn: a
        seeded sample of ``ssu_sample`` of the batch's inputs per step."""
        rng = np.random.default_rng([cfg.seed, 0x55, step])
        take = max(1, round(cfg.ssu_sample * batch_size))
        drawn = np.zeros(batch_size, dtype=bool)
        drawn[rng.choice(batch_size, size=take, replace=False)] = True
        state[rows[drawn[sample]]] = True

    @staticmethod
    def choose(state, top_k: int) -> np.ndarray:
        rows = np.flatnonzero(state)
        state[:] = False
        return rows

    def _record(self, g: np.ndarray, b) -> None:
        sample = np.broadcast_to(np.arange(b.size)[None, :, None], g.shape).ravel()
        self.track(self.marked, g.ravel(), sample, b.size, self.t.step, self.cfg)

    def _partial_rows(self) -> np.ndarray:
        return self.choose(self.marked, self.top_k)
