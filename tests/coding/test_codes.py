"""XOR and Reed-Solomon codes: properties (hypothesis) and bit-exact recovery of raw bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmp.coding import (
    CodingError,
    DecodeError,
    ReedSolomonCode,
    XorCode,
    as_bytes,
    from_bytes,
)
from nmp.coding.errors import CodingError as _CE
from nmp.coding.gf256 import MUL
from nmp.errors import NmpError


@st.composite
def codes(draw):
    kind = draw(st.sampled_from(["xor", "vandermonde", "cauchy"]))
    k = draw(st.integers(1, 10))
    if kind == "xor":
        return XorCode(k)
    return ReedSolomonCode(k, draw(st.integers(1, 4)), generator=kind)


# widths: empty, tails only, word bodies with tails, and more than one 4 KiB kernel block
widths = st.sampled_from([0, 1, 7, 8, 13, 64, 203, 4096 + 24 + 5])


def naive_encode(code, data):
    parity = np.zeros((code.r, data.shape[1]), dtype=np.uint8)
    for i in range(code.r):
        for j in range(code.k):
            parity[i] ^= MUL[code.coefficients[i, j], data[j]]
    return parity


@given(code=codes(), n=widths, seed=st.integers(0, 2**32 - 1))
def test_encode_matches_naive_product(code, n, seed):
    data = np.random.default_rng(seed).integers(0, 256, (code.k, n), dtype=np.uint8)
    assert np.array_equal(code.encode(data), naive_encode(code, data))


@given(code=codes(), n=widths, seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 30))
def test_any_update_sequence_equals_fresh_encode(code, n, seed, steps):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (code.k, n), dtype=np.uint8)
    parity = code.encode(data)
    for _ in range(steps):
        j = int(rng.integers(code.k))
        new = rng.integers(0, 256, n, dtype=np.uint8)
        if rng.random() < 0.5:
            code.update(parity, j, data[j], new)
        else:
            code.update_delta(parity, j, data[j] ^ new)
        data[j] = new
    assert np.array_equal(parity, code.encode(data))


@given(code=codes(), n=widths, seed=st.integers(0, 2**32 - 1), data_=st.data())
def test_any_tolerated_erasure_pattern_decodes_exactly(code, n, seed, data_):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (code.k, n), dtype=np.uint8)
    shards = np.concatenate([data, code.encode(data)])
    erased = data_.draw(st.lists(st.integers(0, code.n_shards - 1), max_size=code.r, unique=True))
    damaged = shards.copy()
    damaged[erased] = rng.integers(0, 256, (len(erased), n), dtype=np.uint8)  # garbage
    assert np.array_equal(code.decode(damaged, erased), data)
    assert np.array_equal(code.reconstruct(damaged, erased), shards)


@given(code=codes(), data_=st.data())
def test_one_erasure_more_raises(code, data_):
    shards = np.zeros((code.n_shards, 16), dtype=np.uint8)
    count = data_.draw(st.integers(code.r + 1, code.n_shards))
    erased = data_.draw(
        st.lists(st.integers(0, code.n_shards - 1), min_size=count, max_size=count, unique=True)
    )
    with pytest.raises(DecodeError, match="tolerates only"):
        code.decode(shards, erased)


def test_decode_error_is_nmp_error():
    assert issubclass(DecodeError, NmpError) and issubclass(DecodeError, _CE)


def special_float32_rows(rng, k, dim):
    rows = rng.standard_normal((k, dim)).astype(np.float32)
    bits = rows.view(np.uint32)
    bits[0, :4] = [0x7FC00001, 0xFFBFFFFF, 0x7F800000, 0xFF800000]  # NaN payloads, +-Inf
    bits[0, 4:7] = [0x80000000, 0x00000001, 0x807FFFFF]  # -0, denormals
    return rows


@pytest.mark.parametrize(
    "code", [XorCode(4), ReedSolomonCode(4, 2), ReedSolomonCode(3, 4, "cauchy")]
)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "float16"])
def test_bit_exact_recovery_of_typed_rows(code, dtype):
    rng = np.random.default_rng(11)
    if dtype == "float32":
        rows = special_float32_rows(rng, code.k, 37)
    elif dtype == "bfloat16":  # numpy has no bf16: its bits are the top halves of float32
        rows = (special_float32_rows(rng, code.k, 37).view(np.uint32) >> 16).astype(np.uint16)
    elif dtype == "int8":
        rows = rng.integers(-128, 128, (code.k, 37), dtype=np.int8)
    else:
        rows = special_float32_rows(rng, code.k, 37).astype(np.float16)
    raw = as_bytes(rows)
    shards = np.concatenate([raw, code.encode(raw)])
    lost = list(range(code.r))  # the first r data rows
    shards[lost] = 0xFF
    got = from_bytes(code.decode(shards, lost), rows.dtype)
    assert got.tobytes() == rows.tobytes()


def test_update_on_strided_and_unaligned_views():
    code = ReedSolomonCode(5, 3)
    rng = np.random.default_rng(5)
    big = rng.integers(0, 256, (5, 300), dtype=np.uint8)
    data = big[:, 3:251]  # rows strided, columns start unaligned
    parity_store = np.zeros((3, 400), dtype=np.uint8)
    parity = parity_store[:, 7:255]
    parity[...] = code.encode(data)
    for t in range(20):
        j = t % 5
        new = rng.integers(0, 256, data.shape[1], dtype=np.uint8)
        code.update(parity, j, data[j].copy(), new)
        data[j] = new
    assert np.array_equal(parity, code.encode(np.ascontiguousarray(data)))
    assert not parity_store[:, :7].any() and not parity_store[:, 255:].any()


def test_as_bytes_is_a_view():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = as_bytes(x)
    assert b.shape == (2, 12) and b.dtype == np.uint8
    b[0, :4] = 0
    assert x[0, 0] == 0.0
    with pytest.raises(CodingError, match="contiguous"):
        as_bytes(np.zeros((4, 4), dtype=np.float32)[:, ::2])


def test_bad_inputs_raise_coding_errors():
    code = ReedSolomonCode(4, 2)
    with pytest.raises(CodingError, match="uint8"):
        code.encode(np.zeros((4, 8), dtype=np.float32))
    with pytest.raises(CodingError, match="shape"):
        code.encode(np.zeros((3, 8), dtype=np.uint8))
    with pytest.raises(CodingError, match="row index"):
        code.update(np.zeros((2, 8), np.uint8), 4, np.zeros(8, np.uint8), np.zeros(8, np.uint8))
    with pytest.raises(CodingError, match="outside"):
        code.decode(np.zeros((6, 8), np.uint8), [6])
    with pytest.raises(CodingError, match="256"):
        ReedSolomonCode(250, 7)
    with pytest.raises(CodingError, match="unknown Reed-Solomon generator 'nope'.*cauchy"):
        ReedSolomonCode(4, 2, generator="nope")
    with pytest.raises(CodingError):
        XorCode(0)


def test_a_generator_registered_at_run_time_builds_a_code():
    """The code asks the registry: a generator it does not name is taken and decodes."""
    from nmp.coding.codes import RS_GENERATORS
    from nmp.coding.gf256 import cauchy_generator

    def reversed_cauchy(k: int, r: int) -> np.ndarray:
        return cauchy_generator(k, r)[::-1].copy()  # rows of an MDS code reordered: still MDS

    RS_GENERATORS.register(reversed_cauchy, name="test-reversed-cauchy")
    try:
        code = ReedSolomonCode(5, 3, generator="test-reversed-cauchy")
        assert (code.coefficients == cauchy_generator(5, 3)[::-1]).all()
        data = np.random.default_rng(4).integers(0, 256, (5, 64), dtype=np.uint8)
        shards = np.concatenate([data, code.encode(data)])
        shards[[0, 2, 6]] = 0
        assert (code.decode(shards, [0, 2, 6])[:5] == data).all()
    finally:
        RS_GENERATORS.unregister("test-reversed-cauchy")


def test_xor_code_is_rs_with_unit_coefficients():
    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, (6, 100), dtype=np.uint8)
    assert np.array_equal(XorCode(6).encode(data)[0], np.bitwise_xor.reduce(data, axis=0))
    assert XorCode(6).memory_overhead == pytest.approx(1 / 6)
    assert ReedSolomonCode(8, 2).memory_overhead == pytest.approx(0.25)
