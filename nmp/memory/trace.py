"""Memory traces: Ramulator ``LD 0x..``/``ST 0x..`` and DRAMsim3 ``0x.. READ|WRITE cycle``,
plain or gzip, read and written; requests are a numpy structured array (:data:`REQUEST_DTYPE`).

One trace line is one 64-B transaction (README §6). DRAMsim3's arrival cycle (memory cycles)
is checked (cycles must not decrease: an out-of-order trace is an error naming the line) and
kept as the requests' ``arrival`` field: no request is offered to the memory before its cycle,
as DRAMsim3 itself replays such a trace. A Ramulator trace has no cycles: its requests are
offered at the frontend rate of the memory spec.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import TraceError
from nmp.memory.trace_file import read_trace_bytes
from nmp.registry import Registry

REQUEST_DTYPE = np.dtype([("addr", "<u8"), ("write", "?")])

_RAMULATOR = re.compile(r"\s*(LD|ST)\s+(0[xX][0-9a-fA-F]+|\d+)\s*")
_DRAMSIM3 = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+)\s+(READ|WRITE|R|W)\s+(\d+)\s*", re.IGNORECASE)
# Whole-text fast path for well-formed traces: one C-level scan instead of a match per line.
_RAMULATOR_ALL = re.compile(r"^[ \t]*(LD|ST)[ \t]+0[xX]([0-9a-fA-F]+)[ \t\r]*$", re.MULTILINE)
_DRAMSIM3_ALL = re.compile(
    r"^[ \t]*0[xX]([0-9a-fA-F]+)[ \t]+(READ|WRITE)[ \t]+(\d+)[ \t\r]*$", re.MULTILINE
)
_CONTENT = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)


ARRIVAL_DTYPE = np.dtype([("addr", "<u8"), ("write", "?"), ("arrival", "<u8")])


def make_requests(addr, write=False, arrival=None) -> np.ndarray:
    """Requests from byte addresses (and a bool or bool array of writes). With ``arrival``
    (memory cycles, non-decreasing) the array gets an ``arrival`` field: no request is offered
    to the memory before its cycle."""
    a = np.atleast_1d(np.asarray(addr))
    if a.size and (a.dtype.kind == "f" or (a.dtype.kind == "i" and a.min() < 0)):
        raise TraceError("addresses must be non-negative integers")
    out = np.empty(a.shape[0], REQUEST_DTYPE if arrival is None else ARRIVAL_DTYPE)
    out["addr"] = a.astype(np.uint64)
    out["write"] = np.broadcast_to(np.asarray(write, dtype=bool), a.shape)
    if arrival is not None:
        out["arrival"] = np.broadcast_to(np.asarray(arrival, dtype=np.uint64), a.shape)
    return out


_NIBBLE = np.zeros(256, np.uint64)
for _i, _ch in enumerate("0123456789abcdef"):
    _NIBBLE[ord(_ch)] = _NIBBLE[ord(_ch.upper())] = _i


def _parse_hex(hexes) -> np.ndarray:
    """Hex digit strings (at most 16 digits, already validated) to uint64, vectorized."""
    arr = np.asarray(hexes, dtype="S16")
    if not arr.size:
        return np.zeros(0, np.uint64)
    digits = arr.view(np.uint8).reshape(len(arr), 16)
    length = np.char.str_len(arr)
    nib = _NIBBLE[digits]
    val = np.zeros(len(arr), np.uint64)
    for i in range(16):
        val = np.where(i < length, (val << np.uint64(4)) | nib[:, i], val)
    return val


_IS_HEX = _NIBBLE.astype(bool)
_IS_HEX[ord("0")] = True


def _parse_canonical_ramulator(data: bytes) -> np.ndarray | None:
    """Vectorized parse of the canonical Ramulator form: every line exactly ``LD 0x<hex>`` or
    ``ST 0x<hex>`` (1-16 digits), ``\n``-separated. ``None`` if any line is not canonical."""
    b = np.frombuffer(data, np.uint8)
    if b.size == 0:
        return None
    if b[-1] != 10:
        b = np.append(b, np.uint8(10))
    ends = np.flatnonzero(b == 10)
    starts = np.concatenate(([0], ends[:-1] + 1))
    length = ends - starts
    if (length < 6).any() or (length > 21).any():
        return None
    c0, c1 = b[starts], b[starts + 1]
    is_ld = (c0 == ord("L")) & (c1 == ord("D"))
    is_st = (c0 == ord("S")) & (c1 == ord("T"))
    ok = (is_ld | is_st) & (b[starts + 2] == ord(" ")) & (b[starts + 3] == ord("0"))
    ok &= (b[starts + 4] == ord("x")) | (b[starts + 4] == ord("X"))
    if not ok.all():
        return None
    # per width (a trace has few: usually one), the lines' digits as one matrix: every byte
    # from start+5 to the newline must be a hex digit; the value is folded a column at a time
    nd = length - 5
    addr = np.empty(len(starts), np.uint64)
    for width in np.flatnonzero(np.bincount(nd)).tolist():
        same = nd == width
        rows = np.flatnonzero(same) if not same.all() else slice(None)
        raw = b[(starts[rows] + 5)[:, None] + np.arange(width)]
        if not _IS_HEX[raw].all():
            return None
        digits = _NIBBLE[raw]
        value = digits[:, 0].copy()
        for i in range(1, width):
            value <<= np.uint64(4)
            value |= digits[:, i]
        addr[rows] = value
    out = np.empty(len(starts), REQUEST_DTYPE)
    out["addr"] = addr
    out["write"] = is_st
    return out


def _parse_canonical(data: bytes) -> np.ndarray | None:
    """The requests of a canonical Ramulator text (:func:`_parse_canonical_ramulator`), read
    in C where the engine's library is built (same result, a third of the time), else by
    numpy; None for any other text."""
    if os.environ.get("NMP_ENGINE", "").strip().lower() != "numba":
        # the engine's library, loaded (or built) where a replay would load it anyway
        from nmp.memory import native

        if native.available():
            return native.parse_trace(data, REQUEST_DTYPE)
    return _parse_canonical_ramulator(data)


def _ascii(data: bytes, path: Path) -> str:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError("not a text trace (non-ASCII byte)", file=str(path), line=line) from None


def read_trace(path: str | os.PathLike, *, max_bytes: int | None = None) -> np.ndarray:
    """Read a Ramulator LoadStore or DRAMsim3 trace (format detected from the first line).

    Blank lines and lines starting with ``#`` are skipped. A malformed line raises
    :class:`TraceError` with the file and line number; so does a trace whose text (gunzipped)
    exceeds ``max_bytes``, or that is not a regular file.
    """
    path = Path(path)
    return parse_trace_bytes(read_trace_bytes(path, max_bytes), path)


def parse_trace_bytes(data: bytes, path: str | os.PathLike) -> np.ndarray:
    """The requests of a trace's bytes (:func:`read_trace` of a file already read by
    :func:`nmp.memory.trace_file.read_trace_bytes`; ``path`` names it in errors)."""
    path = Path(path)
    canonical = _parse_canonical(data)
    if canonical is not None:
        return canonical
    text = _ascii(data, path)
    m_first = _CONTENT.search(text)
    if m_first is None:
        raise TraceError("empty trace", file=str(path))
    first = text[m_first.start() : text.find("\n", m_first.start()) % (len(text) + 1)]
    fmt = next(f for _, f in TRACE_FORMATS.items() if f.starts(first))
    fast = fmt.whole.findall(text)
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if len(fast) == n_lines or len(fast) == len(_CONTENT.findall(text)):
        hexes, write, cycles = fmt.fast_fields(fast)
        arrival = (
            None if cycles is None else _check_cycles(cycles, lines=None, text=text, path=path)
        )
        out = np.empty(len(hexes), fmt.dtype)
        if arrival is not None:
            out["arrival"] = arrival
        hex_arr = np.array(hexes, dtype="S17") if hexes else np.zeros(0, "S17")
        if hex_arr.size and np.char.str_len(hex_arr).max() > 16:
            # more than 16 digits: their value may still fit 64 bits (zero-padded, as cycles
            # may be); read without the leading zeros (a Python pass: this case only)
            hexes = [h.lstrip("0") or "0" if len(h) > 16 else h for h in hexes]
            hex_arr = np.array(hexes, dtype="S17")
        if hex_arr.size and np.char.str_len(hex_arr).max() > 16:
            i = int(np.argmax(np.char.str_len(hex_arr) > 16))
            raise TraceError(
                "address does not fit 64 bits", file=str(path), line=_line_of(i, None, text)
            )
        out["addr"] = _parse_hex(hex_arr.astype("S16"))
        out["write"] = write
        return out
    lines = text.split("\n")
    matches = [fmt.line.fullmatch(ln) for ln in lines]
    if not all(matches):
        for i, (ln, m) in enumerate(zip(lines, matches, strict=True)):
            if m is None and ln.strip() and not ln.lstrip().startswith("#"):
                raise TraceError(
                    f"malformed {fmt.name} trace line {ln.strip()[:60]!r} (expected {fmt.expect})",
                    file=str(path),
                    line=i + 1,
                )
    found = [m for m in matches if m is not None]  # blank and comment lines dropped
    addrs, write, cycles = fmt.line_fields(found)
    if cycles is not None:
        arrival = _check_cycles(cycles, lines=lines, text=text, path=path)
    try:
        addr = np.fromiter((_address(a) for a in addrs), np.uint64, len(addrs))
    except (OverflowError, ValueError):
        i = next(k for k, a in enumerate(addrs) if not 0 <= _address_or_none(a, -1) < 2**64)
        zeros = _address_or_none(addrs[i], -1) == -1
        raise TraceError(
            f"address {addrs[i][:30]!r} has a leading zero: write it in hex (0x...) or "
            "without the zeros (decimal)"
            if zeros
            else "address does not fit 64 bits",
            file=str(path),
            line=_line_of(i, lines, text),
        ) from None
    out = np.empty(addr.shape[0], fmt.dtype)
    out["addr"] = addr
    out["write"] = write
    if cycles is not None:
        out["arrival"] = arrival
    return out


def _address(text: str) -> int:
    """A trace line's address: hex with ``0x`` (any number of digits), else decimal. A decimal
    with a leading zero raises ValueError: C's strtoull reads it as octal, DRAMsim3 as hex."""
    if text[:2] in ("0x", "0X"):
        return int(text, 16)
    if text[:1] == "0" and text.strip("0"):
        raise ValueError(f"a decimal address with a leading zero: {text!r}")
    # more than 20 digits is past 2^64 (and past 4,300, int() refuses the text: ValueError)
    return int(text, 10) if len(text) <= 20 else 2**64


