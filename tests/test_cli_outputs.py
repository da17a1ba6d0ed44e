"""The command line's outputs and its edges: files never written through a link or onto a
device, run folders with one writer and nothing half-made, piped output, warnings, help texts,
number flags' ranges, bounded memory on refusals, a full disk, a service that is not Dask's
(subprocesses where a failed start or a pipe is the point)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import RUN, case_in_process, make_files
from bad_inputs import assert_one_line_error as _assert_clean_error


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    subs = make_files(tmp, argv)
    args = [a.format(**subs) for a in argv]
    # the default memory limit, not the caller's $NMP_MAX_MEMORY
    env = {k: v for k, v in os.environ.items() if v and k != "NMP_MAX_MEMORY"}
    return subprocess.run(
        [sys.executable, "-m", "nmp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp,
        env=env,
    )


def test_outputs_never_replace_a_link_a_device_or_a_pipe(tmp_path: Path, capsys, monkeypatch):
    """Issue 42: --save-requests to a symbolic link replaced the link with a file (and a device
    node with a regular file); now each is refused before the run, and left as it was."""
    users = ["cache", "--request-model", "users", "--requests", "50", "--no-accuracy"]
    for target, kind in (("{tmp}/link", "symbolic link"), ("{tmp}/fifo", "named pipe")):
        proc = case_in_process([*users, "--save-requests", target], tmp_path, capsys, monkeypatch)
        _assert_clean_error(proc, kind)
    assert (tmp_path / "link").is_symlink() and (tmp_path / "victim.txt").read_text() == "keep\n"
    assert stat.S_ISFIFO((tmp_path / "fifo").lstat().st_mode)
    _assert_clean_error(
        case_in_process([*users, "--save-requests", "/dev/null"], tmp_path, capsys, monkeypatch),
        "device",
    )
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    # measure host wrote its preset through a link (round 3); refused before it measures
    proc = case_in_process(
        ["measure", "host", "--out", "{tmp}/link.toml"], tmp_path, capsys, monkeypatch
    )
    _assert_clean_error(proc, "symbolic link")
    assert (tmp_path / "link.toml").is_symlink() and (
        tmp_path / "victim.txt"
    ).read_text() == "keep\n"


def test_a_log_never_appends_through_a_link_or_to_a_pipe(tmp_path: Path) -> None:
    """Round 3: a run folder's results.jsonl planted as a link appended to the file it named;
    a pipe blocked. Each is refused, named, and left as it was."""
    from nmp.errors import NmpError
    from nmp.evaluate.store import JsonlLog

    make_files(tmp_path, ["{tmp}/link", "{tmp}/fifo"])
    for name, kind in (("link", "symbolic link"), ("fifo", "named pipe")):
        with pytest.raises(NmpError, match=kind), JsonlLog(tmp_path / name) as log:
            log.append({"a": 1})
    assert (tmp_path / "victim.txt").read_text() == "keep\n"
    with JsonlLog(tmp_path / "new.jsonl") as log:  # a regular file: created, appended
        log.append({"a": 1})
    assert (tmp_path / "new.jsonl").read_text() == '{"a":1}\n'


def test_two_reports_in_one_second_get_two_folders(tmp_path: Path) -> None:
    """Round 3: two `nmp validate --out D` finishing in the same second both chose
    validate-<stamp>; the second failed with "File exists" after its whole run."""
    from nmp.validate.report import write_report

    first = write_report([], tmp_path, quick=True)
    second = write_report([], tmp_path, quick=True)
    assert first != second and (first / "report.md").is_file() and (second / "report.md").is_file()


FOLDER_HOLDER = """
import sys, time
from nmp.fileio import folder_lock
with folder_lock(sys.argv[1], "busy"):
    print("locked", flush=True)
    time.sleep(120)
