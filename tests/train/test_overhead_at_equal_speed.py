"""The modeled overhead of a ``--procs`` run is the strategy's added work over the failure-free
runs at the SAME machine speed (``work_speed``): a run whose CPUs happened to run faster or
slower is not modeled as cheaper or dearer than failure-free. No processes: records shaped as
the launcher's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from nmp.train.dist.phases import phase_model
from nmp.train.dist.runphases import run_phases
from nmp.train.schedule import COMMON
from nmp.train.strategies import REGISTRY

STEPS = 60
STEP_S = 0.01
BETWEEN_S = 0.001  # the failure-free runs' gap between steps
DENSE_CPU_S = 0.002  # the reference phase's CPU per step in the failure-free runs
BENCH = {
    "write_s": 0.02, "write_file_s": 0.005, "read_s": 0.004, "bench_bytes": 4000.0,
    "read_file_cpu_s": 0.001, "read_byte_cpu_s": 1e-6,
}  # fmt: skip


def _rec(walls, train_wall_s, dense_cpu_s, **server):
    n = len(walls)
    return {
        "results": {
            "worker:0": {
                "step_wall": walls,
                "group_s": {"0": 0.02},
                "phase_cpu_s": {f"0:{i}": {"dense": dense_cpu_s} for i in range(n)},
                "phase_s": {f"0:{i}": {"dense_grad": 0.004} for i in range(n)},
            },
            "server:0": {"group_s": {"0": 0.04}, **server},
        },
        "events": [],
        "traffic": {"sched_s": {}, "cpu_s": {"a": 1.0}},
        "traffic_bytes": {},
        "train_wall_s": train_wall_s,
        "ctx": None,
    }


def _ff():
    return _rec([(0, i, STEP_S) for i in range(STEPS)], STEPS * (STEP_S + BETWEEN_S), DENSE_CPU_S)


def _checkpoint_run(speed: float) -> dict:
    """Server 1 killed at step 33 (saves at 15, 30, 45): steps 30-32 re-executed; its
    reference phase took ``speed`` times the failure-free runs' CPU per step."""
    walls = [(0, i, STEP_S * speed) for i in range(33)]
    walls += [(1, i, STEP_S * speed) for i in range(30, STEPS)]
    run = _rec(
        walls,
        0.7,
        DENSE_CPU_S * speed,
        ckpt_writes=[(15, 0.01, 4000), (30, 0.01, 4000), (45, 0.01, 4000)],
        begin_s={"1": 0.02},
        loaded_bytes={"1": 8000},
        loaded_files={"1": 2},
    )
    run["events"] = [
        {"failed": "server:1", "gen": 1, "resume_step": 30, "committed_steps": 33,
         "regroup_wall_s": 0.05},
    ]  # fmt: skip
    return run


@pytest.mark.parametrize("speed", [0.75, 1.0, 1.3])
def test_a_run_that_adds_no_work_is_modeled_at_zero_overhead_at_any_speed(speed):
    """The failure-free schedule, no kill, its CPUs at ``speed``: its modeled seconds follow
    the speed, its modeled overhead is nil (the old model gave 100 (speed - 1) x the steps'
    share: -23 % at 0.75)."""
    walls = [(0, i, STEP_S * speed) for i in range(STEPS)]
    run = _rec(walls, 0.66, DENSE_CPU_S * speed)
    out = run_phases(
        run, {"runs": [_ff()]}, COMMON, added_step_s=0.0, repair_s=0.0, bench=BENCH,
        workers=2, world=5,
    )  # fmt: skip
    assert out["inputs"]["work_speed"] == pytest.approx(speed)
    assert out["total_s"]["modeled"] == pytest.approx(STEPS * (STEP_S * speed + BETWEEN_S))
    assert out["overhead_pct"]["modeled"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("speed", [0.75, 0.8, 1.0, 1.25])
def test_checkpoint_overhead_is_its_added_phases_over_failure_free_at_equal_speed(speed):
    """A checkpointing run that lost a server is never modeled faster than failure-free: its
    overhead is its saves, restore, regroup, re-executed steps and their gaps over the
    failure-free training at the run's speed, whatever that speed."""
    run = _checkpoint_run(speed)
    sched = REGISTRY.get("checkpoint").schedule
    out = run_phases(
        run, {"runs": [_ff()]}, sched, added_step_s=0.0, repair_s=0.0, bench=BENCH,
        workers=2, world=5,
    )  # fmt: skip
    ph = out["phases"]
    # the modeled seconds stay at the run's speed (what its phases are measured against)
    assert ph["steps"]["modeled_s"] == pytest.approx(STEPS * STEP_S * speed)
    assert ph["reexec"]["modeled_s"] == pytest.approx(3 * STEP_S * speed)
    added = sum(ph[n]["modeled_s"] for n in ("save", "restore", "regroup", "reexec"))
    added += 3 * BETWEEN_S  # the re-executed steps' gaps
    ff_at_speed = STEPS * (STEP_S * speed + BETWEEN_S)
    assert out["overhead_pct"]["modeled"] > 0.0
    assert out["overhead_pct"]["modeled"] == pytest.approx(100.0 * added / ff_at_speed)
    assert out["failure_free_at_speed_s"] == pytest.approx(ff_at_speed)
    # the measured run against the same failure-free time (like with like), and raw
    assert out["overhead_pct"]["measured_at_speed"] == pytest.approx(100 * (0.7 / ff_at_speed - 1))
    assert out["overhead_pct"]["measured"] == pytest.approx(100 * (0.7 / 0.66 - 1))


def test_the_modeled_step_runs_the_failure_free_step_at_the_runs_speed():
    """phase_model: the run's modeled step is the failure-free step at the run's speed plus the
    strategy's added phases, and the step's overhead without failures is the added phases
    over that same failure-free step: nil for checkpointing (it adds no phase to a step),
    whatever the speed."""
    sched = REGISTRY.get("checkpoint").schedule
    speed = 0.8
    run = _checkpoint_run(speed)
    run["ctx"] = SimpleNamespace(schedule=sched, spec=SimpleNamespace(servers=3, workers=2))
    base = {**_ff(), "runs": [_ff()]}
    cfg = SimpleNamespace(rebuild_ranges=1)

    def step_times(rec):
        return [s for _, _, s in rec["results"]["worker:0"]["step_wall"]]

    pm = phase_model(cfg, run, base, 1.0, step_times)
    st = pm["step_ms"]
    assert pm["inputs"]["work_speed"] == pytest.approx(speed)
    assert st["failure_free_measured"] == pytest.approx(1e3 * STEP_S)
    assert st["failure_free_at_speed"] == pytest.approx(1e3 * STEP_S * speed)
    assert st["modeled"] == pytest.approx(1e3 * STEP_S * speed)
    assert pm["added_phases"] == []
    assert st["overhead_pct"] == pytest.approx(0.0, abs=1e-9)
    assert np.isfinite(st["error_pct"])
