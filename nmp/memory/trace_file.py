"""A trace file's bytes, gunzipped where it is gzip, with the checks every reader makes (a
regular file, a bound on its text), without numpy: :mod:`nmp.memory.trace` parses them into
requests, :mod:`nmp.memory.text_replay` hands a canonical text to the C engine as it is."""

from __future__ import annotations

from pathlib import Path

from nmp.errors import NmpError, TraceError
from nmp.fileio import open_regular

# A gzip trace's first bytes of text, looked at before the rest is unpacked: a trace is ASCII
# text, and a stream of zeros (the usual gzip bomb: 2 GB in 2 MB) or a compressed binary shows a
# NUL byte at once, where unpacking it up to the memory limit took 5.8 s and 2 GB.
PROBE_BYTES = 1 << 16


def read_trace_bytes(path: Path, max_bytes: int | None = None) -> bytes:
    """The trace's bytes (gunzipped where it is gzip), at most ``max_bytes`` of them: a device
    (``/dev/zero``), a pipe or a folder is refused (checked on the open descriptor, which is
    the one read: a file swapped for a pipe after a check cannot block the read), as is a
    text (gunzipped) beyond the bound, before it is all in memory, and a gzip stream whose
    first :data:`PROBE_BYTES` of text hold a NUL byte, before the rest is unpacked; a damaged
    gzip stream (a bad CRC, a corrupt deflate block, a truncated member) is named as such."""
    limit = -1 if max_bytes is None else max_bytes + 1
    try:
        with open_regular(path) as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                import gzip  # here: a plain trace's replay does without it (~5 ms of CPU time)
                import zlib

                try:
                    with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                        _refuse_binary(gz.read(PROBE_BYTES), path)
                        gz.seek(0)  # (unpacks the probe again: cheaper than a copy of the text)
                        data = gz.read(limit)
                except (EOFError, zlib.error) as exc:
                    raise TraceError(f"damaged gzip data: {exc}", file=str(path)) from None
            else:
                data = fh.read(limit)
    except TraceError:
        raise
    except NmpError as exc:
        raise TraceError(exc.message, file=str(path)) from None
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise TraceError(
            f"its text is larger than {max_bytes:,} bytes, the most that fits the memory limit "
            "(--max-memory)",
            file=str(path),
        )
    return data


def _refuse_binary(probe: bytes, path: Path) -> None:
    at = probe.find(b"\0")
    if at >= 0:
        raise TraceError(
            f"not a trace: its text (gunzipped) holds a NUL byte at byte {at:,} (a binary file, "
            "or a stream of zeros that would unpack to far more than its size)",
            file=str(path),
        )