"""


def test_a_run_folder_has_one_writer(tmp_path: Path, capsys, monkeypatch) -> None:
    """Issue 42: two `nmp train --procs` runs with one --run-dir mixed their logs and
    checkpoints; the second is now refused at once, naming the holder."""
    from nmp.errors import NmpError
    from nmp.fileio import folder_lock

    holder = subprocess.Popen(
        [sys.executable, "-c", FOLDER_HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(NmpError, match="busy"), folder_lock(tmp_path, "busy"):
            pass
        argv = ["train", "--strategy", "ecrec", "--procs", "2,1", "--run-dir", str(tmp_path)]
        proc = case_in_process(argv, tmp_path, capsys, monkeypatch)
        _assert_clean_error(proc, f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert not (tmp_path / "ecrec").exists()  # the refused run wrote nothing


def test_output_and_encoding_and_home(tmp_path: Path) -> None:
    """Issue 42: an ASCII-only output encoding crashed with UnicodeEncodeError; a bad NMP_HOME
    listed empty preset sets instead of saying so."""
    env = {k: v for k, v in os.environ.items() if k != "NMP_MAX_MEMORY"}
    argv = [sys.executable, "-m", "nmp", *RUN, "--set", "workload.batch=2"]  # prints "µs", "mm²"
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**env, "PYTHONIOENCODING": "ascii"}
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "latency per batch" in proc.stdout
    argv = [sys.executable, "-m", "nmp", "run", "--arch", "recross", "--workload", "recross-eval"]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**env, "NMP_HOME": str(tmp_path)}
    )
    _assert_clean_error(proc, "NMP_HOME")


def test_failed_start_leaves_no_folder_and_no_latest(tmp_path: Path) -> None:
    argv = ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", "bad"]
    proc = _run(argv, tmp_path)
    assert proc.returncode == 1
    reports = tmp_path / "reports"
    assert not (reports / "latest").exists()
    assert not [p for p in reports.iterdir() if p.is_dir()] if reports.exists() else True


def test_piped_output_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    """Issue 25: piped tables wrapped at 80 columns and split names mid-word."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", "models", "--kind", "memory"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    header = next(ln for ln in proc.stdout.splitlines() if "name" in ln)
    assert "capacity_GiB" in header  # whole, on one line
    assert max(len(ln) for ln in proc.stdout.splitlines()) > 80


def test_warnings_are_one_line(tmp_path: Path) -> None:
    """A warning (here: an organization the C engine does not take) reads like an error: one
    line, no source path."""
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"LD {i * 64:#x}\n" for i in range(100)))
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", "replay", str(trace), "--ranks", "16", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmp: warning: "), proc.stderr
    assert "numba engine" in lines[0] and ".py" not in lines[0]


def _subcommands():
    import argparse

    from nmp.cli import build_parser

    def walk(parser, name):
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    yield from walk(subparser, f"{name} {sub}")

    return list(walk(build_parser(), "nmp"))


def test_help_texts_are_whole() -> None:
    """Issue 30: every flag of every command says what it does, no choice is the empty
    string, and no help shows a docstring's reST ``literals``."""
    for name, parser in _subcommands():
        assert "``" not in parser.format_help(), name
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            assert "" not in (action.choices or ()), f"{name} {action.option_strings[0]}"


def test_number_flags_and_out_folders(tmp_path: Path) -> None:
    import argparse

    from nmp.cliargs import check_out_folder, finite_float, integer
    from nmp.errors import NmpError

    assert integer("1e9") == 10**9 and integer("-3") == -3 and integer("1_000") == 1000
    assert finite_float("1e-3") == 1e-3
    for bad in ("nan", "inf", "-inf", "1.5.2"):
        with pytest.raises(argparse.ArgumentTypeError):
            finite_float(bad)
    for bad in ("1.5", "inf", "lots"):
        with pytest.raises(argparse.ArgumentTypeError):
            integer(bad)
    assert check_out_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == []  # the probe is gone
    for bad, why in (("", "empty"), (tmp_path / "a" / "b", None), ("/proc/x", "cannot write")):
        if why is None:
            (tmp_path / "f").write_text("x")
            bad, why = tmp_path / "f", "not a folder"
        with pytest.raises(NmpError, match=why):
            check_out_folder(bad)


