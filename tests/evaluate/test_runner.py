"""Executors give the same results; an interrupted sweep resumes with every point once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from evaluate_fakes import FlakyPoint, ToyProvider, fake_point, toy_sweep

from nmp.errors import NmpError
from nmp.evaluate.executor import DaskExecutor, LocalExecutor, SerialExecutor
from nmp.evaluate.runner import run_sweep
from nmp.evaluate.store import read_jsonl
from nmp.evaluate.sweepcheck import validate_sweep

HERE = Path(__file__).parent


def _keyed():
    spec = toy_sweep()
    return spec, validate_sweep(spec, file="toy.toml", provider=ToyProvider())


def _results(run_dir: Path) -> dict[str, dict]:
    return {r["key"]: r["result"] for r in read_jsonl(run_dir / "results.jsonl")}


def test_executors_give_the_same_results(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    outs = {}
    for name, executor in (
        ("serial", SerialExecutor()),
        ("local", LocalExecutor(2)),
        ("dask", DaskExecutor(workers=2, processes=False)),
    ):
        summary = run_sweep(spec, keyed, tmp_path / name, point_fn=fake_point, executor=executor)
        assert summary["completed"] == summary["points"] == len(keyed)
        outs[name] = (_results(tmp_path / name), summary["rows"])
    assert outs["serial"][0] == outs["local"][0] == outs["dask"][0]
    assert len(outs["serial"][0]) == len(keyed)
    # the analysis does not depend on the order points finished in
    rows = [rows for _, rows in outs.values()]
    assert rows[0] == rows[1] == rows[2]


def test_dask_worker_processes_match_local(tmp_path: Path, monkeypatch) -> None:
    """A local Dask cluster of worker processes (as --dask-workers starts)."""
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(HERE), path) if p))
    spec, keyed = _keyed()
    run_sweep(spec, keyed, tmp_path / "dask", point_fn=fake_point, executor=DaskExecutor(workers=1))
    run_sweep(spec, keyed, tmp_path / "serial", point_fn=fake_point)
    assert _results(tmp_path / "dask") == _results(tmp_path / "serial")


def test_failed_points_are_rerun_by_resume_exactly_once(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    failing = {3, 10, 17}
    first = run_sweep(spec, keyed, run_dir, point_fn=FlakyPoint(failing), executor=LocalExecutor(2))
    assert len(first["failed"]) == len(failing)
    assert first["completed"] == len(keyed) - len(failing)
    assert len(read_jsonl(run_dir / "errors.jsonl")) == len(failing)
    with pytest.raises(NmpError, match="--resume"):
        run_sweep(spec, keyed, run_dir, point_fn=fake_point)
    second = run_sweep(spec, keyed, run_dir, point_fn=fake_point, resume=True)
    assert second["ran"] == len(failing) and second["reused"] == len(keyed) - len(failing)
    assert second["failed"] == []
    keys = [r["key"] for r in read_jsonl(run_dir / "results.jsonl")]
    assert Counter(keys) == Counter(k for _, k in keyed)  # every point exactly once
    assert {r["index"] for r in read_jsonl(run_dir / "results.jsonl")} == set(range(len(keyed)))
    third = run_sweep(spec, keyed, run_dir, point_fn=fake_point, resume=True)
    assert third["ran"] == 0 and third["completed"] == len(keyed)
    # the resumed run's results equal an uninterrupted one
    clean = tmp_path / "clean"
    run_sweep(spec, keyed, clean, point_fn=fake_point)
    assert _results(run_dir) == _results(clean)


def test_fail_fast_stops_early(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    summary = run_sweep(spec, keyed, tmp_path / "r", point_fn=FlakyPoint({2}), fail_fast=True)
    assert len(summary["failed"]) == 1
    assert summary["completed"] == 2  # serial: points 0 and 1 finished before point 2 failed


KILL_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {here!r})
from evaluate_fakes import ToyProvider, slow_point, toy_sweep
from nmp.evaluate.executor import LocalExecutor
from nmp.evaluate.runner import run_sweep
from nmp.evaluate.sweepcheck import validate_sweep
spec = toy_sweep()
keyed = validate_sweep(spec, provider=ToyProvider())
run_sweep(spec, keyed, Path({run_dir!r}), point_fn=slow_point, executor=LocalExecutor(2))
"""


def test_killed_sweep_resumes_with_every_point_once(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    script = KILL_SCRIPT.format(here=str(HERE), run_dir=str(run_dir))
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    results = run_dir / "results.jsonl"
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            if results.exists() and len(results.read_bytes().splitlines()) >= 5:
                break
            assert proc.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, as a crash would
        proc.wait()
    done_before = len(read_jsonl(results))
    assert 5 <= done_before < len(keyed)
    with open(results, "ab") as fh:  # and a line torn by the kill
        fh.write(b'{"key": "torn", "result": {"lookups')
    summary = run_sweep(spec, keyed, run_dir, point_fn=fake_point, resume=True)
    assert summary["reused"] == done_before
    assert summary["ran"] == len(keyed) - done_before
    keys = [r["key"] for r in read_jsonl(results)]
    assert Counter(keys) == Counter(k for _, k in keyed)
    env = json.loads((run_dir / "environment.json").read_text())
    assert [s["resume"] for s in env["sessions"]] == [False, True]


def test_dask_executor_on_a_running_scheduler(tmp_path: Path) -> None:
    """--scheduler ADDRESS: the executor connects to a cluster it did not start."""
    import logging

    from distributed import LocalCluster

    spec, keyed = _keyed()
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster:
        executor = DaskExecutor(cluster.scheduler_address)
        run_sweep(spec, keyed, tmp_path / "dask", point_fn=fake_point, executor=executor)
        assert executor.describe() == {"executor": "dask", "scheduler": cluster.scheduler_address}
    run_sweep(spec, keyed, tmp_path / "serial", point_fn=fake_point)
    assert _results(tmp_path / "dask") == _results(tmp_path / "serial")


def test_resume_of_a_missing_run_fails_and_writes_nothing(tmp_path: Path, capsys) -> None:
    from nmp.cli import main

    out = tmp_path / "reports"
    assert main(["evaluate", "--resume", "--run", "nope", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to resume" in err[0]
    assert main(["evaluate", "--resume", "--out", str(out)]) == 1
    assert "nothing to resume" in capsys.readouterr().err
    assert not out.exists()