def _address_or_none(text: str, default: int) -> int:
    try:
        return _address(text)
    except ValueError:
        return default


# The latest arrival cycle taken (chosen: 2^62, far beyond any trace, within the engine's
# signed 64-bit cycle counts with room for the latencies added to it)
MAX_ARRIVAL_CYCLE = 2**62


def _line_of(i: int, lines: list[str] | None, text: str) -> int:
    """The line number (1-based) of the ``i``-th request: blank and comment lines skipped (an
    error's path only: a pass over the text in Python)."""
    lines = text.split("\n") if lines is None else lines
    content = (n for n, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#"))
    return next(n for k, n in enumerate(content) if k == i) + 1


def _check_cycles(cycles, *, lines, text: str, path: Path) -> np.ndarray:
    """The DRAMsim3 arrival cycles (uint64), which must not decrease (DRAMsim3 itself issues a
    trace in file order and waits for each line's cycle): an out-of-order trace raises, naming
    the first line whose cycle is below the one before it; so does a cycle above 2^62."""
    raw = np.array(cycles, dtype="S") if len(cycles) else np.zeros(0, "S1")
    if raw.size and np.char.str_len(raw).max() > 19:
        # a number of 20 digits or more: above 2^62, or written with leading zeros
        # (past 4,300 digits int() refuses the text: a number without its leading zeros of
        # more than 19 digits is above 2^62 whatever they are)
        digits = [v.lstrip("0") or "0" for v in cycles]
        exact = [int(v) if len(v) <= 19 else MAX_ARRIVAL_CYCLE + 1 for v in digits]
        big = next((k for k, v in enumerate(exact) if v > MAX_ARRIVAL_CYCLE), None)
        if big is not None:
            raise _above_max(path, _line_of(big, lines, text))
        c = np.array(exact, np.uint64)
    else:
        c = raw.astype(np.uint64)
    if c.size and int(c.max()) > MAX_ARRIVAL_CYCLE:
        raise _above_max(path, _line_of(int(np.argmax(c > MAX_ARRIVAL_CYCLE)), lines, text))
    bad = np.flatnonzero(c[1:] < c[:-1])
    if not bad.size:
        return c
    i = int(bad[0]) + 1  # the i-th request (0-based) arrives before the one before it
    raise TraceError(
        f"DRAMsim3 cycle {int(c[i])} is below the previous line's {int(c[i - 1])}: trace cycles "
        "must not decrease",
        file=str(path),
        line=_line_of(i, lines, text),
    )


def _above_max(path: Path, line: int) -> TraceError:
    return TraceError(
        f"a DRAMsim3 cycle above {MAX_ARRIVAL_CYCLE:,} (2^62): the engine's cycle counts would "
        "overflow",
        file=str(path),
        line=line,
    )


def write_trace(requests: np.ndarray, path: str | os.PathLike, fmt: str = "ramulator") -> None:
    """Write requests as a trace in the format :data:`TRACE_FORMATS` names (gzip if the name
    ends in ``.gz``), atomically.

    DRAMsim3 lines get the requests' ``arrival`` cycles where they have them, else arrival
    cycle = index (one per cycle)."""
    if fmt not in TRACE_FORMATS:
        raise TraceError(TRACE_FORMATS.unknown_message(fmt))
    path = Path(path)
    addr = np.asarray(requests["addr"], np.uint64)
    write = np.asarray(requests["write"], bool)
    body = TRACE_FORMATS.get(fmt).body(requests, addr, write)
    data = (body + "\n").encode("ascii") if len(addr) else b""
    # nmp.fileio (tempfile): loaded on use, not at every replay's start-up
    from nmp.fileio import atomic_write_bytes

    atomic_write_bytes(path, gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


# ---------------------------------------------------------------------------------------------
# The trace formats: how each is recognized, parsed (a whole-text fast path and a per-line one)
# and written.


@dataclass(frozen=True)
class TraceFormat:
    """One text trace format; :func:`read_trace` takes the first whose ``starts`` accepts the
    trace's first content line (registration order; the last accepts any)."""

    name: str
    description: str
    line: re.Pattern[str]  # one line (fullmatch), lenient
    whole: re.Pattern[str]  # every line at once (findall), strict: the fast path
    expect: str  # a line's form, for the error that names a malformed one
    timed: bool  # lines carry an arrival cycle (the requests get ``arrival``)
    starts: Callable[[str], bool]
    # fast-path groups -> (hex digits, write flags, cycles or None)
    fast_fields: Callable[[list[Any]], tuple[Sequence[Any], Any, Sequence[Any] | None]]
    # per-line matches -> (address texts, write flags, cycle texts or None)
    line_fields: Callable[[list[re.Match[str]]], tuple[list[str], Any, list[str] | None]]
    body: Callable[[np.ndarray, np.ndarray, np.ndarray], str]  # requests -> the text

    @property
    def dtype(self) -> np.dtype:
        return ARRIVAL_DTYPE if self.timed else REQUEST_DTYPE


TRACE_FORMATS: Registry[TraceFormat] = Registry("trace format")


def _ramulator_fast(fast: list[Any]) -> tuple[Sequence[Any], Any, None]:
    ops, hexes = zip(*fast, strict=True) if fast else ((), ())
    return hexes, np.array(ops, dtype="S2") == b"ST", None


def _ramulator_lines(found: list[re.Match[str]]) -> tuple[list[str], Any, None]:
    write = np.fromiter((m.group(1) == "ST" for m in found), bool, len(found))
    return [m.group(2) for m in found], write, None


def _ramulator_body(requests: np.ndarray, addr: np.ndarray, write: np.ndarray) -> str:
    ops = np.where(write, "ST", "LD")
    return "\n".join(f"{o} {a:#x}" for o, a in zip(ops.tolist(), addr.tolist(), strict=True))


def _dramsim3_fast(fast: list[Any]) -> tuple[Sequence[Any], Any, Sequence[Any]]:
    hexes, ops, cycles = zip(*fast, strict=True) if fast else ((), (), ())
    return hexes, np.array(ops, dtype="S5") == b"WRITE", cycles


def _dramsim3_lines(found: list[re.Match[str]]) -> tuple[list[str], Any, list[str]]:
    write = np.fromiter((m.group(2)[0] in "Ww" for m in found), bool, len(found))
    return [m.group(1) for m in found], write, [m.group(3) for m in found]


def _dramsim3_body(requests: np.ndarray, addr: np.ndarray, write: np.ndarray) -> str:
    ops = np.where(write, "WRITE", "READ")
    names = requests.dtype.names or ()
    cycles = (
        np.asarray(requests["arrival"], np.uint64).tolist()
        if "arrival" in names
        else range(len(addr))
    )
    return "\n".join(
        f"{a:#x} {o} {c}" for c, o, a in zip(cycles, ops.tolist(), addr.tolist(), strict=True)
    )


TRACE_FORMATS.register(
    TraceFormat(
        "ramulator",
        "Ramulator LoadStore: 'LD|ST 0x<addr>' (offered at the frontend rate)",
        _RAMULATOR,
        _RAMULATOR_ALL,
        "'LD|ST 0x<addr>'",
        timed=False,
        starts=lambda first: first.lstrip()[:2].upper() in ("LD", "ST"),
        fast_fields=_ramulator_fast,
        line_fields=_ramulator_lines,
        body=_ramulator_body,
    )
)
TRACE_FORMATS.register(
    TraceFormat(
        "dramsim3",
        "DRAMsim3: '0x<addr> READ|WRITE <cycle>' (no request before its cycle)",
        _DRAMSIM3,
        _DRAMSIM3_ALL,
        "'0x<addr> READ|WRITE <cycle>'",
        timed=True,
        starts=lambda first: True,  # the fallback: any trace that is not Ramulator's
        fast_fields=_dramsim3_fast,
        line_fields=_dramsim3_lines,
        body=_dramsim3_body,
    )
)
