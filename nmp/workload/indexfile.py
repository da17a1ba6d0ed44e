"""User index files: a batch of lookups saved as ``.npz``.

Format (``np.savez``; no pickled objects, the file is opened with ``allow_pickle=False``):

* ``indices_<t>`` int [n_t] and ``offsets_<t>`` int [batch + 1] for tables t = 0..T-1
  (contiguous), EmbeddingBag convention: offsets[0] = 0, non-decreasing, offsets[-1] = n_t;
* optional ``weights_<t>`` float [n_t] (per-sample weights);
* optional ``num_rows`` int [T] and ``dims`` int [T] (written by :func:`save_index_file`).
* A single-table file may use the bare keys ``indices``, ``offsets``, ``weights``.

Integer arrays of any integer dtype are accepted and converted to int64, weights to float32.
Table sizes come from ``num_rows``/``dims`` or from the ``workload`` argument (both given: they
must agree); with neither, ``num_rows`` is taken as max index + 1 and ``dims`` is required.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.fileio import atomic_file, open_regular
from nmp.workload.batch import LookupBatch, TableLookups, lookup_problem
from nmp.workload.spec import WorkloadSpec

_KEY = re.compile(r"^(indices|offsets|weights)_([0-9]+)$")  # (ASCII digits: \d takes others)


def _int_array(arr: np.ndarray, file: str, key: str) -> np.ndarray:
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise TraceError(
            f"must be a 1-D integer array, got {arr.dtype} {arr.shape}", file=file, key=key
        )
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise TraceError("value does not fit in int64", file=file, key=key)
    return arr.astype(np.int64, copy=False)


def load_index_file(path: str | Path, workload: WorkloadSpec | None = None) -> LookupBatch:
    """Read an index file (see the module docstring) into a validated :class:`LookupBatch`.
    Every problem raises :class:`~nmp.errors.TraceError` naming the file and the key."""
    file = str(path)
    try:
        with open_regular(file) as fh:  # a pipe, a device, a folder: refused, never blocked on
            magic = fh.read(4)
    except NmpError as exc:
        raise TraceError(exc.message, file=file) from None
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", file=file) from None
    if magic != b"PK\x03\x04":  # an .npz is a zip archive; numpy would call anything else pickled
        raise TraceError("not an .npz archive (np.savez writes one)", file=file)
    arrays = read_npz(file)
    return _from_arrays(arrays, file, workload)


def _archive_errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged archive member raises: zipfile's and the OS's errors, and the
    decompressors' own (zlib.error, lzma.LZMAError: neither is an OSError), which escaped as
    internal errors."""
    import zipfile

    errors: list[type[BaseException]] = [zipfile.BadZipFile, OSError, EOFError, ValueError]
    try:
        import zlib

        errors.append(zlib.error)
    except ImportError:  # pragma: no cover (an interpreter built without zlib)
        pass
    try:
        import lzma

        errors.append(lzma.LZMAError)
    except ImportError:  # pragma: no cover (an interpreter built without lzma)
        pass
    return tuple(errors)


# The compression methods zipfile reads (stored, deflate, bzip2, lzma); any other raised
# NotImplementedError when a member was opened.
_METHODS = {0: "stored", 8: "deflate", 12: "bzip2", 14: "lzma"}


@contextlib.contextmanager
def _open_archive(file: str) -> Iterator[Any]:
    """The archive ``file``, read from the descriptor that was checked to be a regular file
    (a pipe, a device, a folder: refused, never blocked on; a file swapped for a pipe after
    the check is not the one read)."""
    import zipfile

    with contextlib.ExitStack() as stack:
        try:
            fh = stack.enter_context(open_regular(file))
        except NmpError as exc:
            raise TraceError(exc.message, file=file) from None
        try:
            archive = stack.enter_context(zipfile.ZipFile(fh))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise TraceError(
                f"not a whole .npz archive (truncated or corrupt: {exc})", file=file
            ) from None
        yield archive


def _members(archive, file: str) -> list[tuple[int, str, Any, tuple[int, ...]]]:
    """(bytes, key, zip entry, shape) of each array, as the headers declare them (nothing
    decompressed): a size its entry cannot hold raises."""
    members = []
    seen: dict[tuple[str, int], str] = {}  # (part, table) -> the member's key
    for info in archive.infolist():
        key = info.filename.removesuffix(".npy")
        if not info.filename.endswith(".npy"):
            raise TraceError("not an array (.npy) in the archive", file=file, key=key)
        _check_numbering(key, seen, file)
        if info.flag_bits & 0x1:
            raise TraceError("encrypted: np.savez writes no password", file=file, key=key)
        if info.compress_type not in _METHODS:
            raise TraceError(
                f"compression method {info.compress_type} is not one zipfile reads "
                f"({', '.join(_METHODS.values())})",
                file=file,
                key=key,
            )
        shape, dtype = _npy_header(archive, info, file, key)
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > info.file_size:
            raise TraceError(
                f"declares {nbytes:,} bytes of array in {info.file_size:,} bytes: corrupt",
                file=file,
                key=key,
            )
        members.append((nbytes, key, info, shape))
    return members


