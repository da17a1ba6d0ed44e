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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.fileio import LOCK_NAME, atomic_write_bytes, folder_lock, open_append

__all__ = [
    "JsonlLog",
    "jsonl_line",
    "read_jsonl",
    "read_jsonl_lines",
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


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Delete the hidden temporary files (``.<name>.*.tmp``) a killed
    :func:`nmp.fileio.atomic_write_bytes` left in ``folder``; call it only while holding the
    folder's :func:`run_lock` (no writer is then alive)."""
    removed = []
    for tmp in Path(folder).glob(".*"):
        if tmp.name == LOCK_NAME or not tmp.is_file():
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


def read_jsonl_lines(path: str | Path, *, repair: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl`'s records, each with its line number (1-based)."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    records: list[tuple[int, dict[str, Any]]] = []
    good_end = 0  # byte offset just after the last good line
    lines = list(_split_lines(raw))
    for i, (start, end, complete) in enumerate(lines):
        text = raw[start:end].strip()
        is_last = i == len(lines) - 1
        if not text:
            good_end = end + (1 if complete else 0)
            continue
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            if not complete:
                raise ValueError("no newline: the writer died mid-line")
        except ValueError as exc:
            if is_last:
                break
            raise NmpError(f"corrupt line ({exc})", file=str(path), line=i + 1) from None
        records.append((i + 1, record))
        good_end = end + 1
    if repair and good_end < len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return records


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
