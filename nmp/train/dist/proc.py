"""The main of one process of a distributed run: ``python -m nmp.train.dist.proc SPEC ROLE``.

``ROLE`` is ``server:<n>``, ``worker:<w>`` or ``spare:<id>``. A spare waits until the launcher
assigns it the role of a dead process. Each process then loops over generations: it joins the
generation's gloo group, restores what the strategy restores (:meth:`begin`), and trains from
the generation's resume step; a failed peer or an aborted step sends it to the next generation.
At the end it writes its result (``result/<role>.json``, arrays in ``final/<role>.npz``).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch.distributed as dist

from nmp.train.checkpoint import save_npz
from nmp.train.dist import files
from nmp.train.dist.comm import Comm, CommError, make_group, probe
from nmp.train.dist.context import Context, RunSpec
from nmp.train.dist.control import Aborted, Control
from nmp.train.dist.server import Server
from nmp.train.dist.worker import Worker
from nmp.train.metrics import all_metrics
from nmp.train.shard import worker_slices


def _connect(spec):
    store = dist.TCPStore(
        spec.host,
        spec.port,
        is_master=False,
        timeout=datetime.timedelta(seconds=max(60.0, spec.timeout_s)),
    )
    prefix = spec.extra.get("prefix")
    return dist.PrefixStore(prefix, store) if prefix else store


def sched_s() -> tuple[float, float]:
    """This process's seconds on a CPU and waiting on a run queue for one (the kernel's
    ``/proc/self/schedstat``): how much CPU the machine's other load left it. (0, 0) where
    the kernel does not keep them."""
    try:
        with open("/proc/self/schedstat") as f:
            on_cpu_ns, wait_ns = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        return 0.0, 0.0
    return on_cpu_ns / 1e9, wait_ns / 1e9


def my_id() -> str:
    """This process's id across hosts: its agent and pid (as the launcher records it)."""
    return f"{os.environ.get('NMP_AGENT', '0')}:{os.getpid()}"


def child_main(spec_path: str, role: str, log_path: str) -> None:
    """The entry of a forked role process: output to its log, then :func:`main`."""
    # never through a link left in the run folder (it would truncate what the link names)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nofollow, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    code = main([spec_path, role])
    sys.stdout.flush()
    os._exit(code)


@dataclass
class _Tally:
    """What a role process counts for its result and publishes as it trains: per generation
    the group's set-up, the restore (its seconds, and the bytes, files and store round trips
    it read), the traffic by kind, and its CPU in training (in all, and its main thread's by
    part: the saves at a step's start, the steps, the counts published after them; the rest
    of ``cpu_s`` ran on gloo's threads)."""

    cpu0: float | None = None  # CPU seconds at the start of this process's part in training
    sched0: tuple[float, float] = (0.0, 0.0)  # the scheduler's (on CPU, waiting) then
    cpu_s: float = 0.0  # CPU seconds in training so far (published after every step)
    sched: tuple[float, float] = (0.0, 0.0)  # the scheduler's seconds in training
    group_s: dict[int, float] = field(default_factory=dict)
    begin_s: dict[int, float] = field(default_factory=dict)
    loaded: dict[int, int] = field(default_factory=dict)
    loaded_files: dict[int, int] = field(default_factory=dict)
    store_ops: dict[int, int] = field(default_factory=dict)
    traffic: dict[str, int] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)
    main_cpu: dict[str, float] = field(
        default_factory=lambda: {"save": 0.0, "step": 0.0, "publish": 0.0}
    )

    def start_clock(self) -> None:
        """Training starts for this process (once: a replacement's with its role)."""
        if self.cpu0 is None:
            self.cpu0 = time.process_time()
            self.sched0 = sched_s()

    def publish(self, store, role: str, comm) -> None:
        """After a step: the CPU and the scheduler's seconds so far, then :meth:`send`."""
        assert self.cpu0 is not None
        self.cpu_s = time.process_time() - self.cpu0
        now = sched_s()
        self.sched = (now[0] - self.sched0[0], now[1] - self.sched0[1])
        self.send(store, role, comm)

    def send(self, store, role: str, comm) -> None:
        """The counts into the store as they stand (:func:`_publish_counts`)."""
        _publish_counts(store, role, self.traffic, self.messages, comm, self.cpu_s, self.sched)

    def add_comm(self, comm) -> None:
        """A generation's bytes and messages, by kind, into the totals."""
        for k, v in comm.bytes.items():
            self.traffic[k] = self.traffic.get(k, 0) + v
        for k, v in comm.messages.items():
            self.messages[k] = self.messages.get(k, 0) + v

    def extra(self, link, store_rtt_s) -> dict[str, Any]:
        return {
            "group_s": {str(k): v for k, v in self.group_s.items()},
            "link": link,
            "loaded_bytes": {str(k): v for k, v in self.loaded.items()},
            "loaded_files": {str(k): v for k, v in self.loaded_files.items()},
            "store_ops": {str(k): v for k, v in self.store_ops.items()},
            "store_rtt_s": store_rtt_s,
            "main_cpu_s": self.main_cpu,
            "cpu_s": self.cpu_s,
        }


