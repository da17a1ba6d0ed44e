"""GF(2^8) tables and small-matrix algebra against an independent bitwise multiply."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.coding import CodingError, is_mds
from nmp.coding.gf256 import (
    EXP,
    INV,
    LOG,
    MUL,
    cauchy_generator,
    gf_matinv,
    gf_matmul,
    vandermonde_generator,
)


def slow_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shift-and-add (Russian peasant) multiply modulo 0x11d, vectorized over arrays."""
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    out = np.zeros_like(a)
    for _ in range(8):
        out ^= np.where(b & 1, a, 0)
        b >>= 1
        a <<= 1
        a = np.where(a & 0x100, a ^ 0x11D, a)
    return out


def test_mul_table_matches_shift_and_add():
    a, b = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    assert np.array_equal(MUL.astype(np.int64), slow_mul(a, b))


def test_known_products_and_field_laws():
    assert MUL[2, 0x80] == 0x1D  # x * x^7 = x^8 = x^4 + x^3 + x^2 + 1
    assert MUL[0x53, 0xCA] == slow_mul(np.array([0x53]), np.array([0xCA]))[0]
    assert np.array_equal(MUL, MUL.T)
    nz = np.arange(1, 256)
    assert np.all(MUL[nz, INV[nz]] == 1)
    assert len(set(EXP[:255].tolist())) == 255  # 2 generates the multiplicative group
    assert np.all(EXP[LOG[nz]] == nz)


def test_matinv_roundtrip_and_singular():
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 9):
        while True:
            m = rng.integers(0, 256, (n, n), dtype=np.uint8)
            try:
                inv = gf_matinv(m)
                break
            except CodingError:
                continue
        assert np.array_equal(gf_matmul(m, inv), np.eye(n, dtype=np.uint8))
    with pytest.raises(CodingError, match="singular"):
        gf_matinv(np.array([[1, 1], [2, 2]], dtype=np.uint8))


@pytest.mark.parametrize("k,r", [(1, 1), (2, 2), (4, 4), (8, 2), (10, 4), (12, 3)])
@pytest.mark.parametrize("make", [vandermonde_generator, cauchy_generator])
def test_generators_are_mds(make, k, r):
    coefs = make(k, r)
    assert coefs.shape == (r, k)
    assert is_mds(coefs)


def test_is_mds_can_fail():
    # ISA-L's gf_gen_rs_matrix rows (2^i)^j repeat with period 255 in j; two equal columns
    # make a singular 2 x 2 submatrix, which is why nmp uses V @ inv(V[:k]) instead.
    assert not is_mds(np.array([[1, 1, 1], [1, 2, 2]], dtype=np.uint8))
    assert not is_mds(np.array([[0, 1]], dtype=np.uint8))


def test_cauchy_matches_isal_formula():
    k, r = 6, 3
    g = cauchy_generator(k, r)
    for i in range(r):
        for j in range(k):
            assert MUL[g[i, j], (k + i) ^ j] == 1
