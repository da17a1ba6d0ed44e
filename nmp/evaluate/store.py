"""Crash-safe files of a sweep run: an append-only JSONL log, a run lock, stale temporaries.

A run folder holds ``results.jsonl``: one self-contained JSON object per finished point, appended
by the one collecting process as points finish, each line flushed and fsynced before the next
point is counted. A process killed mid-write leaves at most one torn last line; reading the log
for ``--resume`` drops it (and truncates it away, so the next append starts on a clean line). A
malformed line anywhere else is corruption, not a crash, and raises an error naming the line.

One run writes a folder at a time: :func:`run_lock` holds an exclusive POSIX record lock
(``lockf``) on ``<run>/.lock``: released by the kernel when the process dies, however it dies,
and, unlike ``flock``, not inherited by the pool's forked workers (which would keep a killed
run's lock alive); and
:func:`remove_stale_temps` removes what a killed :func:`nmp.fileio.atomic_write_bytes` left
behind. Whole-file writes themselves are :mod:`nmp.fileio`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.fileio import (
    atomic_write_bytes,
    file_kind,
    folder_lock,
    lstat_if_present,
    open_append,
    open_regular,
)

__all__ = [
    "JsonlLog",
    "check_log",
    "jsonl_line",
    "read_jsonl",
    "read_jsonl_lines",
    "read_sessions",
    "remove_stale_temps",
    "rewrite_jsonl",
    "run_lock",
]


@contextlib.contextmanager
def run_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold the run folder's lock, or raise :class:`NmpError` at once if another process holds
    it (a second ``nmp evaluate`` on the same folder); :func:`nmp.fileio.folder_lock`."""
    busy = f"another nmp evaluate (pid {{pid}}) is running in {run_dir}; wait for it, or pick "
    with folder_lock(run_dir, busy + "another --run"):
        yield


# What nmp.fileio.atomic_file's temporaries are named: tempfile.mkstemp(prefix=".<name>.",
# suffix=".tmp"), whose random part is letters, digits and "_"
_TEMP_NAME = re.compile(r"\.[^.].*\.[A-Za-z0-9_]+\.tmp")


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Delete the hidden temporary files (``.<name>.*.tmp``) a killed
    :func:`nmp.fileio.atomic_write_bytes` left in ``folder``; call it only while holding the
    folder's :func:`run_lock` (no writer is then alive). Other hidden files (``.gitignore``,
    notes) are the user's: left alone."""
    removed = []
    for tmp in Path(folder).glob(".*.tmp"):
        if not _TEMP_NAME.fullmatch(tmp.name) or not tmp.is_file() or tmp.is_symlink():
            continue
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def jsonl_line(record: dict[str, Any]) -> bytes:
    """``record`` as one line of a JSONL log (compact, newline-terminated)."""
    line = json.dumps(record, separators=(",", ":"), allow_nan=True)
    if "\n" in line:  # json.dumps never emits a raw newline; keep the invariant explicit
        raise ValueError("record serialized across lines")
    return (line + "\n").encode("utf-8")


def rewrite_jsonl(path: str | Path, records: list[dict[str, Any]]) -> None:
    """Replace the log at ``path`` by ``records`` in this order, atomically (a reader sees the
    old log or the new one); nothing is written where the bytes would not change."""
    data = b"".join(jsonl_line(r) for r in records)
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise NmpError(
            f"cannot rewrite in plan order: {exc.strerror} (the log is kept as it was)",
            file=str(path),
        ) from None


