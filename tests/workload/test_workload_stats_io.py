"""Access statistics on a hand example; index files round-trip and reject bad input by key."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.errors import TraceError
from nmp.workload import (
    LookupBatch,
    TableLookups,
    access_stats,
    generate_batch,
    load_index_file,
    load_workload,
    save_index_file,
)


def _lookups(indices, offsets, num_rows=10, dim=4, weights=None):
    return TableLookups(
        np.array(indices, dtype=np.int64), np.array(offsets, dtype=np.int64), weights, num_rows, dim
    )


def test_access_stats_hand_example():
    # rows 3 x4, 7 x2, 1 x2, 9 x1 over a 10-row table; 9 accesses
    stats = access_stats(_lookups([3, 7, 3, 1, 3, 9, 1, 7, 3], [0, 4, 9]))
    assert stats.accesses == 9 and stats.unique_rows == 4
    assert stats.untouched_rows == 6 and stats.untouched_fraction == pytest.approx(0.6)
    assert stats.rows.tolist() == [3, 1, 7, 9]  # ties (1, 7) by lower id
    assert stats.counts.tolist() == [4, 2, 2, 1]
    assert stats.coverage(1) == pytest.approx(4 / 9)
    assert stats.coverage(3) == pytest.approx(8 / 9)
    assert stats.coverage(0.2) == pytest.approx(6 / 9)  # 20 % of 10 rows = 2 rows
    assert stats.coverage(100) == 1.0
    assert stats.top_k_coverage([1, 2]) == {1: pytest.approx(4 / 9), 2: pytest.approx(6 / 9)}
    assert stats.hot_rows(2).tolist() == [3, 1]
    assert stats.rows_for_coverage(0.5) == 2 and stats.rows_for_coverage(4 / 9) == 1
    assert stats.dense_counts().tolist() == [0, 2, 0, 4, 0, 0, 0, 2, 0, 1]
    assert stats.reuse_ratio == pytest.approx(9 / 4)


def test_access_stats_of_batches_and_arrays():
    batch = LookupBatch((_lookups([1, 1], [0, 1, 2]), _lookups([2, 5], [0, 2, 2])))
    per_table = access_stats(batch)
    assert [s.unique_rows for s in per_table] == [1, 2]
    pooled = access_stats([batch, batch])
    assert pooled[0].accesses == 4 and pooled[1].counts.tolist() == [2, 2]
    assert access_stats(np.array([4, 4, 0]), num_rows=5).rows.tolist() == [4, 0]
    with pytest.raises(ValueError):
        access_stats(np.array([1]))


def test_index_file_round_trip(tmp_path):
    spec = load_workload("recross-eval", {"weighted": True, "batch": 4})
    batch = generate_batch(spec)
    path = tmp_path / "batch.npz"
    save_index_file(batch, path)
    for back in (load_index_file(path), load_index_file(path, spec)):
        assert len(back) == len(batch) and back.batch == 4
        for a, b in zip(batch, back, strict=True):
            assert np.array_equal(a.indices, b.indices) and np.array_equal(a.offsets, b.offsets)
            assert np.array_equal(a.weights, b.weights)
            assert (a.num_rows, a.dim) == (b.num_rows, b.dim)
    assert not list(tmp_path.glob(".batch-*"))  # no temporary left behind


def test_single_table_bare_keys_and_any_int_dtype(tmp_path):
    path = tmp_path / "one.npz"
    np.savez(
        path,
        indices=np.array([0, 5, 2], dtype=np.int32),
        offsets=np.array([0, 1, 3], dtype=np.uint16),
        dims=np.array([8]),
    )
    batch = load_index_file(path)
    assert batch[0].indices.dtype == np.int64 and batch[0].num_rows == 6 and batch[0].dim == 8


def _write(tmp_path, **arrays):
    path = tmp_path / "bad.npz"
    base = {
        "indices_0": np.array([0, 1, 2]),
        "offsets_0": np.array([0, 2, 3]),
        "dims": np.array([4]),
        "num_rows": np.array([10]),
    }
    base.update(arrays)
    np.savez(path, **{k: v for k, v in base.items() if v is not None})
    return path


@pytest.mark.parametrize(
    ("arrays", "key", "needle"),
    [
        ({"offsets_0": np.array([0, 3, 2, 3])}, "offsets_0", "non-decreasing"),
        ({"offsets_0": np.array([1, 3])}, "offsets_0", "offsets[0] must be 0"),
        ({"offsets_0": np.array([0, 2])}, "offsets_0", "must equal len(indices)"),
        ({"indices_0": np.array([0, 1, 10])}, "indices_0", "out of range"),
        ({"indices_0": np.array([0, -1, 2])}, "indices_0", "negative"),
        ({"indices_0": np.array([0.0, 1.0, 2.0])}, "indices_0", "integer"),
        ({"weights_0": np.array([1.0, 2.0])}, "weights_0", "entries"),
        # a 2-D array was reported as its offsets' mismatch
        ({"indices_0": np.array([[0, 1, 2]])}, "indices_0", "must be a 1-D array"),
        ({"offsets_0": np.array([[0, 2, 3]])}, "offsets_0", "must be a 1-D array"),
        ({"offsets_0": None}, "offsets_0", "missing"),
        ({"indices_2": np.array([0]), "offsets_2": np.array([0, 1])}, "indices_1", "missing"),
        ({"extra": np.array([1])}, "extra", "unknown key"),
        ({"dims": None}, "dims", "missing"),
        ({"num_rows": np.array([10, 10])}, "num_rows", "one entry per table"),
        (
            {
                "indices_1": np.array([0]),
                "offsets_1": np.array([0, 0, 0, 1]),
                "dims": np.array([4, 4]),
                "num_rows": np.array([10, 10]),
            },
            "offsets_1",
            "bags",
        ),
    ],
)
def test_bad_index_files_name_the_key(tmp_path, arrays, key, needle):
    path = _write(tmp_path, **arrays)
    with pytest.raises(TraceError) as info:
        load_index_file(path)
    assert info.value.file == str(path)
    assert info.value.key == key
    assert needle in info.value.message


def test_index_file_must_fit_the_workload(tmp_path):
    spec = load_workload("dlrm-benchmark")
    path = _write(tmp_path)
    with pytest.raises(TraceError, match="has 8"):
        load_index_file(path, spec)
    one = load_workload("dlrm-benchmark", {"num_tables": 1})
    with pytest.raises(TraceError) as info:
        load_index_file(path, one)  # file says 10 rows, workload 1M
    assert info.value.key == "num_rows"


def test_unreadable_index_files(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        load_index_file(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(TraceError, match="not an .npz archive"):
        load_index_file(junk)
    npy = tmp_path / "one.npy"
    np.save(npy, np.arange(3))
    with pytest.raises(TraceError, match="not an .npz archive"):
        load_index_file(npy)
    objects = tmp_path / "objects.npz"
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.array([1]), np.array([1, 2])
    np.savez(objects, indices=ragged, offsets=ragged)
    with pytest.raises(TraceError, match="object"):
        load_index_file(objects)


def _damaged_npz(tmp_path, how: str):
    """A one-table index file whose ``indices`` member is damaged ``how``."""
    import io
    import re
    import struct
    import zipfile

    src = io.BytesIO()
    method = zipfile.ZIP_LZMA if how == "lzma" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(src, "w", compression=method) as zf:
        for key, arr in {
            "indices": np.arange(5000, dtype=np.int64) % 97,
            "offsets": np.array([0, 2500, 5000], dtype=np.int64),
            "dims": np.array([8]),
        }.items():
            with zf.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, arr)
    raw = bytearray(src.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo("indices.npy")
    data = info.header_offset + 30 + len(info.filename) + len(info.extra)
    if how == "deflate":  # a block whose lengths are wrong: zlib.error
        raw[data + 20] ^= 0x55
    elif how == "lzma":  # the LZMA properties: lzma.LZMAError
        raw[data + 2] ^= 0x55
    else:  # the compression method (97) or the encrypted flag, in every header
        for sig, at in ((b"PK\x03\x04", 0), (b"PK\x01\x02", 2)):
            for m in re.finditer(re.escape(sig), bytes(raw)):
                if how == "method":
                    raw[m.start() + 8 + at : m.start() + 10 + at] = struct.pack("<H", 97)
                else:
                    raw[m.start() + 6 + at] |= 1
    path = tmp_path / f"{how}.npz"
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize(
    "how, needle",
    [
        ("deflate", "unreadable array"),
        ("lzma", "unreadable array"),
        ("method", "compression method 97"),
        ("encrypted", "encrypted"),
    ],
)
def test_a_damaged_archive_member_is_named(tmp_path, how, needle) -> None:
    """A corrupt deflate or LZMA stream (zlib.error, lzma.LZMAError), a compression method
    zipfile lacks (NotImplementedError) and an encrypted member (RuntimeError) escaped as
    `nmp cache --index-file`'s "internal error"."""
    path = _damaged_npz(tmp_path, how)
    with pytest.raises(TraceError, match=needle) as err:
        load_index_file(path)
    assert err.value.file == str(path)


def test_the_archive_read_is_the_file_checked(tmp_path) -> None:
    """A path swapped for a named pipe after its check is not opened again by name (which
    blocked): the archive is read from the descriptor that was checked."""
    import subprocess
    import sys

    path = tmp_path / "batch.npz"
    np.savez(path, indices=np.array([0, 1, 2]), offsets=np.array([0, 3]))
    code = (
        "import os, sys\n"
        "import nmp.workload.indexfile as ix\n"
        "real = ix.open_regular\n"
        "def swapping(p, **kw):\n"
        "    cm = real(p, **kw)\n"
        "    class Swap:\n"
        "        def __enter__(self):\n"
        "            fh = cm.__enter__()\n"
        "            fifo = p + '.fifo'\n"
        "            os.mkfifo(fifo)\n"
        "            os.replace(fifo, p)\n"
        "            return fh\n"
        "        def __exit__(self, *a):\n"
        "            return cm.__exit__(*a)\n"
        "    return Swap()\n"
        "ix.open_regular = swapping\n"
        "print(ix.index_file_lookups(sys.argv[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.stdout.strip() == "3", done
