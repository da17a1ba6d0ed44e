"""A trace file's bytes, gunzipped where it is gzip, with the checks every reader makes (a
regular file, a bound on its text), without numpy: :mod:`nmp.memory.trace` parses them into
requests, :mod:`nmp.memory.text_replay` hands a canonical text to the C engine as it is."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from nmp.errors import TraceError


def read_trace_bytes(path: Path, max_bytes: int | None = None) -> bytes:
    """The trace's bytes (gunzipped where it is gzip), at most ``max_bytes`` of them: a device
    (``/dev/zero``), a pipe or a folder is refused, as is a text (gunzipped) beyond the
    bound, before it is all in memory."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceError("no such file", file=str(path)) from None
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(
            "not a regular file (a device, pipe or folder): a trace is read whole, from a file",
            file=str(path),
        )
    limit = -1 if max_bytes is None else max_bytes + 1
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        if head == b"\x1f\x8b":
            import gzip  # here: a plain trace's replay does without it (~5 ms of CPU time)

            with gzip.open(path, "rb") as fh:
                data = fh.read(limit)
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit)
    except FileNotFoundError:
        raise TraceError("no such file", file=str(path)) from None
    except (OSError, EOFError) as exc:
        raise TraceError(f"cannot read: {exc}", file=str(path)) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise TraceError(
            f"its text is larger than {max_bytes:,} bytes, the most that fits the memory limit "
            "(--max-memory)",
            file=str(path),
        )
    return data
