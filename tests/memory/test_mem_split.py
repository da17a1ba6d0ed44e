"""A request array's fields read in one C pass (nmp.memory.native's ``split_requests``, the
path of ``replay()`` without a timeline): the same columns and reductions as numpy's, for any
record layout and stride, and the same MemStats as the replay of numpy's copies."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.errors import TraceError
from nmp.memory import driver, load_memory, make_requests, native, replay

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")


def _layouts() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    n = 3000
    addr = rng.integers(0, 1 << 33, n).astype(np.uint64) * np.uint64(64)
    write = rng.random(n) < 0.3
    plain = make_requests(addr, write)
    timed = make_requests(addr, write, arrival=np.arange(n))
    other = np.zeros(n, [("write", "?"), ("pad", "<i4"), ("addr", "<u8")])  # other offsets
    other["addr"], other["write"] = addr, write
    odd = plain.copy()
    odd.view(np.uint8).reshape(n, 9)[::7, 8] = 2  # a bool byte that is neither 0 nor 1
    return [plain, timed, other, odd, plain[::-1], plain[1::3], plain[:0], make_requests(addr)]


@pytest.mark.parametrize("k", range(8))
def test_split_requests_matches_numpy(k):
    requests = _layouts()[k]
    split = native.split_requests(requests)
    assert split is not None
    addr, write, (top, writes, any_bits, all_bits) = split
    want_addr = np.ascontiguousarray(requests["addr"])
    want_write = requests["write"].view(np.uint8) != 0
    np.testing.assert_array_equal(addr, want_addr)
    np.testing.assert_array_equal(write, want_write)
    assert write.dtype == np.bool_ and write.view(np.uint8).max(initial=0) <= 1
    assert writes == int(want_write.sum())
    if len(want_addr):
        assert top == int(want_addr.max())
        assert any_bits == int(np.bitwise_or.reduce(want_addr))
        assert all_bits == int(np.bitwise_and.reduce(want_addr))


def test_split_requests_declines_other_arrays():
    assert native.split_requests(np.zeros(4, [("addr", "<u4"), ("write", "?")])) is None
    assert native.split_requests(np.zeros(4, [("addr", ">u8"), ("write", "?")])) is None
    assert native.split_requests(np.zeros((2, 2), make_requests([0]).dtype)) is None


@pytest.mark.parametrize("drain", [True, False])
def test_replay_of_split_fields_identical(drain, monkeypatch):
    spec = load_memory("ddr4-3200aa")
    rng = np.random.default_rng(9)
    n = 2000
    bank_lines = rng.integers(0, 1 << 12, n).astype(np.uint64) * np.uint64(1 << 20)  # narrowed
    cases = [
        make_requests(rng.integers(0, 1 << 24, n) * 64, rng.random(n) < 0.4),
        make_requests(rng.integers(0, 1 << 24, n) * 64, arrival=np.arange(n) * 3),
        make_requests(bank_lines),
        make_requests(rng.integers(0, 1 << 24, n) * 64)[::-2],
    ]
    fast = [replay(r, spec, drain=drain).to_json() for r in cases]
    monkeypatch.setattr(native, "split_requests", lambda requests: None)
    assert fast == [replay(r, spec, drain=drain).to_json() for r in cases]


def test_split_replay_names_the_address_beyond_capacity(monkeypatch):
    spec = load_memory("ddr4-3200aa")
    requests = make_requests([0, 64, spec.capacity_bytes])
    with pytest.raises(TraceError) as fast:
        replay(requests, spec)
    monkeypatch.setattr(native, "split_requests", lambda requests: None)
    with pytest.raises(TraceError) as slow:
        replay(requests, spec)
    assert str(fast.value) == str(slow.value)
    assert driver._summary_path(spec)


@pytest.mark.parametrize("n", [0, 1, 7, 3000])
def test_line_bounds_match_numpy(n):
    rng = np.random.default_rng(n)
    addr = rng.integers(0, 1 << 63, n, dtype=np.uint64) | np.uint64(1 << 6)
    top, any_bits, all_bits = native.line_bounds(addr)
    if n == 0:
        assert (top, any_bits, all_bits) == (0, 0, 0)
        return
    assert top == int(addr.max())
    assert any_bits == int(np.bitwise_or.reduce(addr))
    assert all_bits == int(np.bitwise_and.reduce(addr))
    assert all_bits & (1 << 6) and any_bits >= top


def test_replay_lines_many_out_of_range_names_the_address():
    spec = load_memory("ddr4-3200aa")
    ok = np.arange(0, 64 * 100, 64, dtype=np.uint64)
    far = ok.copy()
    far[37] = np.uint64(1 << 62)
    with pytest.raises(TraceError, match=hex(1 << 62)):
        driver.replay_lines_many([ok, far], spec)
