"""The striped parity store: decode exactness, garbage never read, rebuild with buffering."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.coding import XorCode, as_bytes
from nmp.train.codes import make_scheme
from nmp.train.store import DataLossError, StripedStore


def _store(code="xor", r=1, nodes=5, rows=3001, width=17, seed=0):
    st = StripedStore(rows, width, nodes, make_scheme(code, nodes, r), seed=seed)
    rng = np.random.default_rng(seed)
    st.load_all(rng.standard_normal((rows, width)).astype(np.float32))
    return st, st.snapshot_all().copy(), rng


def _updates(st, ref, rng, n=10):
    for _ in range(n):
        rows = np.unique(rng.integers(0, st.total_rows, 300))
        old = st.read(rows)
        new = old + rng.standard_normal(old.shape).astype(np.float32) * 0.01
        st.update(rows, old, new)
        ref[rows] = new


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def test_vectorized_parity_update_equals_coding_xor_update():
    st, ref, rng = _store()
    code = XorCode(st.k)
    parity = st.parity.copy()
    rows = np.unique(rng.integers(0, st.total_rows, 500))
    old = st.read(rows)
    new = old * 1.5 + 1.0
    st.update(rows, old, new)
    for g, o, n in zip(rows, old, new, strict=True):  # the reference, one row at a time
        s, j = st.stripe_of[g], st.slot_of[g]
        code.update(parity[s], int(j), as_bytes(o), as_bytes(n))
    assert np.array_equal(parity, st.parity)
    assert st.parity_consistent()


@pytest.mark.parametrize(("code", "r"), [("xor", 1), ("rs", 2)])
def test_failed_node_is_garbage_and_reads_decode_exactly(code, r):
    st, ref, rng = _store(code, r)
    _updates(st, ref, rng)
    node_rows = st.rows_on_node(2)
    st.fail_node(2)
    raw = st.data[st.stripe_of[node_rows], st.slot_of[node_rows]]
    assert not np.array_equal(_bits(raw), _bits(ref[node_rows]))  # memory really is garbage
    _updates(st, ref, rng)  # degraded updates go to the parity only
    assert np.array_equal(_bits(st.snapshot_all()), _bits(ref))


def test_rebuild_with_buffered_updates_restores_data_and_parity():
    st, ref, rng = _store()
    st.fail_node(1)
    _updates(st, ref, rng, 3)
    lost = st.lost_positions(1)
    for part in np.array_split(lost, 5):
        st.start_range(1, part)
        _updates(st, ref, rng, 3)  # hits rows of the range in flight: buffered
        assert np.array_equal(_bits(st.snapshot_all()), _bits(ref))
        st.commit_range()
    assert st.lost_nodes() == []
    assert np.array_equal(_bits(st.snapshot_all()), _bits(ref))
    assert st.parity_consistent()


def test_replacement_failing_mid_rebuild_and_second_failure_with_rs():
    st, ref, rng = _store("rs", 2)
    st.fail_node(0)
    lost = st.lost_positions(0)
    st.start_range(0, lost[: len(lost) // 3])
    _updates(st, ref, rng, 3)
    st.fail_node(3)  # a second node while node 0's range is in flight (r = 2 covers it)
    _updates(st, ref, rng, 3)
    st.fail_node(0)  # the replacement itself dies: the range aborts, its buffer folds in
    _updates(st, ref, rng, 3)
    assert np.array_equal(_bits(st.snapshot_all()), _bits(ref))
    for node in (0, 3):
        for part in np.array_split(st.lost_positions(node), 3):
            st.start_range(node, part)
            _updates(st, ref, rng, 2)
            st.commit_range()
    assert np.array_equal(_bits(st.snapshot_all()), _bits(ref))
    assert st.parity_consistent()


def test_two_failures_exceed_xor_parity():
    st, _, _ = _store()
    st.fail_node(0)
    with pytest.raises(DataLossError):
        st.fail_node(4)


def test_float_sum_parity_drifts():
    st, ref, rng = _store("float-sum")
    _updates(st, ref, rng, 20)
    assert not st.parity_consistent()  # the maintained sum is no longer a fresh sum
    st.fail_node(2)
    got = st.snapshot_all()
    err = np.abs(got - ref).max()
    assert 0 < err < 1e-4


def test_one_xor_for_trainer_and_model():
    """nmp.arch.parity.xor_into is the store's parity update: in order, repeated rows
    accumulate, 64-bit words or bytes."""
    import nmp.train.store as store_mod
    from nmp.arch.parity import xor_into

    assert store_mod.xor_into is xor_into
    rng = np.random.default_rng(1)
    for nbytes in (16, 12):  # whole words / a byte tail
        par = rng.integers(0, 256, (5, nbytes), dtype=np.uint8)
        idx = np.array([3, 1, 3, 0])
        delta = rng.integers(0, 256, (4, nbytes), dtype=np.uint8)
        want = par.copy()
        for i, d in zip(idx, delta, strict=True):
            want[i] ^= d
        xor_into(par, idx, delta)
        assert np.array_equal(par, want)


@pytest.mark.parametrize("base", ["xor", "float-sum", "rs"])
def test_scheme_keeps_the_name_its_code_is_registered_under(base):
    # A code registered again under another name is that name in the trainer's reports, not
    # the class's usual one (XorScheme and FloatSumScheme once labelled themselves).
    from dataclasses import replace

    from nmp.parity_codes import PARITY_CODES

    alias = f"{base}-alias"
    PARITY_CODES.register(replace(PARITY_CODES.get(base), name=alias))
    try:
        r = 2 if base == "rs" else 1
        assert make_scheme(alias, 4, r).name == alias
        assert make_scheme(base, 4, r).name == base
    finally:
        PARITY_CODES.unregister(alias)
