"""An embedding server process: its rows (value and optimizer state), its parity, its memory.

A server holds the rows the shard map gives it as float32 records (padded as the store pads
them) and, under a coded strategy (ECRec), the XOR parity of the stripes whose parity position
is its own. Its memory is an ``nmp.arch`` design (:class:`~nmp.train.shard.NodeMemory`): each
worker's lookups are gathered and reduced by the design's units, and every ``cost_sample``-th
step is timed by the design's DRAM model.

One step, in the order the protocol fixes (every process receives in this order):

1. receive each worker's lookups (worker order);
2. a replacement still rebuilding first repairs what it needs: the touched rows it does not
   have and the next range of its lost positions, each the XOR of the other positions of its
   stripe, which the other servers send (degraded reads and the background rebuild are one
   exchange: training never waits for the whole shard);
3. send each worker its partial sums; then serve a rebuilding peer's repair request;
4. receive the workers' per-row gradients, add them in worker order, apply the optimizer:
   the new records are *staged*;
5. coded: send each parity holder ``old XOR new`` of its stripes' rows, receive the deltas of
   the stripes this server holds parity for: *staged*;
6. vote; on ``commit`` apply the staged rows and XOR the staged deltas into the parity with
   ``nmp.arch.parity.xor_into`` (parity positions still being rebuilt drop them: they are
   re-encoded from the data later).
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from nmp.arch.parity import xor_into
from nmp.train import optim
from nmp.train.alltoall.exchange import make_alltoall
from nmp.train.dist import files
from nmp.train.dist.comm import Comm
from nmp.train.dist.context import Context
from nmp.train.dist.control import ABORT, Aborted, Control
from nmp.train.dist.files import Saver
from nmp.train.dist.phases import PhaseClock, plan, track_lookups
from nmp.train.shard import NodeMemory, Request, combine_row_grads, request_for
from nmp.train.trainer import init_records


class Server:
    def __init__(self, ctx: Context, node: int, *, fresh: bool) -> None:
        self.ctx, self.node, self.role = ctx, node, f"server:{node}"
        cfg, shard = ctx.cfg, ctx.shard
        self.rows = shard.rows_of_node(node)
        # its memory: the nmp.arch design that holds its records and parity and runs the
        # gathers and the XORs
        self.mem = NodeMemory(cfg.arch, cfg.memory, cfg.seed, shard, node, ctx.geo.dim)
        self.k = shard.k
        # The stripes whose parity this server holds (r = 1: position k); none without parity.
        self.pstripes = (
            np.flatnonzero(shard.node_of_pos[:, self.k] == node)
            if ctx.coded
            else np.empty(0, dtype=np.int64)
        )
        self.mem.hold(
            init_records(ctx.geo, ctx.width, cfg.seed, self.rows),
            np.zeros((len(self.pstripes), 4 * ctx.width), dtype=np.uint8),
        )
        self.row_ok = np.ones(len(self.rows), dtype=bool)
        self.par_ok = np.ones(len(self.pstripes), dtype=bool)
        if fresh:
            self.lose()
        elif ctx.coded:
            self.parity[:] = self._encode(self.pstripes, self._initial_records)
        g0 = shard.global_rows(ctx.batch(0).ids)[:, ctx.slices[0]]
        self.mem.prime(request_for(shard, node, g0))
        self.rebuilding_peers: set[int] = set()
        self.modeled: dict[str, list[float]] = {"gather_ns": [], "gather_pj": []}
        self.wall: dict[str, float] = {}
        self.tracking = (
            ctx.strategy.new_tracking(len(self.rows)) if ctx.strategy.tracks_rows else None
        )
        self.top_k = max(1, int(cfg.cpr_fraction * len(self.rows)))
        self.saver = Saver(ctx, self.role)
        self.codec = make_alltoall(cfg)  # train.compress: the pooled and gradient traffic
        self.events: list[dict[str, Any]] = []
        self.clock = PhaseClock()  # the schedule's phases, timed per step
        # the step's table: the schedule's phases this server takes part in, with handlers
        self.plan = plan(ctx.schedule, "server", self._handlers(), ctx.strategy.name)
        names = [n for n, _ in self.plan]
        self._forward = names.index("pooled") + 1  # an evaluation step stops there
        # The design's timing of the parity's update (nmp.train.hwcost: the arch's
        # parity_update beyond a plain read-modify-write), on every cost_sample-th step's rows:
        # what the memory would take for this server's parity_xor phase.
        if "parity_xor" in names:
            self.mem.update_cost = _update_costs(ctx)
        self.modeled["parity_update_ns"] = self.mem.parity_update_ns
        self.modeled["plain_update_ns"] = self.mem.plain_update_ns

    @property
    def records(self) -> np.ndarray:
        return self.mem.records  # float32 [rows, width]: in the design's memory

    @property
    def parity(self) -> np.ndarray:
        return self.mem.parity  # bytes [parity stripes, 4 * width]: in the design's memory

    # -- records --------------------------------------------------------------------------------

    def _initial_records(self, rows: np.ndarray) -> np.ndarray:
        return init_records(self.ctx.geo, self.ctx.width, self.ctx.cfg.seed, rows)

    def _encode(self, stripes: np.ndarray, records_of) -> np.ndarray:
        """XOR parity (bytes) of ``stripes`` from ``records_of(rows)``; padding rows are 0."""
        total = self.ctx.shard.total_rows
        out = np.zeros((len(stripes), 4 * self.ctx.width), dtype=np.uint8)
        for j in range(self.k):
            rows = stripes * self.k + j
            real = rows < total
            if real.any():
                rec = records_of(rows[real])
                xor_into(out, np.flatnonzero(real), rec.view(np.uint8).reshape(len(rec), -1))
        return out

    def local(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.rows, rows)

    def values(self, rows: np.ndarray) -> np.ndarray:
        return self.records[self.local(rows)]

    def lose(self) -> None:
        """This process replaces a dead server: it holds nothing valid yet."""
        self.records[:] = 0.0
        self.parity[:] = 0
        self.row_ok[:] = False
        self.par_ok[:] = False

    @property
    def rebuilding(self) -> bool:
        return not (self.row_ok.all() and self.par_ok.all())

    # -- generations ----------------------------------------------------------------------------

    def begin(self, rec: dict[str, Any], comm: Comm, fresh: bool) -> None:
        """Restore what the strategy restores for this generation."""
        ctx = self.ctx
        self.rebuilding_peers = {
            int(r.split(":")[1]) for r in rec.get("rebuilding", []) if r != self.role
        }
        if rec.get("rollback") is not None:  # full recovery: every process reloads
            z = files.load(ctx.ckpt_dir(rec["rollback"]) / files.part_name(self.role))
            self.records[:] = z["records"]
            self.row_ok[:] = True
        elif (
            fresh
            and (got := ctx.strategy.restore_replacement(ctx, self.role, self.rows, rec))
            is not None
        ):
            self.records[:] = got
            self.row_ok[:] = True
        if fresh and ctx.coded:
            positions = int((~self.row_ok).sum() + (~self.par_ok).sum())
            self.range_size = max(1, math.ceil(positions / ctx.cfg.rebuild_ranges))

    # -- one step -------------------------------------------------------------------------------

    def step(self, i: int, comm: Comm, ctl: Control, gen: int, *, train: bool = True):
        """One step: the server's phases of the strategy's schedule, walked in its order
        (:func:`nmp.train.dist.phases.plan`), each timed under its name; an evaluation step
        runs the forward phases only."""
        st = SimpleNamespace(i=i, comm=comm, ctl=ctl, gen=gen, train=train, t0=time.perf_counter())
        st.timed = train and i % self.ctx.cfg.cost_sample == 0
        clock = self.clock
        if train:
            clock.start(gen, i)
        else:
            clock.stop()
        for name, run in self.plan if train else self.plan[: self._forward]:
            run(st)
            clock.lap(name)
        if not train:
            comm.flush()
            return
        clock.stop()

    def _handlers(self) -> dict[str, Any]:
        """The phases a server runs, by the schedule's names."""
        return {
            "lookup": self._receive_lookups,
            "gather": self._gather,
            "pooled": self._send_pooled,
            "row_grad": self._receive_row_grads,
            "optimizer": self._optimizer,
            "parity_delta": self._parity_delta,
            "vote": self._vote,
            "parity_xor": self._parity_xor,
            "track": lambda st: self._track(st.reqs, st.i),
        }

    def _receive_lookups(self, st) -> None:
        ctx = self.ctx
        st.reqs = []
        for w in range(ctx.spec.workers):
            pos, rows, shape = st.comm.recv(ctx.worker_rank(w))
            t_n, b_n, p_n = (int(x) for x in shape)
            st.reqs.append(Request(pos=pos, rows=rows, shape=(t_n, b_n, p_n)))
        if self.rebuilding:  # the rows it lacks and one range, before the gather reads them
            self.clock.lap("lookup")
            self._repair(st.comm, np.concatenate([r.rows for r in st.reqs]), st.i)
            self.clock.lap("repair")

    def _gather(self, st) -> None:
        """Each worker's request gathered and reduced on the memory design's units."""
        st.partials = []
        t_ns = e_pj = 0.0
        for req in st.reqs:
            part, op = self.mem.gather(req, self.values, timed=st.timed)
            st.partials.append(part)
            if op is not None:
                t_ns, e_pj = t_ns + op.t_ns, e_pj + op.total_energy_pj
        if st.timed:
            self.modeled["gather_ns"].append(t_ns)
            self.modeled["gather_pj"].append(e_pj)

    def _send_pooled(self, st) -> None:
        ctx = self.ctx
        kind = "pooled" if st.train else "eval_pooled"
        for w, (req, (slots, vectors)) in enumerate(zip(st.reqs, st.partials, strict=True)):
            if self.codec is not None and st.train:  # SC'24: real compressed bytes
                msg = self.codec.encode_partial(slots, vectors, req.shape[0], st.i)
                st.comm.post(ctx.worker_rank(w), kind, *msg)
            else:
                st.comm.post(ctx.worker_rank(w), kind, slots.astype(np.int32), vectors)
        if self.rebuilding_peers:  # then a rebuilding peer's repair request is served
            self.clock.lap("pooled")
            for peer in sorted(self.rebuilding_peers):
                self._serve_repair(st.comm, peer)
            self.clock.lap("repair")

    def _receive_row_grads(self, st) -> None:
        ctx = self.ctx
        st.parts = []
        for w in range(ctx.spec.workers):
            rows, grads = st.comm.recv(ctx.worker_rank(w))
            if self.codec is not None:
                grads = self.codec.decode_grads(rows, grads, ctx.geo.dim)
            st.parts.append((rows, grads))

    def _optimizer(self, st) -> None:
        """The workers' gradients added in worker order, the optimizer applied: staged."""
        st.rows, grad = combine_row_grads(st.parts)
        st.idx = self.local(st.rows)
        st.old = self.records[st.idx]
        st.new = optim.apply_rows(
            self.ctx.cfg.optimizer, st.old, grad, lr=self.ctx.cfg.lr_embedding
        )

    def _parity_delta(self, st) -> None:
        st.staged = self._exchange_deltas(st.comm, st.rows, st.idx, st.new)

    def _vote(self, st) -> None:
        """Every send out, the vote; on commit the staged rows are applied."""
        ctx = self.ctx
        st.comm.flush()
        self.wall["step"] = self.wall.get("step", 0.0) + time.perf_counter() - st.t0
        if st.ctl.vote(st.gen, st.i, ctx.spec.world, ctx.spec.timeout_s) == ABORT:
            self.clock.drop()
            raise Aborted(f"step {st.i} aborted")
        st.ctl.fault_point(self.role, "commit", st.i)
        self.mem.write(st.idx, st.new)

    def _parity_xor(self, st) -> None:
        """The staged deltas XORed into this server's parity in place (positions still being
        rebuilt drop them: they are re-encoded from the data later)."""
        stripes, delta = st.staged
        pos = np.searchsorted(self.pstripes, stripes)
        keep = self.par_ok[pos]
        self.mem.parity_update(pos[keep], delta[keep], st.rows if st.timed else None)

    def _track(self, reqs: list[Request], step: int) -> None:
        """CPR's bookkeeping of the committed step: the strategy's counters or marks."""
        assert self.tracking is not None  # the phase is only in a tracking strategy's step
        track_lookups(self.ctx, self.tracking, self.rows, reqs, step)

    def save_if_due(self, step: int) -> None:
        """The strategy's save at the start of ``step`` (this server's part)."""
        if not self.saver.due(step):
            return
        full = self.saver.is_full(step)
        if full:
            if self.tracking is not None:
                self.tracking[:] = 0
            self.saver.save(step, full=True, rows=self.rows, records=self.records)
        else:
            idx = self.ctx.strategy.choose(self.tracking, self.top_k)
            self.saver.save(step, full=False, rows=self.rows[idx], records=self.records[idx])

    def _exchange_deltas(self, comm: Comm, rows, idx, new):
        """Send each parity holder the deltas of its stripes; return the deltas received for
        this server's parity (stripe ids, bytes), staged."""
        ctx, shard = self.ctx, self.ctx.shard
        stripes = shard.stripe_of[rows]
        holder = shard.node_of_pos[stripes, self.k]
        delta = self.mem.delta(idx, new)  # old XOR new, in the data's memory
        for n in range(ctx.spec.servers):
            if n != self.node:
                m = holder == n
                comm.post(n, "parity_delta", stripes[m], delta[m])
        got_s, got_d = [], []
        for n in range(ctx.spec.servers):
            if n != self.node:
                s, d = comm.recv(n)
                got_s.append(s)
                got_d.append(d)
        return np.concatenate(got_s), np.concatenate(got_d).reshape(-1, 4 * ctx.width)

    # -- rebuild: degraded reads and ranges ---------------------------------------------------

    def _repair(self, comm: Comm, touched: np.ndarray, step: int) -> None:
        """Rebuild the touched lost rows and the next range of lost positions from the XOR of
        their stripes' other positions (the other servers send them)."""
        ctx, shard = self.ctx, self.ctx.shard
        t0 = time.perf_counter()
        mine = np.unique(touched)
        need = shard.stripe_of[mine[~self.row_ok[self.local(mine)]]]
        lost = np.union1d(shard.stripe_of[self.rows[~self.row_ok]], self.pstripes[~self.par_ok])
        rest = np.setdiff1d(lost, need, assume_unique=False)
        stripes = np.union1d(need, rest[: self.range_size])
        last = len(np.setdiff1d(lost, stripes)) == 0
        for n in range(ctx.spec.servers):
            if n != self.node:
                comm.post(n, "repair", stripes, np.array([last], dtype=np.uint8))
        acc = np.zeros((len(stripes), 4 * ctx.width), dtype=np.uint8)
        for n in range(ctx.spec.servers):
            if n != self.node:
                (shards,) = comm.recv(n)
                xor_into(acc, np.arange(len(stripes)), shards)
        # the positions of this server in those stripes: a data row or the parity
        pos = np.argmax(shard.node_of_pos[stripes] == self.node, axis=1)
        is_par = pos == self.k
        p_idx = np.searchsorted(self.pstripes, stripes[is_par])
        self.parity[p_idx] = acc[is_par]
        self.par_ok[p_idx] = True
        rows = stripes[~is_par] * self.k + pos[~is_par]
        real = rows < shard.total_rows
        li = self.local(rows[real])
        self.records[li] = acc[~is_par][real].view(np.float32).reshape(-1, ctx.width)
        self.row_ok[li] = True
        self.wall["repair"] = self.wall.get("repair", 0.0) + time.perf_counter() - t0
        if last:
            self.events.append({"rebuilt": self.role, "at_step": step})
            self.ctx.store.set(f"healthy/{self.role}", str(step))

    def _serve_repair(self, comm: Comm, peer: int) -> None:
        """Send ``peer`` this server's position of each stripe it asks for."""
        ctx, shard = self.ctx, self.ctx.shard
        stripes, last = comm.recv(peer)
        pos = np.argmax(shard.node_of_pos[stripes] == self.node, axis=1)
        out = np.zeros((len(stripes), 4 * ctx.width), dtype=np.uint8)
        is_par = pos == self.k
        out[is_par] = self.parity[np.searchsorted(self.pstripes, stripes[is_par])]
        rows = stripes[~is_par] * self.k + pos[~is_par]
        real = rows < shard.total_rows
        rec = self.records[self.local(rows[real])]
        sel = np.flatnonzero(~is_par)[real]
        out[sel] = rec.view(np.uint8).reshape(len(rec), -1)
        comm.post(peer, "repair", out)
        if last[0]:
            self.rebuilding_peers.discard(peer)

    def finish_rebuild(self, comm: Comm, step: int) -> None:
        """After the last step: a replacement still rebuilding requests its remaining ranges
        until it holds everything; the others serve it (no worker takes part)."""
        while self.rebuilding or self.rebuilding_peers:
            if self.rebuilding:
                self._repair(comm, np.empty(0, np.int64), step)
            for peer in sorted(self.rebuilding_peers):
                self._serve_repair(comm, peer)
            comm.flush()

    # -- end of run -----------------------------------------------------------------------------

    def result(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "modeled": self.modeled,
            "wall_s": self.wall,
            "phase_s": self.clock.steps,
            "phase_cpu_s": self.clock.cpu,
            "phase_runq_s": self.clock.runq,
            "events": self.events,
            "ckpt_write_s": self.saver.write_s,
            "ckpt_bytes": self.saver.bytes,
            "ckpt_writes": self.saver.writes,
            "codec": _codec_stats(self.codec),
        }

    def final_arrays(self) -> dict[str, np.ndarray]:
        return {
            "rows": self.rows,
            "records": self.records,
            "pstripes": self.pstripes,
            "parity": self.parity,
        }


def _codec_stats(codec) -> dict[str, Any] | None:
    """Bytes before and after the codec and its CPU seconds, by direction (this process)."""
    if codec is None:
        return None
    return {d: vars(st) for d, st in codec.stats.items()}


def _update_costs(ctx: Context):
    """(coded, plain) update timings of the design on the run's records (nmp.train.hwcost)."""
    from nmp.train.hwcost import make_backend
    from nmp.train.step_costs import _StoreShape

    record = 4 * ctx.width
    coded = make_backend(ctx.cfg, ctx.geo, _StoreShape(record, ctx.shard.k, 1))
    plain = make_backend(ctx.cfg, ctx.geo, _StoreShape(record, ctx.spec.servers, 0))
    return coded, plain
