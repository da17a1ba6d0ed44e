"""User request files: inference requests as text, one request per line.

Format (UTF-8 text; ``#`` starts a comment line; blank lines are skipped)::

    # nmp requests: user, then the rows of each of the workload's T tables
    u17<TAB>1460<TAB>3<TAB>...<TAB>12
    u4<TAB>9,120<TAB><TAB>...

* a line is ``T + 1`` fields separated by one tab: the user (any token without tabs, e.g. a
  user id), then for each table, in the workload's order, the rows the request looks up there:
  comma-separated row ids (``0 <= row < rows of the table``), one for a one-hot feature, several
  for a multi-hot one, none (an empty field) for a feature the request does not have;
* the requests are served in file order.

:func:`load_request_file` checks every line and raises :class:`~nmp.errors.TraceError` naming
the file and the line (and the table) of the first problem: a wrong field count, a row that is
not an integer or is out of range, bytes that are not UTF-8, a file with no request, a file
over :data:`MAX_BYTES`.
:func:`save_request_file` writes the format (atomically), e.g. the users generator's requests
(``nmp cache --request-model users --save-requests FILE``) for a user to inspect or edit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.fileio import atomic_file, read_regular
from nmp.guard import Estimate
from nmp.workload import LookupBatch, TableLookups, WorkloadSpec

MAX_BYTES = 1 << 30  # a file is read whole; split a larger one (it is not a stream format)
# Peak memory of a parse per byte of file: measured 20.7 (1.14 GB for a 55 MB one-hot
# criteo-kaggle file, ru_maxrss growth of load_request_file), rounded up: its fields are
# Python strings before numpy takes them (a 1 GiB file would need ~22 GB)
PARSE_BYTES_PER_FILE_BYTE = 24


def request_file_estimate(path: str | Path) -> Estimate:
    """The memory :func:`load_request_file` takes for ``path`` (its size times
    :data:`PARSE_BYTES_PER_FILE_BYTE`), known before it is read: ``nmp cache`` checks it
    against ``--max-memory`` first. A path that is not a regular file estimates 0 (the read
    refuses it)."""
    try:
        st = os.stat(path)
        size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    except OSError:
        size = 0
    return Estimate(
        size * PARSE_BYTES_PER_FILE_BYTE,
        "--request-file",
        f"{size:,} bytes of requests parsed",
        file=str(path),
    )


HEADER = "# nmp requests: user, then the rows of each table (comma-separated), tab-separated\n"


def load_request_file(path: str | Path, spec: WorkloadSpec) -> tuple[LookupBatch, list[str]]:
    """The requests of ``path`` as one :class:`LookupBatch` (bag r = request r) and the user of
    each request; every problem raises a TraceError naming the file and line.

    The rows are parsed a table (column) at a time with numpy; where a column fails a check,
    the lines are re-read one by one to name the first bad one."""
    file = str(path)
    try:
        data = read_regular(file, MAX_BYTES)  # a pipe, a device, a folder: refused, unblocked
    except NmpError as exc:
        raise TraceError(exc.message, file=file) from None
    if len(data) > MAX_BYTES:
        raise TraceError(f"larger than {MAX_BYTES >> 30} GiB: split it", file=file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
        raise TraceError("not UTF-8 text", file=file, line=bad_line) from None
    nul = text.find("\x00")
    if nul >= 0:  # numpy's strings drop trailing NULs: '1\x00' was read as row 1
        raise TraceError("a NUL byte: binary data, not text", file=file, line=_line_of(text, nul))
    n_tables = len(spec.tables)
    numbers: list[int] = []
    records: list[list[str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != n_tables + 1:
            raise TraceError(
                f"expected {n_tables + 1} tab-separated fields (user + {n_tables} tables), "
                f"got {len(fields)}",
                file=file,
                line=number,
            )
        if not fields[0].strip():
            raise TraceError("empty user field", file=file, line=number)
        numbers.append(number)
        records.append(fields)
    if not records:
        raise TraceError("no request in the file", file=file)
    columns = list(zip(*records, strict=True))
    tables = []
    for t, tspec in enumerate(spec.tables):
        parsed = _column(np.array(columns[t + 1]), tspec.rows)
        if parsed is None:  # name the first bad line
            for number, field in zip(numbers, columns[t + 1], strict=True):
                _rows(field, tspec.rows, file, number, t)
            raise AssertionError("a column failed its checks but no line did")  # unreachable
        idx, lengths = parsed
        offsets = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tables.append(TableLookups(idx, offsets, None, tspec.rows, tspec.dim))
    return LookupBatch(tuple(tables)), list(columns[0])


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


# a row index of more digits may not fit int64 (the conversion would overflow); no table has
# 10^18 rows, so such a row is out of range and the line-by-line check says which line
MAX_ROW_DIGITS = 18


def _column(fields: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, rows per request) of one table's fields, or None if any field is malformed."""
    stripped = np.char.strip(fields)
    empty = stripped == ""
    lengths = np.where(empty, 0, np.char.count(stripped, ",") + 1).astype(np.int64)
    if not empty.any() and (lengths == 1).all():
        tokens = stripped  # one-hot: one row per field
    else:
        joined = ",".join(stripped[~empty].tolist())
        tokens = np.char.strip(np.array(joined.split(","))) if joined else np.array([], str)
    if tokens.size == 0:
        return np.zeros(0, dtype=np.int64), lengths
    if not "".join(tokens.tolist()).isascii() or not np.char.isdigit(tokens).all():
        return None
    if np.char.str_len(tokens).max() > MAX_ROW_DIGITS:
        # leading zeros are no digits of the row ("0001" is row 1); past int64: the slow path
        tokens = np.char.lstrip(tokens, "0")
        tokens = np.where(tokens == "", "0", tokens)
        if np.char.str_len(tokens).max() > MAX_ROW_DIGITS:
            return None
    rows = tokens.astype(np.int64)
    if rows.max() >= limit:
        return None
    return rows, lengths


