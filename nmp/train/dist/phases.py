"""Phase timing inside the processes, and the run's phases measured beside modeled.

Every process times each phase of its strategy's schedule (:mod:`nmp.train.schedule`) in every
training step, by name (:class:`PhaseClock`); the report (:func:`measured_phases`) takes, per
step, the slowest process of the role that runs the phase (the step waits for it), and then the
median over the steps.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np


def _open_schedstat() -> int | None:
    """This thread's schedstat file, kept open (each lap re-reads it with one ``pread``:
    opening it every lap cost ~13 us of CPU, more than a small phase such as CPR's ``track``
    does); None where the kernel keeps none."""
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


def _runq_s(fd: int | None) -> float:
    """Seconds this thread has waited on a run queue for a CPU (the kernel's schedstat; 0 where
    it keeps none)."""
    if fd is None:
        return 0.0
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class PhaseClock:
    """Seconds per phase per training step of one process: ``start()`` at the step's start,
    ``lap(name)`` at the end of each phase (the time since the previous lap is that phase's).
    Beside the wall time it keeps the thread's CPU seconds (``cpu``) and the seconds it waited
    for a CPU while runnable (``runq``) in each phase: the rest of a phase's time it was
    blocked on a peer."""

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, float]] = {}  # "gen:step" -> phase -> seconds
        self.cpu: dict[str, dict[str, float]] = {}
        self.runq: dict[str, dict[str, float]] = {}
        self._key = ""
        self._t = self._c = self._q = 0.0
        self._fd = _open_schedstat()  # the thread that creates the clock is the one it times

    def start(self, gen: int, step: int) -> None:
        self._key = f"{gen}:{step}"
        self.steps[self._key] = {}
        self.cpu[self._key] = {}
        self.runq[self._key] = {}
        self._t, self._c, self._q = time.perf_counter(), time.thread_time(), _runq_s(self._fd)

    def stop(self) -> None:
        """Outside a training step (evaluation, rebuild's tail): laps are not recorded."""
        self._key = ""

    def lap(self, name: str) -> None:
        if not self._key:
            return
        now, c, q = time.perf_counter(), time.thread_time(), _runq_s(self._fd)
        for book, d in (
            (self.steps, now - self._t),
            (self.cpu, c - self._c),
            (self.runq, q - self._q),
        ):
            row = book.setdefault(self._key, {})
            row[name] = row.get(name, 0.0) + d
        self._t, self._c, self._q = now, c, q

    def drop(self) -> None:
        """The step was aborted: its phases are not a committed step's."""
        for book in (self.steps, self.cpu, self.runq):
            book.pop(self._key, None)
        self._key = ""


def plan(schedule, role: str, handlers: dict[str, Any], strategy: str) -> list[tuple[str, Any]]:
    """The phases of ``schedule`` a process of ``role`` ("server" or "worker") takes part in
    (it runs them, receives their sends, or all take part), in the schedule's order, each with
    the process's handler: the table a step walks. A phase it has no handler for is refused
    up-front, naming it."""
    from nmp.errors import NmpError

    out = []
    for p in schedule.step:
        if role not in (p.actor, p.to) and p.actor != "all":
            continue
        if p.name not in handlers:
            raise NmpError(
                f"strategy '{strategy}': its schedule's phase '{p.name}' has no {role} handler "
                f"(the {role} runs {', '.join(sorted(handlers))})"
            )
        out.append((p.name, handlers[p.name]))
    return out


def per_step(
    results: dict[str, Any], actor: str, book: str = "phase_s"
) -> dict[str, dict[str, float]]:
    """Per committed step ("gen:step"), per phase: the slowest ``actor`` process's seconds
    (``book``: ``phase_s`` wall, ``phase_cpu_s`` on a CPU, ``phase_runq_s`` waiting for one:
    the most of any process)."""
    out: dict[str, dict[str, float]] = {}
    for role, res in results.items():
        if not role.startswith(actor + ":"):
            continue
        for key, phases in (res.get(book) or {}).items():
            row = out.setdefault(key, {})
            for name, s in phases.items():
                row[name] = max(row.get(name, 0.0), s)
    return out


def measured_phases(
    results: dict[str, Any], schedule, book: str = "phase_s", stat: str = "median"
) -> dict[str, float]:
    """Median (or ``stat`` "mean") seconds per step of every phase of ``schedule`` (each from
    the role that runs it; a phase no process timed is absent)."""
    out: dict[str, float] = {}
    # a sync of all ("vote") is the servers' view: they vote last, after their exchanges
    for actor in ("server", "worker"):
        steps = per_step(results, actor, book)
        for p in schedule.step:
            if p.actor not in (actor, "all") or p.name in out:
                continue
            vals = [row[p.name] for row in steps.values() if p.name in row]
            if vals:
                out[p.name] = float(np.mean(vals) if stat == "mean" else np.median(vals))
    return out


# The phase whose work is the same in every run of a configuration: the workers' MLP forward
# and backward (pure computation on the same batches, whatever the strategy). Its CPU seconds
# move only with how fast this machine's CPUs run under the other load (chosen after the
# failure-free runs' MLP CPU moved by up to 31 % between runs a minute apart at load 7-9).
REFERENCE_PHASE = "dense"


def reference_cpu_samples_s(rec: dict) -> list[float]:
    """CPU seconds of the reference phase, one per process and committed step."""
    return [
        s
        for res in rec.get("results", {}).values()
        for phases in (res.get("phase_cpu_s") or {}).values()
        for name, s in phases.items()
        if name == REFERENCE_PHASE
    ]


def reference_cpu_per_step_s(rec: dict) -> float | None:
    """Mean CPU seconds of the reference phase per process and step (None: not recorded)."""
    per = reference_cpu_samples_s(rec)
    return float(np.mean(per)) if per else None


def work_speed(run: dict, bases: list[dict]) -> float:
    """How much longer this run's CPUs took for identical work than the failure-free runs'
    (the reference phase's CPU per step, :data:`REFERENCE_PHASE`): the time-slicing of six
    processes on two cores and the machine's other load share caches and cores, and moved the
    same MLP's CPU by up to 31 % between runs a minute apart. A stated input of the model (how
    fast the machine ran), not the phases' own wall times; 1.0 where a run did not record it."""
    mine = reference_cpu_per_step_s(run)
    theirs = [t for t in map(reference_cpu_per_step_s, bases) if t]
    if not mine or not theirs or len(theirs) < len(bases):
        return 1.0
    return mine / float(np.mean(theirs))


def mean_phases(runs: list[dict[str, Any]], schedule, stat: str = "median") -> dict[str, float]:
    """:func:`measured_phases` of each run, averaged over the runs that timed the phase."""
    got = [measured_phases(r["results"], schedule, stat=stat) for r in runs]
    names = {n for g in got for n in g}
    return {n: float(np.mean([g[n] for g in got if n in g])) for n in names}


# Bytes a microbenchmark touches between its repetitions: twice a core's L2 (4 MiB on the
# 2-core Xeon the figures in docs/training.md come from, 1-2 MiB on most server cores), so
# that each repetition starts from caches another process has just used, as a server's phase
# does in a run where six processes take turns on the cores (measured: CPR's bookkeeping took
# 0.14-0.16 ms of CPU per step in the run against 0.04 ms repeated on warm caches).
EVICT_BYTES = 8 << 20
_EVICT: list[np.ndarray] = []


def evict_private_caches() -> None:
    """Touch :data:`EVICT_BYTES` of another buffer (the cores' private caches then hold it)."""
    if not _EVICT:
        _EVICT.append(np.ones(EVICT_BYTES // 8, dtype=np.int64))
    buf = _EVICT[0]
    buf += 1


def xor_seconds(rows: int, record_bytes: int, reps: int = 21) -> float:
    """A microbenchmark: this machine's time for one ``xor_into`` of ``rows`` records (the
    parity's in-place XOR of one step's deltas on one server), median of ``reps``, each from
    evicted private caches (:func:`evict_private_caches`)."""
    from nmp.arch.parity import xor_into

    rows = max(1, int(rows))
    parity = np.zeros((rows, record_bytes), np.uint8)
    delta = np.ones((rows, record_bytes), np.uint8)
    stripes = np.arange(rows) * 3  # as the server: find each stripe's parity row, skip none
    held = np.arange(rows * 3)
    ok = np.ones(len(held), dtype=bool)
    times = []
    for _ in range(reps):
        evict_private_caches()
        t0 = time.perf_counter()
        pos = np.searchsorted(held, stripes)
        keep = ok[pos]
        xor_into(parity, np.arange(rows)[keep], delta[keep])
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def round_samples_s(runs: list[dict[str, Any]], speed: float = 1.0) -> np.ndarray:
    """The failure-free runs' blocking rounds, one per committed step: the workers' MLP
    all-gather (``dense_grad``, the slowest worker's), at ``speed`` (:func:`work_speed`)."""
    got = [
        row["dense_grad"]
        for r in runs
        for row in per_step(r["results"], "worker").values()
        if "dense_grad" in row
    ]
    return speed * np.asarray(got, dtype=float)


def round_seconds(samples, workers: int, peers: int, stat: str = "mean") -> float:
    """One blocking all-to-all round with ``peers`` peers on this machine, from ``samples`` of
    the failure-free runs' round among ``workers - 1`` peers (:func:`round_samples_s`). A
    process's round is its own part plus the wait for the last of its peers to be scheduled
    and send; with the peers' lateness independent and alike, a round among k peers has the
    distribution F^k of one among a single peer, so a round among p peers has the measured
    rounds' distribution raised to the power p / k: its mean (``stat`` "mean") or median from
    the samples' order statistics, no law assumed for the delays. The process's own part is
    in every sample and is not multiplied. (It replaced a harmonic-number scaling of the mean
    round, H(p) / H(k), which assumed exponential delays and multiplied the own part too:
    ECRec's 3-peer exchange came out 26-35 % above measured on the quiet machine.)"""
    x = np.sort(np.asarray(samples, dtype=float))
    if workers < 2 or x.size == 0:
        return 0.0  # no all-gather to measure a round on (one worker): not charged
    power = peers / (workers - 1)
    if stat == "median":
        return float(np.quantile(x, 0.5 ** (1.0 / power)))
    cdf = np.arange(x.size + 1, dtype=float) / x.size
    weights = np.diff(cdf**power)  # P(the max of `power` draws is the i-th smallest)
    return float(weights @ x)


def track_lookups(ctx, state: np.ndarray, rows_of: np.ndarray, reqs, step: int) -> None:
    """One server's CPR bookkeeping of one committed step (the server's ``track`` phase): the
    strategy's ``track`` on the local indices of the workers' lookups ``reqs`` (and, for a
    strategy that draws inputs, the input each lookup belongs to)."""
    rows = np.concatenate([np.searchsorted(rows_of, r.rows) for r in reqs])
    sample = None
    if ctx.strategy.tracks_samples:
        p = ctx.geo.pooling
        sample = np.concatenate(
            [ctx.slices[w].start + (r.pos // p) % r.shape[1] for w, r in enumerate(reqs)]
        )
    ctx.strategy.track(state, rows, sample, ctx.geo.batch, step, ctx.cfg)


def track_seconds(ctx, reps: int = 21) -> float:
    """A microbenchmark: this machine's time for one server's CPR bookkeeping of one step
    (:func:`track_lookups`, as the server runs it, on server 0's lookups of step 0), median
    of ``reps``, each from evicted private caches (:func:`evict_private_caches`)."""
    from nmp.train.shard import request_for

    shard = ctx.shard
    rows_of = shard.rows_of_node(0)
    g = shard.global_rows(ctx.batch(0).ids)
    reqs = [request_for(shard, 0, g[:, sl]) for sl in ctx.slices]
    state = ctx.strategy.new_tracking(len(rows_of))
    times = []
    for _ in range(reps):
        evict_private_caches()
        t0 = time.perf_counter()
        track_lookups(ctx, state, rows_of, reqs, 0)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def contention(rec: dict[str, Any]) -> float:
    """The run's CPU contention: seconds its processes' main threads waited on a run queue
    per second they ran (the kernel's schedstat, summed over the processes). On a machine with
    a core per process and no other load it is near 0; here a CPU burst of c seconds takes
    c (1 + contention) on average. 0 when the processes did not report it."""
    got = (rec.get("traffic") or {}).get("sched_s") or {}
    on = sum(v[0] for v in got.values())
    wait = sum(v[1] for v in got.values())
    return wait / on if on > 0 else 0.0


def model_phases(
    schedule,
    common,
    base_phases: dict[str, float],
    *,
    delta_bytes_per_server: float,
    compute_s: dict[str, float],
    link_gbps: float,
    servers: int,
    workers: int,
    cpu_contention: float = 0.0,
    cores: int = 0,
    round_samples: np.ndarray | None = None,
    stat: str = "median",
) -> tuple[dict[str, float], dict[str, Any]]:
    """Each phase's modeled seconds per step on this machine, and the inputs taken.

    The common step's phases are the failure-free runs' measured ones (inputs: what this
    machine takes for them). A phase the strategy adds is priced by what it does: a send among
    servers (``parity_delta``) is one blocking all-to-all round, charged as the failure-free
    runs' own all-to-all round among peers (the workers' MLP all-gather, ``dense_grad``: each
    process blocks until every peer was scheduled and sent; on an oversubscribed machine the
    round costs scheduling, not bytes, chosen; taken to the servers' peers by
    :func:`round_seconds` from ``round_samples``, ``stat`` their mean or median) plus its
    bytes over the measured link; a compute (``parity_xor``, ``track``) is its
    microbenchmark's seconds (``compute_s``: the same work on as many records, run alone)
    stretched by the run's CPU contention (:func:`contention`): in the run the burst waits
    for a CPU as every burst there does; every process of the phase's role runs it at once,
    so with more of them than ``cores`` (this machine's CPUs; 0: as many as processes) they
    take turns: n / cores bursts in a row."""
    out = {n: s for n, s in base_phases.items() if common.has(n)}
    if round_samples is None:  # the base phases' own round as the one sample
        round_samples = np.array([base_phases.get("dense_grad", 0.0)])
    round_s = round_seconds(round_samples, workers, servers - 1, stat)  # among the servers
    inputs: dict[str, Any] = {
        "failure_free_phase_ms": {n: 1e3 * s for n, s in out.items()},
        "cpu_contention": cpu_contention,
        "cores": cores,
    }
    for p in schedule.step:
        if common.has(p.name) or p.background:
            continue
        if p.does == "send":
            wire = delta_bytes_per_server / (link_gbps * 1e9) if link_gbps else 0.0
            out[p.name] = round_s + wire
            inputs["round_ms"] = 1e3 * round_s
            inputs[f"{p.name}_bytes_per_server_step"] = delta_bytes_per_server
        elif p.does == "compute":
            n = servers if p.actor == "server" else workers
            turns = max(1.0, n / cores) if cores else 1.0
            out[p.name] = compute_s.get(p.name, 0.0) * turns * (1.0 + cpu_contention)
            inputs[f"{p.name}_microbenchmark_ms"] = 1e3 * compute_s.get(p.name, 0.0)
    return out, inputs


def compute_benches(ctx, schedule) -> tuple[dict[str, float], dict[str, Any]]:
    """The microbenchmark of each compute phase the strategy adds (by the phase's name), and
    the counts it ran on."""
    out: dict[str, float] = {}
    counts: dict[str, Any] = {}
    s = ctx.spec.servers
    if schedule.has("parity_xor"):  # one step's deltas XORed into one server's parity
        rows = len(np.unique(ctx.shard.global_rows(ctx.batch(0).ids))) / s
        out["parity_xor"] = xor_seconds(round(rows), 4 * ctx.width)
        counts["parity_xor_rows_per_server_step"] = rows
    if schedule.has("track"):  # CPR's bookkeeping of one step's lookups on one server
        out["track"] = track_seconds(ctx)
    return out, counts


def phase_model(cfg, run: dict, base: dict, link_gbps: float, step_times) -> dict[str, Any]:
    """Every phase of the strategy's schedule, measured in its run beside modeled from the
    failure-free runs' inputs (:func:`nmp.train.dist.phases.model_phases`), in ms per step,
    and the step in total: the failure-free step at the run's speed (:func:`work_speed`) plus
    the phases the strategy adds in series (its schedule's critical path beyond the common
    step); its ``overhead_pct`` is against that same failure-free step."""
    from nmp.train.schedule import COMMON

    ctx = run["ctx"]
    sched = ctx.schedule
    got = measured_phases(run["results"], sched)
    # why a phase took what it took: its CPU seconds and its wait for a CPU (the rest it was
    # blocked on a peer), the most of any process of its role, median over the steps
    cpu = measured_phases(run["results"], sched, "phase_cpu_s")
    runq = measured_phases(run["results"], sched, "phase_runq_s")
    # the failure-free runs' phases at the speed this run's CPUs ran identical work
    speed = work_speed(run, base.get("runs", [base]))
    ref = {n: v * speed for n, v in mean_phases(base.get("runs", [base]), COMMON).items()}
    rounds = round_samples_s(base.get("runs", [base]), speed)
    steps = max(1, len(step_times(run)))
    s = ctx.spec.servers
    delta_bytes = run["traffic_bytes"].get("parity_delta", 0) / steps / s
    compute_s, counts = compute_benches(ctx, sched)
    model, inputs = model_phases(
        sched, COMMON, ref, delta_bytes_per_server=delta_bytes, compute_s=compute_s,
        link_gbps=link_gbps, servers=s, workers=ctx.spec.workers,
        cpu_contention=contention(run), cores=os.cpu_count() or 1,
        round_samples=rounds, stat="median",
    )  # fmt: skip
    inputs.update(counts)
    inputs["work_speed"] = speed
    # The same phases in the mean over the steps (what the run's total adds up): the
    # failure-free runs' mean round, with its tails (a process descheduled mid-round). (ECRec's
    # servers also time their parity update on the design every cost_sample-th step: 0.065 ms
    # a time measured on this machine, 0.003 ms a step: not charged.)
    ref_mean = {
        n: v * speed for n, v in mean_phases(base.get("runs", [base]), COMMON, stat="mean").items()
    }
    model_mean, _ = model_phases(
        sched, COMMON, ref_mean, delta_bytes_per_server=delta_bytes, compute_s=compute_s,
        link_gbps=link_gbps, servers=s, workers=ctx.spec.workers,
        cpu_contention=contention(run), cores=os.cpu_count() or 1,
        round_samples=rounds, stat="mean",
    )  # fmt: skip
    step_meas = 1e3 * float(np.median(step_times(run)))
    table: dict[str, Any] = {}
    for p in sched.step:
        m, mod = got.get(p.name), model.get(p.name)
        points = None if m is None or mod is None else 100.0 * 1e3 * (mod - m) / step_meas
        table[p.name] = {
            "actor": p.actor,
            "background": p.background,
            "measured_ms": None if m is None else 1e3 * m,
            "modeled_ms": None if mod is None else 1e3 * mod,
            "error_pct": None if not m or mod is None else 100.0 * (mod / m - 1.0),
            # the error in points of the measured step (a small phase's large relative error)
            "error_points": points,
            "measured_cpu_ms": None if p.name not in cpu else 1e3 * cpu[p.name],
            "measured_runq_ms": None if p.name not in runq else 1e3 * runq[p.name],
        }
    # A rebuild (parity): the replacement's repair exchange, one blocking round per step of
    # its train.rebuild_ranges ranges (plus the rows it lacks), each over the link.
    repaired = sum(r.get("repair", 0.0) for r in per_step(run["results"], "server").values())
    rebuilds = sum(1 for e in run["events"] if e.get("rebuilding"))
    repair_bytes = run["traffic_bytes"].get("repair", 0)
    round_s = round_seconds(rounds, ctx.spec.workers, s - 1)  # the replacement, its S-1 peers
    repair_wire_s = repair_bytes / (link_gbps * 1e9) if link_gbps else 0.0
    repair_mod = rebuilds * cfg.rebuild_ranges * round_s + repair_wire_s
    # the memory design's own time for the parity's update (the servers' hwcost timing)
    upd = [
        v
        for r in run["results"].values()
        for v in (r.get("modeled") or {}).get("parity_update_ns", [])
    ]
    if upd and "parity_xor" in table:
        table["parity_xor"]["memory_model_ms"] = float(np.median(upd)) / 1e6
    added = [n for n in sched.foreground() if not COMMON.has(n)]
    step_ff = 1e3 * float(np.median(step_times(base)))
    # the failure-free step at this run's speed (as its phases in ``ref``), so that the step's
    # overhead is the added phases alone and a speed difference between the runs cancels
    step_ff_at_speed = step_ff * speed
    step_mod = step_ff_at_speed + sum(1e3 * model[n] for n in added)
    # per step in the mean: what the run's steps add to the failure-free runs' mean step
    added_mean_s = sum(model_mean[n] for n in added)
    for n in added:
        table[n]["modeled_mean_ms"] = 1e3 * model_mean[n]
    return {
        "phases": table,
        "added_mean_s": added_mean_s,
        "step_ms": {
            "measured": step_meas,
            "modeled": step_mod,
            "error_pct": 100.0 * (step_mod / step_meas - 1.0),
            "failure_free_measured": step_ff,
            "failure_free_at_speed": step_ff_at_speed,
            "overhead_pct": 100.0 * (step_mod / step_ff_at_speed - 1.0),
        },
        "added_phases": added,
        "repair_s": {
            "measured": repaired,
            "modeled": repair_mod,
            "rebuilds": rebuilds,
            # the model's parts: a blocking round per range, the repair's bytes on the link
            "ranges": cfg.rebuild_ranges,
            "round_s": round_s,
            "wire_s": repair_wire_s,
        },
        "inputs": inputs,
    }


def print_phases(row: dict[str, Any]) -> None:
    """The schedule's phases: measured beside modeled, ms per step (median)."""
    model = row["modeled"]

    def ms(v):
        return "-" if v is None else f"{v:.2f}"

    print("  phase (who)            measured ms   modeled ms   error")
    for name, p in row["phases"].items():
        err = "-"
        if p["error_pct"] is not None:
            err = f"{p['error_pct']:+.0f} % ({p['error_points']:+.1f} points)"
        who = f"{name} ({p['actor']})"
        print(f"  {who:22s} {ms(p['measured_ms']):>11s}  {ms(p['modeled_ms']):>11s}   {err}")
    st = model["step_ms"]
    print(
        f"  step                   {st['measured']:>11.2f}  {st['modeled']:>11.2f}   "
        f"{st['error_pct']:+.0f} % (failure-free {st['failure_free_measured']:.2f}, "
        f"{st['failure_free_at_speed']:.2f} at this run's speed)"
    )
    xor = row["phases"].get("parity_xor", {})
    if xor.get("memory_model_ms") is not None:
        print(f"  parity_xor on the memory design (hwcost): {xor['memory_model_ms']:.4f} ms")
    rep = model["repair_s"]
    if rep["rebuilds"]:
        print(
            f"  rebuild's repair rounds: measured {rep['measured']:.3f} s, "
            f"modeled {rep['modeled']:.3f} s"
        )
