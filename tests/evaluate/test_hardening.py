"""Issue 30 in the sweep machinery: results.jsonl holds the same bytes however its points ran,
no point runs forever, a full disk tears no line, and checking a sweep's points is fast."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import time
from pathlib import Path

import pytest
from evaluate_fakes import FlakyPoint, ToyProvider, fake_point, toy_sweep

from nmp.errors import NmpError
from nmp.evaluate import executor as executor_mod
from nmp.evaluate import store
from nmp.evaluate.executor import LocalExecutor, SerialExecutor
from nmp.evaluate.runner import run_sweep
from nmp.evaluate.sweep import Point
from nmp.evaluate.sweepcheck import point_key, resolve_point, validate_sweep


def _keyed():
    spec = toy_sweep()
    return spec, validate_sweep(spec, file="toy.toml", provider=ToyProvider())


def jittered_point(point: Point) -> dict:
    """fake_point, after a pause that depends on the point: in a pool, points finish in
    another order than they were planned."""
    h = int(hashlib.sha256(str(point.index).encode()).hexdigest()[:4], 16)
    time.sleep((h % 7) * 0.004)
    return fake_point(point)


def test_results_are_the_same_bytes_serial_parallel_and_resumed(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    serial = tmp_path / "serial"
    run_sweep(spec, keyed, serial, point_fn=fake_point, executor=SerialExecutor())
    expected = (serial / "results.jsonl").read_bytes()
    assert expected.count(b"\n") == len({k for _, k in keyed})
    for name in ("pool-1", "pool-2"):  # two runs of a pool: points finish in any order
        run_sweep(spec, keyed, tmp_path / name, point_fn=jittered_point, executor=LocalExecutor(2))
        assert (tmp_path / name / "results.jsonl").read_bytes() == expected, name
    # interrupted twice (failed points), resumed twice, in a pool
    resumed = tmp_path / "resumed"
    run_sweep(spec, keyed, resumed, point_fn=FlakyPoint({1, 4, 9}), executor=LocalExecutor(2))
    run_sweep(spec, keyed, resumed, point_fn=FlakyPoint({9}), resume=True)
    assert (resumed / "results.jsonl").read_bytes() != expected  # point 9 is missing
    run_sweep(spec, keyed, resumed, point_fn=jittered_point, executor=LocalExecutor(2), resume=True)
    assert (resumed / "results.jsonl").read_bytes() == expected


def hang_at_3(point: Point) -> dict:
    """Point 3 never returns (a Python loop: the time limit's signal stops it)."""
    while point.index == 3:
        time.sleep(0.01)
    return fake_point(point)


def hang_deaf_at_3(point: Point) -> dict:
    """Point 3 never returns and never sees the time limit (as a compiled loop that does not
    return to Python would): only killing the worker stops it."""
    if point.index == 3:
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            time.sleep(0.01)
    return fake_point(point)


@pytest.mark.parametrize(
    ("executor", "point_fn"),
    [
        (SerialExecutor(time_limit_s=0.5), hang_at_3),
        (LocalExecutor(2, time_limit_s=0.5), hang_at_3),
        (LocalExecutor(2, time_limit_s=0.5), hang_deaf_at_3),
    ],
    ids=["serial", "pool", "pool-killed"],
)
def test_a_point_past_its_time_limit_fails_and_the_sweep_goes_on(
    executor, point_fn, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(executor_mod, "KILL_GRACE_S", 0.5)
    spec, keyed = _keyed()
    t0 = time.monotonic()
    summary = run_sweep(spec, keyed, tmp_path / "r", point_fn=point_fn, executor=executor)
    assert time.monotonic() - t0 < 60
    assert [f["key"] for f in summary["failed"]] == [keyed[3][1]]
    error = summary["failed"][0]["error"]
    assert "time limit of 0.5 s" in error and "PointTimeout" in error
    assert ("(killed)" in error) == (point_fn is hang_deaf_at_3)
    assert summary["completed"] == summary["points"] - 1
    # the other points are right: the same bytes as a clean run without the point
    clean = run_sweep(spec, keyed, tmp_path / "clean", point_fn=FlakyPoint({3}))
    assert clean["completed"] == summary["completed"]
    assert (tmp_path / "r" / "results.jsonl").read_bytes() == (
        tmp_path / "clean" / "results.jsonl"
    ).read_bytes()


def test_a_full_disk_leaves_no_torn_line(tmp_path: Path, monkeypatch) -> None:
    """ENOSPC part-way through a line: the file is cut back to the lines before it, and the
    error is one NmpError naming the file."""
    path = tmp_path / "results.jsonl"
    log = store.JsonlLog(path)
    log.append({"key": "a", "result": 1})
    real_write = os.write

    def half_then_full(fd: int, data) -> int:
        if len(data) > 8:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store.os, "write", half_then_full)
    with pytest.raises(NmpError, match="No space left on device") as err:
        log.append({"key": "b", "result": 2})
    assert err.value.file == str(path)
    monkeypatch.setattr(store.os, "write", real_write)
    log.close()
    assert path.read_bytes() == b'{"key":"a","result":1}\n'
    assert [r["key"] for r in store.read_jsonl(path)] == ["a"]


def test_point_keys_by_parts_equal_the_full_resolution() -> None:
    """The key validate_sweep composes from cached parts hashes the same bytes as
    point_key(resolve_point(...)) on the real presets (a run's keys must not change)."""
    from nmp.config import load_toml
    from nmp.evaluate.sweep import parse_sweep
    from nmp.evaluate.sweepcheck import PresetProvider

    root = Path(__file__).resolve().parents[2]
    path = root / "workloads" / "sweeps" / "default.toml"
    spec = parse_sweep(load_toml(path), file=str(path))
    calls = []
    keyed = validate_sweep(spec, file=str(path), progress=lambda d, t: calls.append((d, t)))
    provider = PresetProvider()
    for point, key in keyed[:: max(1, len(keyed) // 12)]:
        assert key == point_key(resolve_point(point, provider)), point.label()
    assert calls[0] == (0, len(keyed)) and calls[-1] == (len(keyed), len(keyed))


SMALL = (
    'name = "small"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
    'baseline = "host-cpu"\n[axes]\n"workload.batch" = [2, 4]\n'
)


def _evaluate(argv: list[str], capsys) -> tuple[int, list[str]]:
    from nmp.cli import main

    capsys.readouterr()
    code = main(argv)
    return code, [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("nmp: ")]


def test_a_full_disk_in_nmp_evaluate_is_one_line_and_resume_completes(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """The real sweep machinery (fake point numbers): the disk fills while the second result
    is written; the run stops with one line naming results.jsonl, the file holds the first
    line whole, and --resume completes the run with the bytes of an uninterrupted one."""
    from nmp.evaluate import runner

    monkeypatch.setattr(runner, "point_fn_default", fake_point)
    (tmp_path / "small.toml").write_text(SMALL)
    real_write = os.write
    results_written = []

    def full_after_one(fd: int, data) -> int:
        if b'"result":{' in bytes(data):
            results_written.append(1)
            if len(results_written) == 2:
                real_write(fd, bytes(data[:10]))  # part of the line, then the disk is full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(store.os, "write", full_after_one)
    base = ["evaluate", str(tmp_path / "small.toml"), "--out", str(tmp_path / "r"), "--jobs", "1"]
    code, lines = _evaluate([*base, "--run", "x"], capsys)
    assert code == 1 and len(lines) == 1, lines
    assert "results.jsonl" in lines[0] and "No space left on device" in lines[0]
    results = tmp_path / "r" / "x" / "results.jsonl"
    assert results.read_bytes().count(b"\n") == 1 and results.read_bytes().endswith(b"\n")
    monkeypatch.setattr(store.os, "write", real_write)
    assert _evaluate([*base, "--run", "x", "--resume"], capsys)[0] == 0
    assert _evaluate([*base, "--run", "clean"], capsys)[0] == 0
    assert results.read_bytes() == (tmp_path / "r" / "clean" / "results.jsonl").read_bytes()


def test_a_point_past_the_time_limit_in_nmp_evaluate_is_named(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from nmp.evaluate import runner

    def hang_on_recross_at_4(point: Point) -> dict:
        while point.design == "recross" and point.overrides.get("workload.batch") == 4:
            time.sleep(0.01)
        return fake_point(point)

    monkeypatch.setattr(runner, "point_fn_default", hang_on_recross_at_4)
    (tmp_path / "small.toml").write_text(SMALL)
    argv = ["evaluate", str(tmp_path / "small.toml"), "--out", str(tmp_path / "r"), "--jobs", "1"]
    code, lines = _evaluate([*argv, "--point-time-limit", "0.5"], capsys)
    assert code == 1 and len(lines) == 1, lines
    assert "1 of 4 points failed" in lines[0] and "recross [batch=4]" in lines[0], lines[0]
    assert "time limit of 0.5 s" in lines[0] and "--point-time-limit" in lines[0]


def test_the_cli_default_time_limit_is_the_executors() -> None:
    from nmp.evaluate.cli import DEFAULT_POINT_TIME_LIMIT_S

    assert DEFAULT_POINT_TIME_LIMIT_S == executor_mod.DEFAULT_TIME_LIMIT_S
    assert executor_mod.make_executor(jobs=1).time_limit_s == DEFAULT_POINT_TIME_LIMIT_S


def test_resume_refuses_another_sweep_and_errors_keep_the_unfixed(tmp_path: Path) -> None:
    """Issue 42: `evaluate --resume` of a folder with another sweep overwrote its sweep.toml
    and mixed old and new lines; errors.jsonl kept failures that a resume had fixed."""
    import json

    spec, keyed = _keyed()
    run = tmp_path / "r"
    run_sweep(spec, keyed, run, point_fn=FlakyPoint({1, 4}), sweep_text="# the first\n")
    failed = [json.loads(ln)["key"] for ln in (run / "errors.jsonl").read_text().splitlines()]
    assert len(failed) == 2
    run_sweep(spec, keyed, run, point_fn=FlakyPoint({4}), resume=True)
    still = [json.loads(ln)["key"] for ln in (run / "errors.jsonl").read_text().splitlines()]
    assert len(still) == 1 and still[0] in failed  # point 1 ran to a result: dropped
    results = (run / "results.jsonl").read_bytes()
    other = [kp for kp in keyed if kp[1] != keyed[0][1]]  # a plan without the first point
    with pytest.raises(NmpError, match="holds sweep"):
        run_sweep(spec, other, run, point_fn=fake_point, resume=True, sweep_text="# another\n")
    assert (run / "sweep.toml").read_text() == "# the first\n"
    assert (run / "results.jsonl").read_bytes() == results


def test_a_time_limit_inside_a_c_callback_still_stops_the_point(capsys) -> None:
    """Issue 42: `--point-time-limit 0.01` printed "Exception ignored on calling ctypes callback
    function" (the signal came while numba's compiler ran a ctypes callback) and the point ran
    on unlimited; the timer now repeats until the point stops, and nothing is printed."""
    import ctypes

    callback = ctypes.CFUNCTYPE(None)(lambda: time.sleep(0.3))
    t0 = time.monotonic()
    with pytest.raises(executor_mod.PointTimeout), executor_mod._time_limit(0.05):
        callback()  # the first expiry comes inside the callback and is swallowed there
        while True:
            time.sleep(0.01)
    assert time.monotonic() - t0 < 0.3 + 5 * executor_mod.TIME_LIMIT_REPEAT_S
    assert "Exception ignored" not in capsys.readouterr().err


# Many points under a limit of a microsecond: the timer expires at every step, the setting of
# the timer and its removal included
TINY_LIMIT_SCRIPT = """
import signal
from nmp.evaluate.executor import evaluate_one
for i in range(300):
    out = evaluate_one(lambda p: {"x": sum(range(50))}, None, 1e-6)
assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), signal.getitimer(signal.ITIMER_REAL)
assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
print("done")
"""


def test_a_time_limit_of_a_microsecond_never_outlives_its_point() -> None:
    """`nmp evaluate --point-time-limit 0.000001 -j 1` ended with "Alarm clock" (exit 142):
    an expiry raised while the timer was being removed left it repeating under the default
    handler. Points now fail as timed out, and no timer or handler is left behind."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", TINY_LIMIT_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip() == "done"


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda r: r.update(result="oops"), "result"),
        (lambda r: r.pop("result"), "result"),
        (lambda r: r.update(result={}), "result.arch"),
        (lambda r: r["result"].update(lookups_per_s="fast"), "result.lookups_per_s"),
        (lambda r: r["result"].update(lookups_per_s=float("nan")), "result.lookups_per_s"),
        (lambda r: r["result"].update(latency_ns=float("inf")), "result.latency_ns"),
        (lambda r: r["result"].update(area_mm2=-1.0), "result.area_mm2"),
        (lambda r: r["result"].update(energy_pj_per_lookup=True), "result.energy_pj_per_lookup"),
    ],
)
def test_resume_refuses_a_saved_point_no_run_wrote(tmp_path: Path, edit, key) -> None:
    """A results.jsonl edited by hand made `--resume` end in an internal error (KeyError,
    TypeError) or, with NaN or Infinity, rank the point in its reports (exit 0). The saved
    point is now refused, naming the file, its line and the key, before anything runs."""
    import json

    spec, keyed = _keyed()
    run = tmp_path / "r"
    run_sweep(spec, keyed, run, point_fn=fake_point)
    path = run / "results.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    edit(record)
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    before = path.read_bytes()
    with pytest.raises(NmpError) as err:
        run_sweep(spec, keyed, run, point_fn=fake_point, resume=True)
    assert (err.value.file, err.value.line, err.value.key) == (str(path), 2, key)
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder"])
def test_resume_of_a_plan_that_is_no_file_is_refused_at_once(tmp_path: Path, kind) -> None:
    """A run folder's plan.json made a named pipe hung `nmp evaluate --resume` (read_text
    blocked for a writer), and a link to /dev/zero read it until memory ran out."""
    from tests.bad_inputs import nmp_error_in_child

    run = tmp_path / "r"
    run.mkdir()
    plan = run / "plan.json"
    if kind == "fifo":
        os.mkfifo(plan)
    elif kind == "dev-zero":
        plan.symlink_to("/dev/zero")
    else:
        plan.mkdir()
    done = nmp_error_in_child(
        "nmp.evaluate.run_folder import check_same_plan",
        "check_same_plan(Path(sys.argv[1]), 's', ['k'])",
        run,
        timeout_s=20,
    )
    assert done.stdout.startswith(f"{plan}: not a plan nmp evaluate wrote ("), done
