"""A data-parallel worker process: its micro-batch, the MLP replica, the exchanges.

One step (the servers' side is :mod:`nmp.train.dist.server`):

1. send each server the lookups of the micro-batch it holds rows of (positions and rows);
2. receive the servers' partial sums and add them in server order: the pooled vectors
   (through the SC'24 codec when ``train.compress`` names one: real compressed bytes);
3. forward and backward (:func:`nmp.train.dense.micro_step`); send each server the per-row
   gradients of its rows; send the MLP gradients to every other worker and add everyone's in
   worker order (an all-gather in a fixed order, not a ring all-reduce, whose summation order
   would differ from the single-process trainer's);
4. vote; on ``commit`` apply the update (every replica the same).

The MLP is replicated on every worker: a replacement worker copies a survivor's replica (or,
under full recovery, loads the checkpoint like everyone else).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from nmp.train import dense as dense_step
from nmp.train.dist.comm import Comm
from nmp.train.dist.context import Context
from nmp.train.dist.control import ABORT, Aborted, Control
from nmp.train.dist.phases import PhaseClock, plan
from nmp.train.optim import DENSE_OPTIMIZERS
from nmp.train.shard import add_partials, micro_row_grads, request_for


class Worker:
    def __init__(self, ctx: Context, index: int, *, fresh: bool) -> None:
        from nmp.train.trainer import make_dense

        self.ctx, self.index, self.role = ctx, index, f"worker:{index}"
        self.model = make_dense(ctx.cfg, ctx.geo)
        self.params = list(self.model.parameters())
        import torch

        self.velocity = (
            [torch.zeros_like(p) for p in self.params]
            if DENSE_OPTIMIZERS.get(ctx.cfg.dense_optimizer).keeps_velocity
            else []
        )
        self.step_wall: list[tuple[int, int, float]] = []  # (generation, step, seconds)
        from nmp.train.alltoall.exchange import make_alltoall

        self.codec = make_alltoall(ctx.cfg)  # train.compress: the pooled and gradient traffic
        self.exchange_s: list[float] = []  # per step: lookups out to pooled vectors in
        self.clock = PhaseClock()  # the schedule's phases, timed per step
        # the step's table: the schedule's phases this worker takes part in, with handlers
        self.plan = plan(ctx.schedule, "worker", self._handlers(), ctx.strategy.name)

    # -- state ----------------------------------------------------------------------------------

    def state(self) -> np.ndarray:
        return dense_step.flat_grads([p.detach() for p in [*self.params, *self.velocity]])

    def load_state(self, flat: np.ndarray) -> None:
        import torch

        with torch.no_grad():
            for dst, src in zip(
                [*self.params, *self.velocity],
                dense_step.unflat_grads(flat, [*self.params, *self.velocity]),
                strict=True,
            ):
                dst.copy_(src)

    def begin(self, rec: dict[str, Any], comm: Comm, fresh: bool) -> None:
        from nmp.train.dist import files

        ctx = self.ctx
        if rec.get("rollback") is not None:
            z = files.load(ctx.ckpt_dir(rec["rollback"]) / files.part_name("dense"))
            self.load_state(z["state"])
            return
        new = sorted(int(r.split(":")[1]) for r in rec["fresh"] if r.startswith("worker:"))
        if not new:
            return
        donor = min(w for w in range(ctx.spec.workers) if w not in new)
        if self.index == donor:
            for w in new:
                comm.post(ctx.worker_rank(w), "dense_copy", self.state())
            comm.flush()
        elif self.index in new:
            (flat,) = comm.recv(ctx.worker_rank(donor))
            self.load_state(flat)

    # -- one step -------------------------------------------------------------------------------

    def _pooled(self, comm: Comm, g: np.ndarray, kind: str, step: int) -> np.ndarray:
        """The forward exchange outside a training step (evaluation): lookups out, the
        servers' partial sums in."""
        st = SimpleNamespace(comm=comm, g=g, kind=kind, i=step)
        self._send_lookups(st)
        self._receive_pooled(st)
        return st.pooled

    def _receive_partial(self, comm: Comm, n: int, step: int):
        got = comm.recv(self.ctx.server_rank(n))
        if len(got) == 3:  # compressed: slots, blob, offsets
            assert self.codec is not None
            slots, blob, offsets = got
            tables, dim = len(self.ctx.geo.table_rows), self.ctx.geo.dim
            return self.codec.decode_partial(slots, blob, offsets, tables, dim)
        return got[0], got[1]

    def step(self, i: int, comm: Comm, ctl: Control, gen: int) -> float:
        """One training step: the worker's phases of the strategy's schedule, walked in its
        order (:func:`nmp.train.dist.phases.plan`), each timed under its name."""
        ctx = self.ctx
        t0 = time.perf_counter()
        self.clock.start(gen, i)
        if self.index == 0:
            ctl.set_progress(i)
        b = ctx.batch(i)
        sl = ctx.slices[self.index]
        st = SimpleNamespace(i=i, comm=comm, ctl=ctl, gen=gen, kind="lookup", b=b, sl=sl)
        st.g = ctx.shard.global_rows(b.ids)[:, sl]
        for name, run in self.plan:
            run(st)
            self.clock.lap(name)
        self.clock.stop()
        self.step_wall.append((gen, i, time.perf_counter() - t0))
        return st.loss

    def _handlers(self) -> dict[str, Any]:
        """The phases a worker runs, by the schedule's names."""
        return {
            "lookup": self._send_lookups,
            "pooled": self._receive_pooled,
            "dense": self._dense,
            "row_grad": self._send_row_grads,
            "dense_grad": self._dense_grads,
            "vote": self._vote,
        }

    def _send_lookups(self, st) -> None:
        ctx = self.ctx
        st.t_exchange = time.perf_counter()
        for n in range(ctx.spec.servers):
            req = request_for(ctx.shard, n, st.g)
            st.comm.post(ctx.server_rank(n), st.kind, req.pos, req.rows, np.asarray(req.shape))

    def _receive_pooled(self, st) -> None:
        """The servers' partial sums, added in server order (waits on their gather)."""
        ctx, g = self.ctx, st.g
        parts = [self._receive_partial(st.comm, n, st.i) for n in range(ctx.spec.servers)]
        st.pooled = add_partials(parts, g.shape[1], g.shape[0], ctx.geo.dim)
        if st.kind == "lookup":
            self.exchange_s.append(time.perf_counter() - st.t_exchange)

    def _dense(self, st) -> None:
        """MLP forward and backward; the per-row gradients of the lookups."""
        st.loss, st.grads, pooled_grad = dense_step.micro_step(
            self.model, self.params, st.b.dense[st.sl], st.pooled, st.b.label[st.sl], st.b.size
        )
        st.rows, st.rgrad = micro_row_grads(st.g, pooled_grad)

    def _send_row_grads(self, st) -> None:
        ctx = self.ctx
        node = ctx.shard.node_of_row[st.rows]
        for n in range(ctx.spec.servers):
            m = node == n
            if self.codec is not None:
                msg = self.codec.encode_grads(st.rows[m], st.rgrad[m], st.i)
                st.comm.post(ctx.server_rank(n), "row_grad", *msg)
            else:
                st.comm.post(ctx.server_rank(n), "row_grad", st.rows[m], st.rgrad[m])

    def _dense_grads(self, st) -> None:
        """The MLP gradients to every other worker, everyone's added in worker order."""
        ctx = self.ctx
        mine = dense_step.flat_grads(st.grads)
        for w in range(ctx.spec.workers):
            if w != self.index:
                st.comm.post(ctx.worker_rank(w), "dense_grad", mine)
        parts = []
        for w in range(ctx.spec.workers):
            flat = mine if w == self.index else st.comm.recv(ctx.worker_rank(w))[0]
            parts.append(dense_step.unflat_grads(flat, st.grads))
        st.total = dense_step.add_grads(parts)
        st.comm.flush()

    def _vote(self, st) -> None:
        """The vote; on commit the MLP update (every replica the same)."""
        ctx = self.ctx
        if st.ctl.vote(st.gen, st.i, ctx.spec.world, ctx.spec.timeout_s) == ABORT:
            self.clock.drop()
            raise Aborted(f"step {st.i} aborted")
        st.ctl.fault_point(self.role, "commit", st.i)
        dense_step.apply_update(
            self.params, self.velocity, st.total, lr=ctx.cfg.lr_dense, momentum=ctx.cfg.momentum
        )

    def evaluate(self, comm: Comm) -> list[np.ndarray]:
        """This worker's click probabilities on each held-out batch (its slice of it)."""
        from nmp.train.shard import worker_slices

        ctx = self.ctx
        out = []
        for b in ctx.data.eval_batches(ctx.cfg.eval_batches):
            sl = worker_slices(b.size, ctx.spec.workers)[self.index]
            g = ctx.shard.global_rows(b.ids)[:, sl]
            pooled = self._pooled(comm, g, "eval_lookup", -1)
            out.append(dense_step.predict(self.model, b.dense[sl], pooled))
        comm.flush()
        return out

    def save_if_due(self, step: int) -> None:
        """Worker 0 writes the MLP replica into every full save."""
        from nmp.train.dist.files import Saver

        if self.index != 0:
            return
        if not hasattr(self, "saver"):
            self.saver = Saver(self.ctx, "dense")
        if self.saver.due(step) and self.saver.is_full(step):
            self.saver.save(step, full=True, state=self.state())
        elif self.saver.due(step):  # a partial save still counts this process's part
            self.saver.save(step, full=False, state=np.zeros(0, np.float32))

    def result(self) -> dict[str, Any]:
        from nmp.train.dist.server import _codec_stats

        saver = getattr(self, "saver", None)
        return {
            "exchange_s": self.exchange_s,
            "codec": _codec_stats(self.codec),
            "phase_s": self.clock.steps,
            "phase_cpu_s": self.clock.cpu,
            "phase_runq_s": self.clock.runq,
            "ckpt_writes": saver.writes if saver is not None else [],
        }

    def final_arrays(self) -> dict[str, np.ndarray]:
        from nmp.train.trainer import Trainer

        return Trainer.dense_arrays(self.model, self.velocity)