def _rows(field: str, limit: int, file: str, line: int, table: int) -> list[int]:
    """One field's rows, checked (the slow path that names a bad line)."""
    if not field.strip():
        return []
    out = []
    for token in field.split(","):
        token = token.strip()
        if not token.isascii() or not token.isdigit():
            raise TraceError(
                f"table {table}: row '{token}' is not a non-negative integer", file=file, line=line
            )
        # (past 4,300 digits int() refuses the text; past MAX_ROW_DIGITS no table has the row;
        # leading zeros are none of its digits)
        digits = token.lstrip("0") or "0"
        row = int(digits) if len(digits) <= MAX_ROW_DIGITS else None
        if row is None or row >= limit:
            shown = token if len(token) <= 40 else f"{token[:20]}...({len(token):,} digits)"
            raise TraceError(
                f"table {table}: row {shown} out of range (the table has {limit} rows)",
                file=file,
                line=line,
            )
        out.append(row)
    return out


def save_request_file(path: str | Path, batch: LookupBatch, users) -> None:
    """Write ``batch`` (bag r of every table = request r) with ``users`` (one per request)."""
    n = batch.batch
    if len(users) != n:
        raise ValueError(f"{len(users)} users for {n} requests")
    if any(not str(u) or set(str(u)) & {"\t", "\n", "\r"} for u in users):
        raise ValueError("a user must be a non-empty token without tabs or line breaks")
    per_table: list[Any] = []
    for lk in batch.tables:
        text = lk.indices.astype(str)
        if lk.indices.size == n and (np.diff(lk.offsets) == 1).all():
            per_table.append(text)  # one-hot: one row per request
        else:
            per_table.append([",".join(p) for p in np.split(text, lk.offsets[1:-1])])
    lines = [HEADER] + [
        "\t".join(map(str, rec)) + "\n" for rec in zip(users, *per_table, strict=True)
    ]
    with atomic_file(path) as fh:
        fh.write("".join(lines).encode("utf-8"))
