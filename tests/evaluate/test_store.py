"""The results log survives a writer killed mid-line; whole files are replaced atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nmp.errors import NmpError
from nmp.evaluate.store import JsonlLog, read_jsonl
from nmp.fileio import atomic_write_text


def test_append_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with JsonlLog(path) as log:
        for i in range(5):
            log.append({"key": f"k{i}", "v": i})
    assert [r["v"] for r in read_jsonl(path)] == list(range(5))


@pytest.mark.parametrize("tail", [b'{"key": "k9", "v"', b'{"key": "k9", "v": 9}', b"garbage"])
def test_torn_last_line_is_dropped_and_truncated(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "r.jsonl"
    with JsonlLog(path) as log:
        log.append({"key": "k0"})
        log.append({"key": "k1"})
    clean_size = path.stat().st_size
    with open(path, "ab") as fh:  # a writer killed before its newline
        fh.write(tail)
    assert [r["key"] for r in read_jsonl(path)] == ["k0", "k1"]
    assert path.stat().st_size > clean_size  # reading alone changes nothing
    assert [r["key"] for r in read_jsonl(path, repair=True)] == ["k0", "k1"]
    assert path.stat().st_size == clean_size
    with JsonlLog(path) as log:  # the next append starts on a clean line
        log.append({"key": "k2"})
    assert [r["key"] for r in read_jsonl(path)] == ["k0", "k1", "k2"]


def test_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(NmpError) as err:
        read_jsonl(path)
    assert err.value.line == 2 and err.value.file == str(path)


def test_atomic_write_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.json"
    atomic_write_text(path, json.dumps({"a": 1}))
    atomic_write_text(path, json.dumps({"a": 2}))
    assert json.loads(path.read_text()) == {"a": 2}
    assert os.listdir(path.parent) == ["f.json"]


def test_atomic_writes_are_plain_files_not_private(tmp_path):
    import os
    import stat

    from nmp.fileio import UMASK as _UMASK
    from nmp.fileio import atomic_write_text

    path = tmp_path / "report.md"
    atomic_write_text(path, "x")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_UMASK


def test_traces_and_index_files_are_plain_files_too(tmp_path):
    import os
    import stat

    import numpy as np

    from nmp.fileio import UMASK
    from nmp.memory import make_requests, write_trace
    from nmp.workload import generate_batch, load_workload
    from nmp.workload.indexfile import load_index_file, save_index_file

    trace = tmp_path / "t.trace.gz"
    write_trace(make_requests(np.arange(4, dtype=np.uint64) * 64), trace)
    batch = generate_batch(load_workload("recross-eval", {"rows": [50, 20], "batch": 2}), seed=1)
    index = tmp_path / "i.npz"
    save_index_file(batch, index)
    assert load_index_file(index).tables[0].indices.tolist() == batch.tables[0].indices.tolist()
    for path in (trace, index):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~UMASK, path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.npz", "t.trace.gz"]  # no temps


# (the last: nested past the JSON parser's depth, a RecursionError the CLI named no file for)
@pytest.mark.parametrize("last", [b"[1,2,3]\n", b"\xff\xfe\n", b'"text"\n', b"[" * 100_000 + b"\n"])
def test_a_whole_last_line_that_is_no_record_is_corruption_not_a_torn_write(
    tmp_path: Path, last: bytes
) -> None:
    """Only a last line without its newline is a torn write: a complete one that is not a
    record was silently dropped (and truncated away by --resume)."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"key": "k0"}\n' + last)
    size = path.stat().st_size
    for repair in (False, True):
        with pytest.raises(NmpError, match=r"r.jsonl:2: corrupt line"):
            read_jsonl(path, repair=repair)
    assert path.stat().st_size == size


def test_a_log_that_is_a_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    """repair=True followed a symlinked results.jsonl and truncated its target."""
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b'{"key": "k0"}\ntorn')
    link = tmp_path / "results.jsonl"
    link.symlink_to(victim)
    for repair in (False, True):
        with pytest.raises(NmpError, match="results.jsonl: is a symbolic link"):
            read_jsonl(link, repair=repair)
    assert victim.read_bytes() == b'{"key": "k0"}\ntorn'


def test_a_log_that_is_a_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    from nmp.evaluate.store import check_log, read_sessions

    for name in ("errors.jsonl", "environment.json"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        with pytest.raises(NmpError, match=f"{name}: is a named pipe"):
            check_log(fifo)
        reader = read_sessions if name.endswith(".json") else read_jsonl
        with pytest.raises(NmpError, match=f"{name}: is a named pipe"):
            reader(fifo)


@pytest.mark.parametrize("text", ["[1]", '{"sessions": 5}', '{"sessions": [1]}', "{"])
def test_an_environment_json_of_another_shape_is_named(tmp_path: Path, text: str) -> None:
    from nmp.evaluate.store import read_sessions

    path = tmp_path / "environment.json"
    path.write_text(text)
    with pytest.raises(NmpError, match="environment.json: not an environment.json"):
        read_sessions(path)
    path.write_text('{"sessions": [{"a": 1}]}')
    assert read_sessions(path) == [{"a": 1}]
    assert read_sessions(tmp_path / "none.json") == []


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_lock_that_is_not_a_file_is_named(tmp_path: Path, kind: str) -> None:
    """A named pipe as .lock was 'nmp: error: Invalid argument', naming no file."""
    from nmp.fileio import folder_lock

    lock = tmp_path / ".lock"
    if kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NmpError, match=r"\.lock: is a"), folder_lock(tmp_path, "busy {pid}"):
        pass
    assert not (tmp_path / "elsewhere").exists()