def test_a_compression_run_without_a_strategy_trains(capsys) -> None:
    """Issue 30: the README's `nmp train --compress hybrid` trains, without fault tolerance."""
    from nmp.cli import main

    tiny = ["--steps", "3", "--set", "train.max_tables=2", "--set", "train.max_rows=100"]
    tiny += ["--set", "train.eval_batches=1", "--set", "train.batch=16"]
    assert main(["train", "--compress", "hybrid", *tiny, "--json"]) == 0
    import json

    row = json.loads(capsys.readouterr().out)
    assert row["strategy"] == "none" and row["compress"] == "hybrid"


def test_validate_piped_prints_each_check_as_it_finishes(tmp_path: Path) -> None:
    """Issue 30: piped, nmp validate printed nothing until every check had run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nmp", "validate", "--only", "functional.parity.*"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    # issue 42: a progress line per stage (group of checks) on stderr, the summary on stdout
    first = proc.stderr.readline()  # arrives before the report and summary are written
    still_running = proc.poll() is None
    rest, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert first.startswith("validate [1/1] functional: 2 checks (2 agrees)"), first
    assert still_running
    assert "nmp validate: 2 checks" in rest  # the summary follows the line


def test_a_full_disk_names_the_file(tmp_path: Path, monkeypatch) -> None:
    """Issue 42: a full disk named no path (the write's OSError has none); every whole-file
    write (nmp.fileio) now names the file it could not write, and leaves no temporary file."""
    import errno

    from nmp import fileio
    from nmp.errors import NmpError

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full)
    target = tmp_path / "report.md"
    with pytest.raises(NmpError, match="report.md: cannot write: No space left on device"):
        fileio.atomic_write_text(target, "x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stalls", [False, True], ids=["closes", "stalls"])
def test_a_service_that_is_no_dask_scheduler_is_named(
    stalls: bool, tmp_path: Path, capsys, monkeypatch
):
    """Issue 42: a --scheduler address where another service answers gave nmp's "out of memory"
    line (Dask read the service's bytes as a frame count and length). Here the service sends
    a frame count of 2^34, then closes the connection or keeps it open (which hung the
    command: the answer now has a deadline)."""
    import socket
    import struct
    import threading

    from nmp.evaluate import executor

    monkeypatch.setattr(executor, "SCHEDULER_ANSWER_S", 5.0)
    held = []

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(struct.pack("<Q", 2**34) + bytes(4096))
            if stalls:
                held.append(conn)  # open, silent
            else:
                conn.close()

    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{port}"
    argv = ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", address]
    try:
        proc = case_in_process(argv, tmp_path, capsys, monkeypatch)
    finally:
        server.close()
        for conn in held:
            conn.close()
    _assert_clean_error(proc, address)
    assert "out of memory" not in proc.stderr


def test_every_integer_flag_has_its_range() -> None:
    """Issue 42: `--jobs 1e6` was accepted; every integer flag of every command now takes a
    range of its own (nmp.cliargs.INT_FLAG_RANGES) or a seed's, refused as it is parsed."""
    import argparse

    from nmp.cliargs import INT_FLAG_RANGES, int_flag_range

    listed = set()
    for name, parser in _subcommands():
        command = name.removeprefix("nmp").strip()
        for action in parser._actions:
            if getattr(action.type, "__name__", "") != "integer" or not action.option_strings:
                continue
            found = int_flag_range(command, action.option_strings)
            assert found, f"{name} {action.option_strings[0]} is not in INT_FLAG_RANGES"
            listed.add(f"{command} {action.option_strings[0]}")
            low, high = found
            for bad in (low - 1, high + 1):
                with pytest.raises(argparse.ArgumentTypeError, match="must be an integer in"):
                    action.type(str(bad))
            assert action.type(str(low)) == low
    assert listed == set(INT_FLAG_RANGES), set(INT_FLAG_RANGES) ^ listed  # none stale


def test_a_byte_order_mark_is_read_as_utf8(tmp_path: Path) -> None:
    """Round 4: a TOML file saved with a UTF-8 byte-order mark (as Windows editors do) failed
    as "invalid TOML: Invalid statement" at line 1; it is read as the text it holds."""
    from nmp.config import load_toml

    text = 'name = "w"\nrows = [10]\ndim = 4\n'
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    (tmp_path / "plain.toml").write_text(text)
    assert load_toml(tmp_path / "bom.toml") == load_toml(tmp_path / "plain.toml")
