"""Whole-file writes that never leave half a file: a temporary file beside the target, then
``os.replace``. Readers see the old file or the new one; an interrupted write leaves at most a
hidden ``.<name>.*.tmp`` (``nmp evaluate --resume`` removes those in a run folder).

It sits at the bottom of the package (stdlib only), so that traces (``nmp.memory``), index
files (``nmp.workload``), calibration caches (``nmp.gpu``), reports and run folders
(``nmp.evaluate.store``) share one mechanism.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _current_umask()


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new contents into; on leaving the block it is synced
    and renamed onto ``path``, and on any error (or interrupt) removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; the result is a plain file (0666 less the umask)
        os.fchmod(fd, 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_file`)."""
    with atomic_file(path) as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON (one trailing newline) to ``path`` atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
