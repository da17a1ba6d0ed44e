"""``checkpoint``: full recovery from periodic checkpoint files, and what CPR shares with it."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.train.checkpoint import load_npz, save_npz
from nmp.train.failures import Failure
from nmp.train.intervals import INTERVAL_RULES
from nmp.train.schedule import COMMON, RunPhase
from nmp.train.strategies.base import Strategy, register

# Every interval each server writes its rows (worker 0 the MLP) to a file of its own, synced;
# the next step waits for the slowest writer.
SAVE = RunPhase("save", "every_save", "each process writes its part of the save, synced")


class _Checkpointing(Strategy):
    """Shared by full (checkpoint) and partial (CPR) recovery: the files and the interval."""

    writes_checkpoints = True

    is_baseline = False
    listing_order = 1

    def attach(self, trainer) -> None:
        super().attach(trainer)
        if self.cfg.ckpt_dir:
            # a folder of this run's own inside train.ckpt_dir (run-<strategy>-<unique>,
            # created atomically): two runs sharing the folder each roll back to their own
            # checkpoints (they read each other's full.npz before, and ended in another state)
            base = Path(self.cfg.ckpt_dir)
            try:
                base.mkdir(parents=True, exist_ok=True)
                self.dir = Path(tempfile.mkdtemp(prefix=f"run-{self.name}-", dir=base))
            except OSError as exc:
                raise NmpError(
                    f"cannot create a checkpoint folder there: {exc.strerror}",
                    key="train.ckpt_dir",
                    file=str(base),
                ) from None
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
        self.restart_ns = (
            self.cfg.restart_s * 1e9
            if self.cfg.restart_s > 0
            else self.cfg.restart_mtbf_fraction * self.cfg.mtbf_steps * self.step_ns
        )
        self.interval_steps = self._interval_steps()

    def _interval_steps(self) -> int:
        """The config's interval rule (Young or Daly) with δ and the MTBF (both in modeled
        time)."""
        mtbf_ns = self.cfg.mtbf_steps * self.step_ns
        rule = INTERVAL_RULES.get(self.cfg.interval)
        self.tau_ns = rule.intervals_ns(self.delta_ns, mtbf_ns, ())[0]
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
            restart_ns=self.restart_ns,
        )
        return out


@register
class FullCheckpoint(_Checkpointing):
    """Full recovery: periodic checkpoints (Young/Daly), a failure rolls every node back."""

    name = "checkpoint"
    every_save_full = True
    rolls_back = True
    schedule = COMMON.with_run(
        SAVE,
        RunPhase("restore", "per_failure", "every process loads its part of the newest full save"),
        RunPhase("reexec", "per_failure", "the steps since that save, executed again"),
    )

    @classmethod
    def scale_expected(cls, md, dep) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _ckpt_name, _row, steady_fraction

        rows = []
        for i, tau in enumerate(md.ckpt_taus_ns):
            per = tau / 2 + md.load_ns + md.restart_ns
            steady = md.delta_ns / tau + steady_fraction(md, cls)
            rows.append(_row(_ckpt_name(cls.name, dep, i), steady, per / md.m_ns, per))
        return rows

    @classmethod
    def scale_scheduled(cls, md, dep, horizon_ns: float, failure_steps) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _row, steady_fraction

        tau = md.ckpt_taus_ns[0]
        per = [(f * md.step_ns) % tau + md.load_ns + md.restart_ns for f in failure_steps]
        steady = md.delta_ns / tau + steady_fraction(md, cls)
        return [_row(cls.name, steady, sum(per) / horizon_ns, max(per, default=0.0))]

    @classmethod
    def scale_draws(cls, md, dep, draws) -> list[tuple]:
        from nmp.train.extrapolate import _ckpt_name, steady_fraction

        out = []
        for i, tau in enumerate(md.ckpt_taus_ns):
            per = np.mod(draws.t, tau) + md.load_ns + md.restart_ns  # ns per failure
            rec = float(per.mean()) if per.size else tau / 2 + md.load_ns + md.restart_ns
            steady = md.delta_ns / tau + steady_fraction(md, cls)
            kw = {"interval_s": tau / 1e9}
            name = _ckpt_name(cls.name, dep, i)
            out.append((name, steady, draws.per_trial(per), rec, rec, draws.replica, kw))
        return out

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
        t.sync_mirrors()
        self._timed("checkpoint_load", t0)
        back_to = int(z["step"])
        load_ns = self.cost.storage_ns(self.ckpt_bytes)
        w_ns, w_pj = self.cost.write_rows_cost(self.store.total_rows)
        self.ledger.add("ckpt_load", load_ns + w_ns, w_pj)
        self.ledger.add("restart", self.restart_ns)
        lost_steps = t.step - back_to
        self.ledger.reexec_until = max(self.ledger.reexec_until, t.step)
        # The stall is load + restart + re-execution; the re-executed steps' time is added by
        # the ledger as they run ("reexec"), so the total is completed in summary().
        self._stall_fixed += load_ns + w_ns + self.restart_ns
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