def _take_spare_role(store, role: str, tally: _Tally) -> str:
    """A hot spare (everything imported and compiled) waits for a role to take over; its
    work starts with the role."""
    key = f"assign/{role.split(':')[1]}"
    while not store.check([key]):
        time.sleep(0.005)
    role = store.get(key).decode()
    tally.start_clock()
    return role


def _join(spec, store, obj, rec, rank: int, joined_fresh: bool, tally: _Tally):
    """Join generation ``rec``: its process group, then the role's restore; the group."""
    gen = rec["gen"]
    gloo_host = os.environ.get("NMP_GLOO_HOST", spec.host)
    t0 = time.perf_counter()
    comm = Comm(
        make_group(store, gen, rank, spec.world, timeout_s=spec.timeout_s, host=gloo_host),
        rank,
        spec.world,
    )
    tally.group_s[gen] = time.perf_counter() - t0
    t0 = time.perf_counter()
    read0, files0, ops0 = files.LOADED_BYTES[0], files.LOADED_FILES[0], files.STORE_OPS[0]
    obj.begin(rec, comm, joined_fresh)
    tally.begin_s[gen] = time.perf_counter() - t0
    tally.loaded[gen] = files.LOADED_BYTES[0] - read0
    tally.loaded_files[gen] = files.LOADED_FILES[0] - files0
    tally.store_ops[gen] = files.STORE_OPS[0] - ops0
    return comm


def _train(obj, comm, ctl, store, role: str, rec, steps: int, tally: _Tally) -> None:
    """The steps from the generation's resume step on, the counts published after each."""
    for i in range(int(rec["resume_step"]), steps):
        c0 = time.thread_time()
        obj.save_if_due(i)
        c1 = time.thread_time()
        obj.step(i, comm, ctl, rec["gen"])
        c2 = time.thread_time()
        tally.publish(store, role, comm)
        tally.main_cpu["save"] += c1 - c0
        tally.main_cpu["step"] += c2 - c1
        tally.main_cpu["publish"] += time.thread_time() - c2


def _after_training(spec, ctx, obj, comm, ctl, store, role: str, rank: int, gen: int):
    """Training is over: worker 0 marks it, the link is probed if asked, a server finishes
    its rebuild and serves the evaluation, the workers evaluate; (link, probabilities)."""
    kind, idx = role.split(":")
    if kind == "worker" and int(idx) == 0:
        store.set("trained", "1")
    link = probs = None
    if spec.extra.get("probe") and rank in (0, spec.servers):
        # server 0 and worker 0 time the link once training is over (the others wait)
        link = probe(comm, spec.servers - rank, first=rank == 0)
    if kind == "server":
        obj.finish_rebuild(comm, ctx.cfg.steps)
        for _ in ctx.data.eval_batches(ctx.cfg.eval_batches) if spec.eval else ():
            obj.step(-1, comm, ctl, gen, train=False)
    elif spec.eval:
        probs = _evaluate(obj, comm, ctx)
    return link, probs


