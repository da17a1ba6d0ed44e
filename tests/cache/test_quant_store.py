"""L2's quantization stays within its stated bound; the key-value stores round-trip every row."""

import numpy as np
import pytest

from nmp.cache import quant
from nmp.cache.kvstore import BACKENDS, measure_reads, open_store
from nmp.errors import NmpError


@pytest.mark.parametrize("dtype", quant.L2_FORMATS.names())
def test_error_within_bound_on_every_element(dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3000, 16)).astype(np.float32) * rng.uniform(1e-4, 30, (3000, 1))
    x[0] = 0.0  # a constant row: step 0
    x[1, :] = 1e-30  # fp16 underflow
    err = np.abs(quant.quantize_dequantize(x, dtype) - x)
    bound = quant.error_bound(x, dtype)
    assert (err <= bound).all()
    # the bound is tight: some element comes within 20 % of it
    assert (err / np.maximum(bound, 1e-300)).max() > 0.8


def test_row_bytes_and_errors():
    assert quant.row_bytes(16, "fp16") == 32
    assert quant.row_bytes(16, "int8") == 16 + 8
    assert quant.row_bytes(15, "int4") == 8 + 8
    with pytest.raises(NmpError, match="unknown L2 dtype"):
        quant.row_bytes(16, "int2")
    with pytest.raises(NmpError, match="fp16's range"):
        quant.quantize_dequantize(np.full((1, 4), 1e6, np.float32), "fp16")


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_backend_round_trips_every_row(tmp_path, backend):
    rng = np.random.default_rng(1)
    keys = np.unique(rng.integers(0, 1 << 40, 3000))
    rows = rng.standard_normal((keys.size, 16)).astype(np.float32)
    store = open_store(backend, tmp_path, 16)
    try:
        store.put_rows(keys, rows)
        back = store.get_rows(keys[::-1])
        assert np.array_equal(back, rows[::-1])  # every row, bit for bit, in any order
        off = np.arange(0, 261, 26)
        m = measure_reads(store, keys[:260], off)
        assert m["lookups_measured"] == 260 and m["lookups_per_s"] > 0
        with pytest.raises(NmpError, match="not in the table"):
            store.get_rows(np.array([-5]))
    finally:
        store.close()


def test_unknown_backend(tmp_path):
    with pytest.raises(NmpError, match="unknown backend 'redis'"):
        open_store("redis", tmp_path, 4)


# Under `ulimit -v` of 2 GiB: the map was a fixed 16 GiB of address space, which lmdb could
# not reserve (an internal MemoryError); sized to the rows it fits, and holds them all
LMDB_ULIMIT_SCRIPT = """
import resource, sys, tempfile
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, resource.RLIM_INFINITY))
from nmp.cache.kvstore import open_store
rng = np.random.default_rng(3)
keys = np.unique(rng.integers(0, 1 << 40, 200_000))
rows = rng.standard_normal((keys.size, 64)).astype(np.float32)
with tempfile.TemporaryDirectory() as folder:
    store = open_store("lmdb", folder, 64, keys.size)
    store.put_rows(keys, rows)
    assert np.array_equal(store.get_rows(keys[::997]), rows[::997])
    store.close()
print("ok")
"""


def test_lmdb_map_is_sized_to_its_rows() -> None:
    import subprocess
    import sys

    pytest.importorskip("lmdb")
    run = subprocess.run(
        [sys.executable, "-c", LMDB_ULIMIT_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