def _check_numbering(key: str, seen: dict[tuple[str, int], str], file: str) -> None:
    """Raise :class:`TraceError` where member ``key`` is the same table's part as one ``seen``
    (``indices_0`` and ``indices_00``, ``indices`` and ``indices_0``, a name twice in the
    zip): one of them was read and the other dropped."""
    numbered = _KEY.match(key)
    if numbered:
        slot = (numbered.group(1), int(numbered.group(2)))
    elif key in ("indices", "offsets", "weights"):
        slot = (key, 0)  # (the one-table form: table 0)
    else:
        return
    other = seen.get(slot)
    if other == key:
        raise TraceError(
            "ambiguous: in the archive twice (one would be dropped)", file=file, key=key
        )
    if other is not None:
        raise TraceError(
            f"ambiguous table numbering: {other} and {key} are both table {slot[1]}'s "
            f"{slot[0]} (one would be dropped)",
            file=file,
            key=key,
        )
    seen[slot] = key


def index_file_estimate(path: str | Path):
    """The resource guard's estimate (:mod:`nmp.guard`) of reading an index file, from the
    sizes its arrays declare: for a command's ``--max-memory``, checked before a run starts."""
    import nmp.guard as guard

    file = str(path)
    with _open_archive(file) as archive:
        declared = sum(m[0] for m in _members(archive, file))
    return guard.array_file_estimate(declared, file)


def index_file_lookups(path: str | Path) -> int:
    """How many lookups an index file holds, as its ``indices`` arrays' headers declare them
    (nothing decompressed): for a guard of what a run over them allocates, before the read."""
    file = str(path)
    with _open_archive(file) as archive:
        members = _members(archive, file)
    return sum(
        int(np.prod(shape, dtype=object))
        for _, key, _, shape in members
        if key == "indices" or key.startswith("indices_")
    )


def read_npz(file: str, *, max_memory: str | None = None) -> dict[str, np.ndarray]:
    """The arrays of an index file, read with bounds. Before anything is decompressed, the
    sizes its members declare (in the zip directory and in each array's header) must agree
    and fit the resource guard's limit (:mod:`nmp.guard`); arrays are then read smallest
    first, and a table's ``indices``/``weights`` only once its ``offsets`` say how many
    entries they hold: a small archive that would inflate to gigabytes is refused by name,
    not decompressed. A truncated or corrupt archive, a member that is not an array, or an
    array of pickled objects raises :class:`TraceError`."""

    import nmp.guard as guard

    with _open_archive(file) as archive:
        members = _members(archive, file)
        guard.check(guard.array_file_estimate(sum(m[0] for m in members), file), max_memory)
        arrays: dict[str, np.ndarray] = {}
        for _, key, info, shape in sorted(members, key=lambda m: (m[0], m[1])):
            numbered = _KEY.match(key)
            part = numbered.group(1) if numbered else key
            offsets_key = f"offsets_{numbered.group(2)}" if numbered else "offsets"
            offsets = arrays.get(offsets_key)
            known_end = (
                offsets is not None
                and offsets.ndim == 1
                and offsets.size > 0
                and np.issubdtype(offsets.dtype, np.integer)
            )
            if part in ("indices", "weights", "offsets") and len(shape) != 1:
                raise TraceError(
                    f"must be a 1-D array, got shape {shape}", file=file, key=key
                )  # (before it is decompressed: the shape is the header's)
            if (
                part in ("indices", "weights")
                and offsets is not None
                and known_end
                and (len(shape) != 1 or shape[0] != int(offsets[-1]))
            ):
                # refused before it is decompressed (the shape is the header's)
                n, end = " x ".join(f"{d}" for d in shape), int(offsets[-1])
                if part == "indices":
                    raise TraceError(
                        f"offsets[-1] must equal len(indices) = {n}, got {end}",
                        file=file,
                        key=offsets_key,
                    )
                raise TraceError(
                    f"weights has {n} entries, offsets end at {end}", file=file, key=key
                )
            try:
                with archive.open(info) as fh:
                    arrays[key] = np.lib.format.read_array(fh, allow_pickle=False)
            except _archive_errors() as exc:
                raise TraceError(f"unreadable array ({exc})", file=file, key=key) from None
    return dict(sorted(arrays.items()))


def _npy_header(archive, info, file: str, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) that a member's .npy header declares, read without its data."""

    try:
        with archive.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read(fh)
    except _archive_errors() as exc:
        raise TraceError(f"unreadable array header ({exc})", file=file, key=key) from None
    if dtype.hasobject:
        raise TraceError("object arrays are not accepted (no pickles)", file=file, key=key)
    return shape, dtype