def main(argv: list[str]) -> int:
    spec = RunSpec.read(Path(argv[0]))
    role = argv[1]
    store = _connect(spec)
    ctl = Control(store)
    ctx = Context(spec)
    ctx.store = store
    tally = _Tally()
    fresh = role.startswith("spare:")
    if fresh:
        role = _take_spare_role(store, role, tally)
    kind, idx = role.split(":")
    obj: Any = (Server if kind == "server" else Worker)(ctx, int(idx), fresh=fresh)
    rank = spec.rank(role)
    gen = -1
    link = probs = None
    while True:
        rec = ctl.next_generation(gen, timeout_s=max(300.0, spec.timeout_s))
        gen = rec["gen"]
        if rec["members"].get(role) != my_id():
            if fresh:
                continue  # a spare assigned a role: its generation is being published
            return 0  # replaced (a stale process the launcher counted as dead)
        joined_fresh = fresh and role in rec["fresh"]
        comm = None
        try:
            comm = _join(spec, store, obj, rec, rank, joined_fresh, tally)
            fresh = False
            ctl.ready(gen)
            tally.start_clock()
            _train(obj, comm, ctl, store, role, rec, ctx.cfg.steps, tally)
            link, probs = _after_training(spec, ctx, obj, comm, ctl, store, role, rank, gen)
            comm.flush()
            tally.send(store, role, comm)
            tally.add_comm(comm)
            break
        except (CommError, Aborted) as exc:
            if comm is not None:
                tally.add_comm(comm)
                comm.abort()
            ctl.broken(gen, f"{role}: {type(exc).__name__}: {exc}")
            continue
    extra = tally.extra(link, ctl.store_rtt_s)
    _write_result(ctx, role, obj, tally.begin_s, tally.traffic, tally.messages, probs, extra)
    return 0


def _publish_counts(
    store, role, traffic, messages, comm, cpu_s: float, sched: tuple[float, float]
) -> None:
    """This process's bytes and messages so far, by kind, its CPU seconds in training and the
    scheduler's (on a CPU, waiting for one), kept in the store after every step (a killed
    process's traffic and CPU time still count)."""
    b = dict(traffic)
    m = dict(messages)
    for k, v in comm.bytes.items():
        b[k] = b.get(k, 0) + v
    for k, v in comm.messages.items():
        m[k] = m.get(k, 0) + v
    store.set(
        f"traffic/{my_id()}",
        json.dumps({"bytes": b, "messages": m, "cpu_s": cpu_s, "sched_s": sched}),
    )


def _evaluate(worker, comm, ctx):
    """Worker ``w`` evaluates its slices; worker 0 collects everyone's, in worker order."""
    mine = worker.evaluate(comm)
    if worker.index != 0:
        comm.post(ctx.worker_rank(0), "eval_probs", np.concatenate(mine))
        comm.flush()
        return None
    per = [mine] + [None] * (ctx.spec.workers - 1)
    for w in range(1, ctx.spec.workers):
        (flat,) = comm.recv(ctx.worker_rank(w))
        sizes = [len(m) for m in _slices_per_batch(ctx, w)]
        per[w] = np.split(flat, np.cumsum(sizes)[:-1])
    # batch by batch, the workers' slices in order (the single-process evaluation's order)
    return [np.concatenate([per[w][e] for w in range(ctx.spec.workers)]) for e in range(len(mine))]


def _slices_per_batch(ctx, w):
    out = []
    for b in ctx.data.eval_batches(ctx.cfg.eval_batches):
        sl = worker_slices(b.size, ctx.spec.workers)[w]
        out.append(range(sl.start, sl.stop))
    return out


def _write_result(ctx, role, obj, begin_s, traffic, messages, probs, extra) -> None:
    out = ctx.run_dir
    (out / "result").mkdir(exist_ok=True)
    (out / "final").mkdir(exist_ok=True)
    name = role.replace(":", "-")
    res = {
        "role": role,
        "pid": os.getpid(),
        "begin_s": {str(k): v for k, v in begin_s.items()},
        "traffic_bytes": traffic,
        "traffic_messages": messages,
        **extra,
    }
    if hasattr(obj, "result"):
        res.update(obj.result())
    if hasattr(obj, "step_wall"):
        res["step_wall"] = obj.step_wall
    if probs is not None:
        labels = np.concatenate([b.label for b in ctx.data.eval_batches(ctx.cfg.eval_batches)])
        res["metrics"] = all_metrics(labels, np.concatenate(probs))
        teacher = [b.teacher_prob for b in ctx.data.eval_batches(ctx.cfg.eval_batches)]
        if all(t is not None for t in teacher):
            res["metrics"]["auc_teacher"] = all_metrics(labels, np.concatenate(teacher))["auc"]
    save_npz(out / "final" / f"{name}.npz", **obj.final_arrays())
    from nmp.fileio import atomic_write_text  # a link or device at the path: refused

    atomic_write_text(out / "result" / f"{name}.json", json.dumps(res))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