class JsonlLog:
    """An append-only log of JSON objects, one per line, each durable once ``append`` returns.

    A line is written whole or not at all: where the write fails (a full disk, a quota), the
    file is cut back to where the line began and :class:`NmpError` names the file, so no torn
    line is left for the next reader."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def __enter__(self) -> JsonlLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, record: dict[str, Any]) -> None:
        data = memoryview(jsonl_line(record))
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = open_append(self.path)  # a link or a pipe refused, named
            start = os.lseek(self._fd, 0, os.SEEK_END)
        except OSError as exc:
            raise NmpError(f"cannot write: {exc.strerror}", file=str(self.path)) from None
        try:
            while data:
                data = data[os.write(self._fd, data) :]
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise NmpError(
                f"cannot write: {exc.strerror} (the line was not saved; the lines before it are)",
                file=str(self.path),
            ) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_jsonl(path: str | Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """The records of a JSONL log. A torn last line (no newline, or not valid JSON) is what a
    killed writer leaves: it is ignored, and with ``repair`` cut off the file. A bad line
    before the last raises :class:`NmpError` naming the file and line."""
    return [record for _, record in read_jsonl_lines(path, repair=repair)]


def check_log(path: str | Path) -> None:
    """A run's log ``path`` is absent or a regular file (not a symbolic link, a named pipe, a
    folder): else :class:`NmpError` naming it, before any work."""
    st = lstat_if_present(path, "read")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NmpError(
            f"is {file_kind(st.st_mode)}: a run's log is only a regular file (remove it)",
            file=str(path),
        )


def read_sessions(path: str | Path) -> list[dict[str, Any]]:
    """The sessions a run folder's ``environment.json`` lists (``{"sessions": [{...}, ...]}``;
    [] where it does not exist), read as :func:`read_jsonl_lines` reads a log (a regular file,
    no link followed, no blocking on a pipe); anything else is :class:`NmpError` naming it."""
    if _absent(path):
        return []
    with open_regular(path, follow_links=False) as fh:
        raw = fh.read()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # (nested past the parser's depth)
        data = None
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, list) or not all(isinstance(x, dict) for x in sessions):
        raise NmpError(
            'not an environment.json that nmp evaluate wrote ({"sessions": [{...}, ...]}): '
            "move it away to start the run's history anew",
            file=str(path),
        )
    return sessions


def _absent(path: str | Path) -> bool:
    """Whether nothing is at ``path`` (a link not followed); another failure is left to
    :func:`open_regular`, which names the path and the reason."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def read_jsonl_lines(path: str | Path, *, repair: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl`'s records, each with its line number (1-based). The log is opened
    once, without following a link and without blocking on a pipe, and must be a regular file
    (:class:`NmpError` else); ``repair`` truncates that same open file."""
    path = Path(path)
    if _absent(path):
        return []
    with open_regular(path, follow_links=False, update=repair) as fh:
        raw = fh.read()
        records, good_end = _parse_jsonl(raw, path)
        if repair and good_end < len(raw):
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return records


def _parse_jsonl(raw: bytes, path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """The records of ``raw`` with their line numbers, and the offset where a torn last line
    (no newline: the writer died mid-line) starts, else ``len(raw)``. A complete line that is
    not a JSON object is corruption: :class:`NmpError` naming the file and line."""
    records: list[tuple[int, dict[str, Any]]] = []
    good_end = 0  # byte offset just after the last good line
    lines = list(_split_lines(raw))
    for i, (start, end, complete) in enumerate(lines):
        if not complete:  # only the last line can lack its newline: a torn write
            return records, good_end
        text = raw[start:end].strip()
        if not text:
            good_end = end + 1
            continue
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError) as exc:
            # a whole line (its newline written) that is not a record: not a torn write (a
            # RecursionError: nested past the parser's depth, no record of ours is)
            why = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise NmpError(f"corrupt line ({why})", file=str(path), line=i + 1) from None
        records.append((i + 1, record))
        good_end = end + 1
    return records, len(raw)


def _split_lines(raw: bytes) -> Iterator[tuple[int, int, bool]]:
    """(start, end, ends_with_newline) of each line of ``raw``."""
    start = 0
    while start < len(raw):
        nl = raw.find(b"\n", start)
        if nl < 0:
            yield start, len(raw), False
            return
        yield start, nl, True
        start = nl + 1
