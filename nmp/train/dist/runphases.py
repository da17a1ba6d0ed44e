"""The run's phases beyond the steady step, measured beside modeled (``nmp train --procs``).

A strategy's schedule (:mod:`nmp.train.schedule`) declares them (``Schedule.run``): the saves
every interval, and per failure the regroup, the restore and the re-executed steps (ECRec's
repair rounds run inside the steps). Each name is a :class:`RunPhaseCost` with one measurement
from the run's processes and one model from what they did: the bytes the processes wrote and
read, the steps they executed, and times this run takes on this machine (the
failure-free runs' steps, a write and a read of a save's size, synced, in the run folder). The
steps themselves are one more phase (``steps``), modeled as the failure-free runs' mean step
plus the strategy's added phases in the mean (:func:`nmp.train.dist.phases.phase_model`),
and the time
between steps (``between``: counts published, the save check; and a failure's aborted step) as
the failure-free runs' own. The total is their sum: the modeled training time, against the
measured one in seconds; the modeled overhead is that total over the failure-free runs'
training at the same speed (their steps at ``work_speed``), the strategy's added work alone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmp.registry import Registry
from nmp.train.checkpoint import load_npz, save_npz
from nmp.train.dist.phases import REFERENCE_PHASE, reference_cpu_samples_s, work_speed


def storage_bench(folder: Path, nbytes: int, reps: int = 3) -> tuple[float, float]:
    """A microbenchmark the run takes: seconds to write (synced and renamed, as a save part
    is) and to read back a file of ``nbytes`` in ``folder``, median of ``reps``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.npz"
    data = np.zeros(max(1, int(nbytes) // 4), np.float32)
    writes, reads = [], []
    for _ in range(reps):
        writes.append(save_npz(path, records=data))
        t0 = time.perf_counter()
        load_npz(path)
        reads.append(time.perf_counter() - t0)
    path.unlink(missing_ok=True)
    return float(np.median(writes)), float(np.median(reads))


def file_write_bench(folder: Path, reps: int = 5) -> float:
    """A microbenchmark: seconds to write a save file of one record (created, synced,
    renamed): what a save part costs whatever its size (CPR's partial saves are small, and
    worker 0 writes an empty part into each), median of ``reps``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench-small.npz"
    got = [save_npz(path, records=np.zeros(1, np.float32)) for _ in range(reps)]
    path.unlink(missing_ok=True)
    return float(np.median(got))


def read_cpu_bench(folder: Path, nbytes: int, reps: int = 5) -> tuple[float, float]:
    """A microbenchmark: the CPU seconds of reading a save file back (the page cache's copy,
    as a restore reads a save the run just wrote): per file (a file of one record) and per
    byte beyond it (a file of ``nbytes``); thread CPU time, so the machine's load does not
    enter (the restore's model stretches it by the run's own contention), median of
    ``reps``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench-read.npz"

    def cpu_s(size: int) -> float:
        save_npz(path, records=np.zeros(max(1, size // 4), np.float32))
        got = []
        for _ in range(reps):
            c0 = time.thread_time()
            load_npz(path)
            got.append(time.thread_time() - c0)
        return float(np.median(got))

    per_file = cpu_s(4)
    big = max(int(nbytes), 1 << 16)
    per_byte = max(0.0, cpu_s(big) - per_file) / big
    path.unlink(missing_ok=True)
    return per_file, per_byte


# -- what the run did ------------------------------------------------------------------------


def _walls(rec: dict) -> list[tuple[int, int, float]]:
    return rec["results"]["worker:0"].get("step_wall", [])


def _failures(rec: dict) -> list[dict[str, Any]]:
    return [e for e in rec["events"] if "failed" in e]


def reexecuted(rec: dict) -> set[tuple[int, int]]:
    """(generation, step) of the committed steps a rollback executed again."""
    out = set()
    for ev in _failures(rec):
        out |= {(ev["gen"], i) for i in range(ev["resume_step"], ev["committed_steps"])}
    return out


def saves(rec: dict) -> dict[int, dict[str, float]]:
    """Per save (its step): the slowest writer's seconds (the next step waits for it) and the
    largest part's bytes."""
    out: dict[int, dict[str, float]] = {}
    for res in rec["results"].values():
        for step, secs, nbytes in res.get("ckpt_writes") or []:
            row = out.setdefault(int(step), {"s": 0.0, "bytes": 0.0})
            row["s"] = max(row["s"], float(secs))
            row["bytes"] = max(row["bytes"], float(nbytes))
    return out


def _restore_s(rec: dict, gen: int) -> float:
    return max(float(r.get("begin_s", {}).get(str(gen), 0.0)) for r in rec["results"].values())


def _restorers(rec: dict, gen: int) -> list[tuple[float, float, float]]:
    """(bytes, files, store round trips) of each process's restore in generation ``gen``."""
    out = []
    for r in rec["results"].values():
        nbytes = float(r.get("loaded_bytes", {}).get(str(gen), 0))
        files = float(r.get("loaded_files", {}).get(str(gen), 1 if nbytes else 0))
        ops = float(r.get("store_ops", {}).get(str(gen), 0))
        out.append((nbytes, files, ops))
    return out


def store_rtt_s(rec: dict) -> float:
    """The run's median round trip to the rendezvous store (every process times its vote's
    first store operation in every step): its latency under the load at the time."""
    got = [t for r in rec["results"].values() for t in r.get("store_rtt_s") or []]
    return float(np.median(got)) if got else 0.0


# -- measured, per name ----------------------------------------------------------------------


def _m_steps(rec, ctx) -> float:
    redo = reexecuted(rec)
    return sum(s for g, i, s in _walls(rec) if (g, i) not in redo)


def _m_reexec(rec, ctx) -> float:
    redo = reexecuted(rec)
    return sum(s for g, i, s in _walls(rec) if (g, i) in redo)


def _m_save(rec, ctx) -> float:
    return sum(v["s"] for v in saves(rec).values())


def _m_restore(rec, ctx) -> float:
    return sum(_restore_s(rec, ev["gen"]) for ev in _failures(rec))


def _m_regroup(rec, ctx) -> float:
    return sum(
        max(0.0, ev.get("regroup_wall_s", 0.0) - _restore_s(rec, ev["gen"]))
        for ev in _failures(rec)
    )


def _m_repair(rec, ctx) -> float:
    from nmp.train.dist.phases import per_step

    return sum(r.get("repair", 0.0) for r in per_step(rec["results"], "server").values())


# -- modeled, per name -----------------------------------------------------------------------


def _d_steps(rec, inp) -> float:
    return len({i for _, i, _ in _walls(rec)}) * inp["step_s"] + inp["repair_s"]


def _d_reexec(rec, inp) -> float:
    return len(reexecuted(rec)) * inp["step_s"]


def _d_save(rec, inp) -> float:
    """Every save's slowest part: a file's fixed cost (``write_file_s``: one record written,
    synced and renamed) plus the largest part's bytes at the measured write beyond it (the
    benchmark's file of ``bench_bytes``), and the writer's two round trips to the store (the
    save counted complete) at the run's store latency."""
    fixed = min(inp.get("write_file_s", 0.0), inp["write_s"])
    per_byte = (inp["write_s"] - fixed) / inp["bench_bytes"]
    trips = 2.0 * inp.get("store_rtt_s", 0.0)
    return sum(fixed + v["bytes"] * per_byte + trips for v in saves(rec).values())


def _d_restore(rec, inp) -> float:
    """Each restore: the processes read their save files at once. A process's reads cost the
    microbenchmark's CPU per file and per byte; they run on ``cores`` CPUs, so the restore
    takes the longest process's reads or all reads spread over the cores, whichever is
    longer (chosen: the two bounds of work on a few CPUs), stretched by the run's CPU
    contention (every burst in the run waits for a CPU that long); plus the process's round
    trips to the store (which save is complete and full) at the run's store latency."""
    total = 0.0
    for ev in _failures(rec):
        got = _restorers(rec, ev["gen"])
        cpu = [f * inp["read_file_cpu_s"] + b * inp["read_byte_cpu_s"] for b, f, _ in got]
        reads = max(max(cpu, default=0.0), sum(cpu) / inp["cores"])
        trips = max((ops for _, _, ops in got), default=0.0) * inp["store_rtt_s"]
        total += reads * (1.0 + inp["cpu_contention"]) + trips
    return total


def _d_regroup(rec, inp) -> float:
    return len(_failures(rec)) * inp["regroup_s"]


def _d_repair(rec, inp) -> float:
    return inp["repair_s"]


@dataclass(frozen=True)
class RunPhaseCost:
    """One run phase's two readings: ``measured`` from the run's records, ``modeled`` from
    what the processes did and the run's own microbenchmarks (``inp``)."""

    name: str
    measured: Callable[[dict, Any], float]
    modeled: Callable[[dict, dict], float]
    description: str = ""


RUN_PHASE_COSTS: Registry[RunPhaseCost] = Registry("run phase cost")
for _cost in (
    RunPhaseCost("steps", _m_steps, _d_steps, "the training steps executed"),
    RunPhaseCost("reexec", _m_reexec, _d_reexec, "steps executed again after a rollback"),
    RunPhaseCost("save", _m_save, _d_save, "checkpoint saves"),
    RunPhaseCost("restore", _m_restore, _d_restore, "a replacement loading its rows"),
    RunPhaseCost("regroup", _m_regroup, _d_regroup, "the processes forming a new group"),
    RunPhaseCost("repair", _m_repair, _d_repair, "ECRec's parity repair"),
):
    RUN_PHASE_COSTS.register(_cost)


def regroup_model_s(base: dict, workers: int, world: int) -> float:
    """A failure's regroup on this machine, from what the processes do: the launcher sees the
    death (it polls every 2 ms) and publishes a generation, the spare sees its role (it polls
    every 5 ms): half a period each on average; every process then joins the generation, a
    barrier of all ``world`` processes: one blocking round among ``world - 1`` peers
    (:func:`nmp.train.dist.phases.round_seconds`, from the failure-free runs' all-gather);
    and the group forms, as long as it took the failure-free runs' last process to arrive (it
    waits for nobody). Chosen after the failure-free runs' median process's group formation
    (which includes waiting for the others' start) overestimated the regroup 3-8x."""
    from nmp.train.dist.phases import round_samples_s, round_seconds

    runs = base.get("runs", [base])
    formed = [
        min(float(r.get("group_s", {}).get("0", 0.0)) for r in b["results"].values()) for b in runs
    ]
    barrier = round_seconds(round_samples_s(runs), workers, world - 1)
    return 0.001 + 0.0025 + barrier + float(np.median(formed))


def run_phases(
    run: dict,
    base: dict,
    schedule,
    *,
    added_step_s: float,
    repair_s: float,
    bench: dict[str, float],
    workers: int,
    world: int,
) -> dict[str, Any]:
    """Every run phase of ``schedule`` (and the steps, and the time between them) measured in
    ``run`` beside modeled; seconds, and the error in points of the failure-free training."""
    ctx = run.get("ctx")
    bases = base.get("runs", [base])
    ff_steps = [s for b in bases for _, _, s in _walls(b)]
    ff_wall = float(np.mean([b["train_wall_s"] for b in bases]))
    n_ff = float(np.mean([len(_walls(b)) for b in bases]))
    # the failure-free runs' mean step (the tails are this machine's) at the speed this run's
    # CPUs ran identical work (work_speed), plus the strategy's added phases in the mean
    # (nmp.train.dist.phases.phase_model)
    speed = work_speed(run, bases)
    step_s = float(np.mean(ff_steps)) * speed + added_step_s
    between_s = max(0.0, ff_wall - n_ff * float(np.mean(ff_steps))) / n_ff
    # The failure-free training at the same speed: their steps at work_speed, their gaps as
    # measured (as the modeled gaps are). The modeled overhead is taken against it, so that a
    # speed difference between the runs cancels and the overhead is the strategy's added work
    # (against the measured failure-free time, a run whose reference phase ran faster was
    # modeled as faster than failure-free: checkpointing with a killed server was seen at
    # -16.7 % in nmp validate, and the test's run at 0.75x speed gives -4.1 %).
    ff_at_speed = n_ff * (float(np.mean(ff_steps)) * speed + between_s)
    from nmp.train.dist.phases import contention

    inp = {
        "step_s": step_s,
        "work_speed": speed,
        "repair_s": repair_s,
        "regroup_s": regroup_model_s(base, workers, world),
        "between_step_s": between_s,
        # the run's own: its CPU contention, its store latency, this machine's cores (stated)
        "cpu_contention": contention(run),
        "store_rtt_s": store_rtt_s(run),
        "cores": float(os.cpu_count() or 1),
        **bench,
    }
    names = ["steps", *(p.name for p in schedule.run if p.when != "per_step")]
    table: dict[str, Any] = {}
    for name in names:
        cost = RUN_PHASE_COSTS.get(name)
        table[name] = {"measured_s": cost.measured(run, ctx), "modeled_s": cost.modeled(run, inp)}
    for p in schedule.run:
        if p.when == "per_step":  # inside the steps: shown, not added again
            table[p.name] = {
                "measured_s": RUN_PHASE_COSTS.get(p.name).measured(run, ctx),
                "modeled_s": RUN_PHASE_COSTS.get(p.name).modeled(run, inp),
                "inside": "steps",
            }
    executed = len(_walls(run))
    summed = sum(v["measured_s"] for v in table.values() if "inside" not in v)
    table["between"] = {
        "measured_s": max(0.0, run["train_wall_s"] - summed),
        "modeled_s": executed * between_s,
    }
    for v in table.values():
        m, d = v["measured_s"], v["modeled_s"]
        v["error_pct"] = 100.0 * (d / m - 1.0) if m > 0 else None
        v["error_points"] = 100.0 * (d - m) / ff_wall
    total_mod = sum(v["modeled_s"] for v in table.values() if "inside" not in v)
    return {
        "phases": table,
        "total_s": {"measured": run["train_wall_s"], "modeled": total_mod},
        "failure_free_train_wall_s": ff_wall,
        "failure_free_at_speed_s": ff_at_speed,
        "overhead_pct": {
            "measured": 100.0 * (run["train_wall_s"] / ff_wall - 1.0),
            # the measured run against the same failure-free time as the model: the two
            # overheads compare like with like (their difference is the seconds' error)
            "measured_at_speed": 100.0 * (run["train_wall_s"] / ff_at_speed - 1.0),
            "modeled": 100.0 * (total_mod / ff_at_speed - 1.0),
        },
        "inputs": inp,
        # the load the run met (why one run's wall time moves: see docs/training.md)
        "machine": machine_share(run),
        "failure_free_machine": [machine_share(b) for b in bases],
    }


def reference_cpu_s(rec: dict) -> float:
    """CPU seconds the run's processes spent in the reference phase, in every committed step."""
    return sum(reference_cpu_samples_s(rec))


def cpu_overhead(run: dict, base: dict) -> dict[str, Any] | None:
    """The overhead in CPU seconds of the run's processes (every process's time in training,
    a killed one's up to its last step): the machine's other load moves wall time, far less
    the work done. None when no process reported. ``work_overhead_pct``: the same per CPU
    second of the reference phase (:data:`REFERENCE_PHASE`), so that a machine whose CPUs run
    slower during one run (the other load shares caches and cores) does not count as work
    the strategy added (per step executed: re-executed steps run the reference phase too, so
    a rollback's re-execution is not in it); ``added_phases_s``: the CPU seconds of the run's
    phases that the failure-free runs do not have (CPR's ``track``, ECRec's
    ``parity_delta``...) and of the saves, i.e. the work the schedule adds inside the steps and
    between them."""
    bases = base.get("runs", [base])
    got = [sum((b["traffic"].get("cpu_s") or {}).values()) for b in bases]
    mine = sum((run["traffic"].get("cpu_s") or {}).values())
    if not mine or not all(got):
        return None
    ff = float(np.mean(got))
    out = {
        "cpu_s": mine,
        "failure_free_cpu_s": ff,
        "failure_free_cpu_s_each": got,
        "overhead_pct": 100.0 * (mine / ff - 1.0),
        "work_overhead_pct": None,
    }
    refs = [reference_cpu_s(b) for b in bases]
    ref = reference_cpu_s(run)
    if ref and all(refs):
        per_ref = float(np.mean([g / r for g, r in zip(got, refs, strict=True)]))
        out["work_overhead_pct"] = 100.0 * ((mine / ref) / per_ref - 1.0)
        out["reference_phase"] = REFERENCE_PHASE
    common = {n for b in bases for n in _phase_cpu(b)}
    added = {n: v for n, v in _phase_cpu(run).items() if n not in common}
    added["save"] = sum(
        (r.get("main_cpu_s") or {}).get("save", 0.0) for r in run.get("results", {}).values()
    )
    out["added_phases_s"] = added
    return out


def _phase_cpu(rec: dict) -> dict[str, float]:
    """CPU seconds per phase name, summed over the run's processes and committed steps."""
    out: dict[str, float] = {}
    for res in rec.get("results", {}).values():
        for phases in (res.get("phase_cpu_s") or {}).values():
            for name, s in phases.items():
                out[name] = out.get(name, 0.0) + s
    return out


def machine_share(rec: dict) -> dict[str, Any] | None:
    """Who used the machine's CPUs during the run's training: this run's processes and
    everything else (cores on average, from the launcher's ``/proc/stat`` reading and the
    processes' CPU seconds), and the run's CPU contention. None when not recorded."""
    from nmp.train.dist.phases import contention

    busy, wall = rec.get("machine_busy_s"), rec.get("train_wall_s")
    if not busy or not wall:
        return None
    ours = sum((rec.get("traffic", {}).get("cpu_s") or {}).values())
    return {
        "cpus": rec.get("machine_cpus"),
        "ours_cores": ours / wall,
        "others_cores": max(0.0, busy - ours) / wall,
        "cpu_contention": contention(rec),
    }


def bench_for(folder: Path, runs: list[dict]) -> dict[str, float]:
    """The storage microbenchmark at the size of the largest save part the runs wrote (one
    record when none was written)."""
    nbytes = max((v["bytes"] for r in runs for v in saves(r).values()), default=0.0)
    nbytes = nbytes or 4.0 * runs[0]["ctx"].width
    write_s, read_s = storage_bench(folder / "bench", int(nbytes))
    per_file, per_byte = read_cpu_bench(folder / "bench", int(nbytes))
    return {
        "write_s": write_s,
        "write_file_s": file_write_bench(folder / "bench"),
        "read_s": read_s,
        "bench_bytes": float(nbytes),
        "read_file_cpu_s": per_file,
        "read_byte_cpu_s": per_byte,
    }


def repeats(pairs: list[dict], runs: list[dict], modeled) -> dict[str, Any]:
    """Each strategy run against the failure-free runs on either side of it (``pairs[i]``,
    merged): measured (wall and CPU seconds) and modeled (``modeled(pair, run)``) overhead,
    per run phase; their mean and spread."""
    per = []
    for i, run in enumerate(runs):
        pair = pairs[i]
        model = modeled(pair, run)
        rp = model["run_phases"]
        cpu = cpu_overhead(run, pair)
        per.append(
            {
                "overhead_pct": rp["overhead_pct"]["measured"],
                "modeled_overhead_pct": rp["overhead_pct"]["modeled"],
                "cpu_overhead_pct": None if cpu is None else cpu["overhead_pct"],
                "work_overhead_pct": None if cpu is None else cpu["work_overhead_pct"],
                "failure_free_repeat_pct": 100.0
                * (pair["runs"][1]["train_wall_s"] / pair["runs"][0]["train_wall_s"] - 1.0),
                "run_phases_s": {
                    n: [v["measured_s"], v["modeled_s"]] for n, v in rp["phases"].items()
                },
            }
        )

    def spread(key: str) -> dict[str, float] | None:
        vals = [p[key] for p in per if p[key] is not None]
        if not vals:
            return None
        return {
            "mean": float(np.mean(vals)),
            "min": float(np.min(vals)),
            "max": float(np.max(vals)),
            "sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
        }

    keys = (
        "overhead_pct",
        "modeled_overhead_pct",
        "cpu_overhead_pct",
        "work_overhead_pct",
        "failure_free_repeat_pct",
    )
    return {"runs": per, **{k: spread(k) for k in keys}}


def print_run_phases(rp: dict[str, Any], cpu: dict[str, Any] | None) -> None:
    print("  run phase              measured s    modeled s   error")
    for name, v in rp["phases"].items():
        err = "-" if v["error_pct"] is None else f"{v['error_pct']:+.0f} %"
        note = " (inside steps)" if "inside" in v else ""
        print(
            f"  {name + note:22s} {v['measured_s']:>11.3f}  {v['modeled_s']:>11.3f}   {err} "
            f"({v['error_points']:+.1f} points)"
        )
    t, o = rp["total_s"], rp["overhead_pct"]
    print(
        f"  training               {t['measured']:>11.3f}  {t['modeled']:>11.3f}   overhead "
        f"measured {o['measured']:+.1f} %, modeled {o['modeled']:+.1f} %"
    )
    if cpu is not None:
        print(
            f"  CPU seconds of the processes: {cpu['cpu_s']:.1f} vs failure-free "
            f"{cpu['failure_free_cpu_s']:.1f}: overhead {cpu['overhead_pct']:+.1f} %"
        )
        if cpu.get("work_overhead_pct") is not None:
            added = ", ".join(f"{n} {v:.2f} s" for n, v in cpu["added_phases_s"].items())
            print(
                f"  per CPU second of the {cpu['reference_phase']} phase (the same work in "
                f"every run): overhead {cpu['work_overhead_pct']:+.1f} %; the strategy's own "
                f"phases: {added}"
            )
    speed = rp["inputs"].get("work_speed", 1.0)
    print(
        f"  the {REFERENCE_PHASE} phase took {speed:.3f}x the failure-free runs' CPU per step: "
        "the model runs their steps at this run's speed, and its overhead is against the "
        f"failure-free training at that speed ({rp['failure_free_at_speed_s']:.3f} s)"
    )
    m = rp.get("machine")
    if m is not None:
        print(
            f"  the machine's {m['cpus']} CPUs during training: this run {m['ours_cores']:.2f}, "
            f"other load {m['others_cores']:.2f} cores; CPU contention {m['cpu_contention']:.2f} "
            "s waiting per s on a CPU"
        )
        for f in rp.get("failure_free_machine") or []:
            if f is not None:
                print(
                    f"    failure-free run: {f['ours_cores']:.2f}, other load "
                    f"{f['others_cores']:.2f} cores; contention {f['cpu_contention']:.2f}"
                )
