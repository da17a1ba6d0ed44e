"""Run folders under concurrency and faults (issue 25): one run per folder at a time, unique
auto names, names that cannot leave --out, workers that die with their parent, stale temporary
files removed, a results log that is the same bytes for the same sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from evaluate_fakes import ToyProvider, fake_point, toy_sweep

from nmp.errors import NmpError
from nmp.evaluate.executor import Executor, SerialExecutor
from nmp.evaluate.run_folder import check_run_name, default_run_name, safe_name
from nmp.evaluate.runner import run_sweep, split_timings
from nmp.evaluate.store import read_jsonl
from nmp.evaluate.sweepcheck import validate_sweep
from nmp.fileio import claim_new_folder


def _keyed():
    spec = toy_sweep()
    return spec, validate_sweep(spec, file="toy.toml", provider=ToyProvider())


def test_a_second_run_on_a_locked_folder_refuses_and_runs_nothing(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ran = []

    def counting(point):
        ran.append(point)
        return fake_point(point)

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from nmp.evaluate.store import run_lock\n"
            f"with run_lock({str(run_dir)!r}):\n print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(NmpError, match="another nmp evaluate .* is running"):
            run_sweep(spec, keyed, run_dir, point_fn=counting)
    finally:
        holder.kill()
        holder.wait()
    assert ran == []
    assert not (run_dir / "results.jsonl").exists()
    # once the first run has let go, the folder is usable again
    summary = run_sweep(spec, keyed, run_dir, point_fn=counting)
    assert summary["ran"] == len(ran) == summary["points"]


def test_two_processes_on_one_folder_run_each_point_once(tmp_path: Path) -> None:
    """The issue's reproduction: two concurrent runs in one folder. The one that loses the
    lock refuses; every point is in the log exactly once."""
    here = Path(__file__).parent
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(here)!r})
        from evaluate_fakes import ToyProvider, fake_point, toy_sweep
        from nmp.errors import NmpError
        from nmp.evaluate.runner import run_sweep
        from nmp.evaluate.sweepcheck import validate_sweep
        def slow(p):
            time.sleep(0.05)
            return fake_point(p)
        spec = toy_sweep()
        keyed = validate_sweep(spec, file="toy.toml", provider=ToyProvider())
        try:
            run_sweep(spec, keyed, {str(tmp_path / "run")!r}, point_fn=slow)
        except NmpError as e:
            print("refused:", e)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    keys = [r["key"] for r in read_jsonl(tmp_path / "run" / "results.jsonl")]
    assert len(keys) == len(set(keys)) == len({k for _, k in _keyed()[1]})
    refused = [o for o in outs if "refused:" in o]
    # either the second started while the first ran (refused: lock), or after it finished
    # (refused: already holds results)
    assert len(refused) == 1, outs


def test_auto_names_are_unique_within_one_second(tmp_path: Path) -> None:
    spec = toy_sweep()
    name = default_run_name(spec)
    dirs = {claim_new_folder(tmp_path, name) for _ in range(3)}
    assert len(dirs) == 3
    assert all(d.parent == tmp_path for d in dirs)


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ".hidden", "/abs", ""])
def test_run_names_cannot_leave_out(bad: str) -> None:
    with pytest.raises(NmpError, match="--run"):
        check_run_name(bad)


def test_sweep_names_are_sanitized_in_auto_run_names() -> None:
    assert "/" not in safe_name("../../etc/evil")
    assert not safe_name("../../etc/evil").startswith(".")
    assert safe_name("ok-name_1.2") == "ok-name_1.2"
    assert safe_name("///") == "sweep"
    assert "/" not in default_run_name(toy_sweep(name="../up"))


def test_resume_removes_stale_hidden_temp_files(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    run_sweep(spec, keyed, run_dir, point_fn=fake_point)
    stale = [run_dir / ".report.md.abc123.tmp", run_dir / ".summary.json.k_9zq2ab.tmp"]
    for f in stale:
        f.write_bytes(b"")  # what a killed atomic write leaves
    # the user's hidden files: --resume deleted every hidden file of the folder
    own = [run_dir / ".gitignore", run_dir / ".notes", run_dir / ".x.tmp", run_dir / ".a.b.png"]
    for f in own:
        f.write_text("keep\n")
    run_sweep(spec, keyed, run_dir, point_fn=fake_point, resume=True)
    assert not any(f.exists() for f in stale)
    assert all(f.read_text() == "keep\n" for f in own)


def _timed_point(point):
    out = fake_point(point)
    out["breakdown"]["lp_solve_s"] = time.perf_counter()  # a wall-clock figure
    return out


def test_results_log_is_deterministic(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    for name in ("a", "b"):
        run_sweep(spec, keyed, tmp_path / name, point_fn=_timed_point)
    a, b = ((tmp_path / n / "results.jsonl").read_bytes() for n in ("a", "b"))
    assert a == b
    assert b"lp_solve_s" not in a and b"wall_s" not in a
    timings = read_jsonl(tmp_path / "a" / "timings.jsonl")
    assert len(timings) == len({k for _, k in keyed})
    assert all("wall_s" in t and "breakdown.lp_solve_s" in t for t in timings)


def test_split_timings_reaches_nested_fields() -> None:
    clean, timed = split_timings({"x": 1, "b": {"lp_solve_s": 2.5, "y": {"lp_solve_s": 1}}})
    assert clean == {"x": 1, "b": {"y": {}}}
    assert timed == {"b.lp_solve_s": 2.5, "b.y.lp_solve_s": 1}


class _FailingExecutor(Executor):
    def run(self, point_fn, points):
        raise NmpError("cannot reach the scheduler")
        yield  # a generator, like the real ones


def test_a_run_that_fails_to_start_reports_no_first_result(tmp_path: Path) -> None:
    spec, keyed = _keyed()
    called = []
    with pytest.raises(NmpError):
        run_sweep(
            spec,
            keyed,
            tmp_path / "run",
            point_fn=fake_point,
            executor=_FailingExecutor(),
            on_first_result=lambda: called.append(1),
        )
    assert called == []
    run_sweep(
        spec,
        keyed,
        tmp_path / "ok",
        point_fn=fake_point,
        executor=SerialExecutor(),
        on_first_result=lambda: called.append(1),
    )
    assert called == [1]  # once, not once per point


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys, time
        from nmp.evaluate.executor import LocalExecutor
        def sleepy(p):
            time.sleep(120)
            return {}
        it = LocalExecutor(2).run(sleepy, [1, 2])
        import threading
        threading.Thread(target=lambda: next(it), daemon=True).start()
        time.sleep(1.5)
        kids = [int(t) for t in os.listdir("/proc") if t.isdigit()
                and open(f"/proc/{t}/stat").read().split(") ")[1].split()[1] == str(os.getpid())]
        print(" ".join(map(str, kids)), flush=True)
        time.sleep(300)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        kids = [int(k) for k in proc.stdout.readline().split()]
        assert kids, "the pool started no workers"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        alive = kids
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [k for k in kids if _alive(k)]
        assert not alive, f"workers {alive} outlived their parent"
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_latest_cleans_links_of_killed_runs(tmp_path: Path) -> None:
    from nmp.evaluate.run_folder import update_latest

    run = tmp_path / "r1"
    run.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs
    stale = tmp_path / f".latest.{dead.pid}"
    os.symlink("r1", stale)
    update_latest(tmp_path, run)
    assert not stale.is_symlink()
    assert (tmp_path / "latest").resolve() == run.resolve()


@pytest.mark.parametrize("text", ["[1]", '{"sessions": 5}'])
def test_resume_with_an_environment_json_of_another_shape_names_it(
    tmp_path: Path, text: str
) -> None:
    """An AttributeError ('list' object has no attribute 'get') was an internal error."""
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    run_sweep(spec, keyed, run_dir, point_fn=fake_point)
    (run_dir / "environment.json").write_text(text)
    with pytest.raises(NmpError, match="environment.json: not an environment.json"):
        run_sweep(spec, keyed, run_dir, point_fn=fake_point, resume=True)


@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
def test_resume_refuses_a_log_that_is_not_a_file_before_any_work(tmp_path: Path, kind) -> None:
    spec, keyed = _keyed()
    run_dir = tmp_path / "run"
    run_sweep(spec, keyed, run_dir, point_fn=fake_point)
    victim = tmp_path / "victim.jsonl"
    victim.write_text("keep\n")
    log = run_dir / "errors.jsonl"
    log.unlink(missing_ok=True)
    if kind == "link":
        log.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(log)
    else:
        log.mkdir()
    ran = []
    with pytest.raises(NmpError, match="errors.jsonl: is a"):
        run_sweep(spec, keyed, run_dir, point_fn=lambda p: ran.append(p), resume=True)
    assert ran == [] and victim.read_text() == "keep\n"


@pytest.mark.parametrize("kind", ["folder", "file", "fifo"])
def test_latest_that_is_not_a_link_is_refused_and_kept(tmp_path: Path, kind: str) -> None:
    """A real folder named latest (the user's) was deleted by shutil.rmtree; a file failed
    after the first point, leaving a .latest.<pid> link; a named pipe hung."""
    from nmp.evaluate.run_folder import check_latest, update_latest

    base = tmp_path / "reports"
    run_dir = base / "run-1"
    run_dir.mkdir(parents=True)
    latest = base / "latest"
    if kind == "folder":
        latest.mkdir()
        (latest / "mine.txt").write_text("keep\n")
    elif kind == "file":
        latest.write_text("keep\n")
    else:
        os.mkfifo(latest)
    for call in (lambda: check_latest(base), lambda: update_latest(base, run_dir)):
        with pytest.raises(NmpError, match="reports/latest: is a"):
            call()
    if kind == "folder":
        assert (latest / "mine.txt").read_text() == "keep\n"
    elif kind == "file":
        assert latest.read_text() == "keep\n"
    assert sorted(p.name for p in base.iterdir()) == ["latest", "run-1"]
    latest_link = tmp_path / "other" / "latest"
    latest_link.parent.mkdir()
    (tmp_path / "other" / "run-2").mkdir()
    latest_link.symlink_to("run-1")
    assert update_latest(latest_link.parent, tmp_path / "other" / "run-2").resolve().name == "run-2"


def test_evaluate_refuses_a_latest_folder_before_any_point(tmp_path: Path, capsys, monkeypatch):
    from nmp.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.toml").write_text(
        'name = "small"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
    )
    (tmp_path / "reports" / "latest").mkdir(parents=True)
    (tmp_path / "reports" / "latest" / "mine.txt").write_text("keep\n")
    assert main(["evaluate", "small.toml", "--out", "reports", "--jobs", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reports/latest: is a folder" in err[0], err
    assert (tmp_path / "reports" / "latest" / "mine.txt").read_text() == "keep\n"
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["latest"]