def _from_arrays(
    arrays: dict[str, np.ndarray], file: str, workload: WorkloadSpec | None
) -> LookupBatch:
    if "indices" in arrays or "offsets" in arrays:
        renamed = {}
        for k, v in arrays.items():
            renamed[f"{k}_0" if k in ("indices", "offsets", "weights") else k] = v
        arrays = renamed
    known = {"num_rows", "dims"}
    tables: dict[int, dict[str, np.ndarray]] = {}
    for key, arr in arrays.items():
        m = _KEY.match(key)
        if m:
            tables.setdefault(int(m.group(2)), {})[m.group(1)] = arr
        elif key not in known:
            raise TraceError(
                "unknown key (expected indices_<t>, offsets_<t>, weights_<t>, num_rows, dims)",
                file=file,
                key=key,
            )
    if not tables:
        raise TraceError("no tables: expected keys indices_0, offsets_0, ...", file=file)
    count = max(tables) + 1
    for t in range(count):
        for part in ("indices", "offsets"):
            if part not in tables.get(t, {}):
                raise TraceError(
                    "missing (tables must be numbered 0..T-1)", file=file, key=f"{part}_{t}"
                )
    if workload is not None and len(workload.tables) != count:
        raise TraceError(
            f"file has {count} tables, workload '{workload.name}' has {len(workload.tables)}",
            file=file,
        )
    sizes: dict[str, np.ndarray | None] = {}
    for key in ("num_rows", "dims"):
        size = arrays.get(key)
        if size is not None:
            size = _int_array(np.atleast_1d(size), file, key)
            if size.shape[0] != count:
                raise TraceError(f"must have one entry per table ({count})", file=file, key=key)
            if (size < 1).any():
                raise TraceError("entries must be >= 1", file=file, key=key)
        sizes[key] = size
    out = []
    batch = None
    for t in range(count):
        parts = tables[t]
        indices = _int_array(parts["indices"], file, f"indices_{t}")
        offsets = _int_array(parts["offsets"], file, f"offsets_{t}")
        weights = parts.get("weights")
        if weights is not None:
            if weights.ndim != 1 or not np.issubdtype(weights.dtype, np.floating):
                raise TraceError(
                    f"must be a 1-D float array, got {weights.dtype}", file=file, key=f"weights_{t}"
                )
            weights = weights.astype(np.float32, copy=False)
        num_rows, dim = _table_size(t, indices, sizes, workload, file)
        problem = lookup_problem(indices, offsets, weights, num_rows)
        if problem:
            key = (
                f"offsets_{t}"
                if problem.startswith("offsets")
                else f"weights_{t}"
                if problem.startswith("weights")
                else f"indices_{t}"
            )
            raise TraceError(problem, file=file, key=key)
        if batch is None:
            batch = offsets.shape[0] - 1
            if batch < 1:
                raise TraceError(
                    "no bags (batch 0): offsets need batch + 1 >= 2 entries",
                    file=file,
                    key=f"offsets_{t}",
                )
        elif offsets.shape[0] - 1 != batch:
            raise TraceError(
                f"{offsets.shape[0] - 1} bags, table 0 has {batch}", file=file, key=f"offsets_{t}"
            )
        out.append(TableLookups(indices, offsets, weights, num_rows, dim))
    return LookupBatch(tuple(out))


def _table_size(t, indices, sizes, workload, file) -> tuple[int, int]:
    rows = None if sizes["num_rows"] is None else int(sizes["num_rows"][t])
    dim = None if sizes["dims"] is None else int(sizes["dims"][t])
    if workload is not None:
        spec = workload.tables[t]
        for key, mine, theirs in (("num_rows", rows, spec.rows), ("dims", dim, spec.dim)):
            if mine is not None and mine != theirs:
                raise TraceError(
                    f"table {t}: file says {mine}, workload '{workload.name}' says {theirs}",
                    file=file,
                    key=key,
                )
        return spec.rows, spec.dim
    if dim is None:
        raise TraceError("missing: give dims in the file or pass a workload", file=file, key="dims")
    if rows is None:
        rows = int(indices.max()) + 1 if indices.size else 1
    return rows, dim


def save_index_file(batch: LookupBatch, path: str | Path) -> None:
    """Write ``batch`` in the format :func:`load_index_file` reads (atomically: a temporary
    file in the same folder, then ``os.replace``)."""
    batch.check("save_index_file")
    arrays: dict[str, np.ndarray] = {
        "num_rows": np.array([t.num_rows for t in batch.tables], dtype=np.int64),
        "dims": np.array([t.dim for t in batch.tables], dtype=np.int64),
    }
    for i, t in enumerate(batch.tables):
        arrays[f"indices_{i}"] = t.indices
        arrays[f"offsets_{i}"] = t.offsets
        if t.weights is not None:
            arrays[f"weights_{i}"] = t.weights
    path = Path(path)
    if path.suffix != ".npz":
        raise NmpError("index files end in .npz", file=str(path))
    with atomic_file(path) as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
