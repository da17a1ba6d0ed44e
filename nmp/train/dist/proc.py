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


def main(argv: list[str]) -> int:
    spec = RunSpec.read(Path(argv[0]))
    role = argv[1]
    store = _connect(spec)
    ctl = Control(store)
    ctx = Context(spec)
    ctx.store = store
    fresh = False
    cpu0: list[float] = []  # CPU seconds at the start of this process's part in training
    cpu_s = 0.0  # CPU seconds in training so far (published after every step)
    sched0: list[tuple[float, float]] = []  # the scheduler's (on CPU, waiting) at that start
    sched = (0.0, 0.0)  # the scheduler's seconds on a CPU and waiting for one, in training
    if role.startswith("spare:"):
        # a hot spare: everything imported and compiled, waiting for a role to take over
        key = f"assign/{role.split(':')[1]}"
        while not store.check([key]):
            time.sleep(0.005)
        role, fresh = store.get(key).decode(), True
        cpu0.append(time.process_time())  # a replacement's work starts with its role
        sched0.append(sched_s())
    kind, idx = role.split(":")
    obj: Any
    if kind == "server":
        obj = Server(ctx, int(idx), fresh=fresh)
    else:
        obj = Worker(ctx, int(idx), fresh=fresh)
    rank = spec.rank(role)
    steps = ctx.cfg.steps
    gloo_host = os.environ.get("NMP_GLOO_HOST", spec.host)
    gen = -1
    begin_s: dict[int, float] = {}
    loaded: dict[int, int] = {}  # per generation: bytes its restore read from save files
    loaded_files: dict[int, int] = {}  # ... the files it read
    store_ops: dict[int, int] = {}  # ... and its round trips to the store
    group_s: dict[int, float] = {}
    link = None
    traffic: dict[str, int] = {}
    messages: dict[str, int] = {}
    probs = None
    # this process's main thread's CPU seconds in training: the saves at a step's start, the
    # steps, the counts published after them (the rest of cpu_s ran on other threads: gloo's)
    main_cpu = {"save": 0.0, "step": 0.0, "publish": 0.0}
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
            t0 = time.perf_counter()
            comm = Comm(
                make_group(store, gen, rank, spec.world, timeout_s=spec.timeout_s, host=gloo_host),
                rank,
                spec.world,
            )
            group_s[gen] = time.perf_counter() - t0
            t0 = time.perf_counter()
            read0, files0, ops0 = files.LOADED_BYTES[0], files.LOADED_FILES[0], files.STORE_OPS[0]
            obj.begin(rec, comm, joined_fresh)
            begin_s[gen] = time.perf_counter() - t0
            loaded[gen] = files.LOADED_BYTES[0] - read0
            loaded_files[gen] = files.LOADED_FILES[0] - files0
            store_ops[gen] = files.STORE_OPS[0] - ops0
            fresh = False
            ctl.ready(gen)
            if not cpu0:
                cpu0.append(time.process_time())
                sched0.append(sched_s())
            for i in range(int(rec["resume_step"]), steps):
                c0 = time.thread_time()
                obj.save_if_due(i)
                c1 = time.thread_time()
                obj.step(i, comm, ctl, gen)
                c2 = time.thread_time()
                cpu_s = time.process_time() - cpu0[0]
                now = sched_s()
                sched = (now[0] - sched0[0][0], now[1] - sched0[0][1])
                _publish_counts(store, role, traffic, messages, comm, cpu_s, sched)
                main_cpu["save"] += c1 - c0
                main_cpu["step"] += c2 - c1
                main_cpu["publish"] += time.thread_time() - c2
            if kind == "worker" and int(idx) == 0:
                store.set("trained", "1")
            if spec.extra.get("probe") and rank in (0, spec.servers):
                # server 0 and worker 0 time the link once training is over (the others wait)
                link = probe(comm, spec.servers - rank, first=rank == 0)
            if kind == "server":
                obj.finish_rebuild(comm, steps)
                for _ in ctx.data.eval_batches(ctx.cfg.eval_batches) if spec.eval else ():
                    obj.step(-1, comm, ctl, gen, train=False)
            elif spec.eval:
                probs = _evaluate(obj, comm, ctx)
            comm.flush()
            _publish_counts(store, role, traffic, messages, comm, cpu_s, sched)
            for k, v in comm.bytes.items():
                traffic[k] = traffic.get(k, 0) + v
            for k, v in comm.messages.items():
                messages[k] = messages.get(k, 0) + v
            break
        except (CommError, Aborted) as exc:
            if comm is not None:
                for k, v in comm.bytes.items():
                    traffic[k] = traffic.get(k, 0) + v
                for k, v in comm.messages.items():
                    messages[k] = messages.get(k, 0) + v
                comm.abort()
            ctl.broken(gen, f"{role}: {type(exc).__name__}: {exc}")
            continue
    extra = {
        "group_s": {str(k): v for k, v in group_s.items()},
        "link": link,
        "loaded_bytes": {str(k): v for k, v in loaded.items()},
        "loaded_files": {str(k): v for k, v in loaded_files.items()},
        "store_ops": {str(k): v for k, v in store_ops.items()},
        "store_rtt_s": ctl.store_rtt_s,
        "main_cpu_s": main_cpu,
        "cpu_s": cpu_s,
    }
    _write_result(ctx, role, obj, begin_s, traffic, messages, probs, extra)
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
