"""The byte kernels' two paths (GFNI where the CPU has it, SWAR everywhere) against the product
table, on widths around their chunk and block sizes and on rows inside wider arrays."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.coding import kernels
from nmp.coding.gf256 import MUL

PATHS = [
    pytest.param(False, id="swar"),
    pytest.param(
        True,
        id="gfni",
        marks=pytest.mark.skipif(not kernels._gfni_supported(), reason="no GFNI on this CPU"),
    ),
]
WIDTHS = [0, 1, 7, 8, 31, 32, 33, 64, 203, 4096 + 24 + 5, 2 * 4096 + 32]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    monkeypatch.setattr(kernels, "USE_GFNI", request.param)
    return request.param


def affine_numpy(x: np.ndarray, matrix: np.uint64) -> np.ndarray:
    """What ``vgf2p8affineqb`` does to each byte (Intel SDM): bit i of the result is the
    parity of ``x & byte[7 - i]`` of the matrix."""
    out = np.zeros_like(x)
    for i in range(8):
        row = np.uint8((int(matrix) >> (8 * (7 - i))) & 0xFF)
        parity = np.unpackbits((x & row)[:, None], axis=1).sum(axis=1) & 1
        out |= (parity.astype(np.uint8) << i).astype(np.uint8)
    return out


def test_affine_matrices_multiply_like_the_product_table():
    x = np.arange(256, dtype=np.uint8)
    for c in range(256):
        assert np.array_equal(affine_numpy(x, kernels.AFFINE[c]), MUL[c]), c


def naive_mac(coefs, src):
    out = np.zeros((coefs.shape[0], src.shape[1]), dtype=np.uint8)
    for i in range(coefs.shape[0]):
        for j in range(coefs.shape[1]):
            out[i] ^= MUL[coefs[i, j], src[j]]
    return out


@pytest.mark.parametrize("n", WIDTHS)
def test_gf_mac_equals_the_product_table(path, n):
    rng = np.random.default_rng(n)
    coefs = rng.integers(0, 256, (3, 5), dtype=np.uint8)
    coefs[0, 1] = 0  # a zero coefficient is skipped
    wide = rng.integers(0, 256, (5, n + 11), dtype=np.uint8)
    src = wide[:, 3 : 3 + n]  # rows inside a wider array: row stride != n
    dst = rng.integers(0, 256, (3, n), dtype=np.uint8)
    want = dst ^ naive_mac(coefs, src)
    kernels.gf_mac(coefs, src, dst)
    assert np.array_equal(dst, want)


@pytest.mark.parametrize("n", WIDTHS)
@pytest.mark.parametrize("from_delta", [False, True])
def test_gf_update_equals_the_product_table(path, n, from_delta):
    rng = np.random.default_rng(n + 1)
    coefs = np.array([0, 1, 2, 0x8E, 0xFF], dtype=np.uint8)
    old, new = rng.integers(0, 256, (2, n), dtype=np.uint8)
    dst = rng.integers(0, 256, (coefs.size, n), dtype=np.uint8)
    want = dst ^ MUL[coefs[:, None], (old ^ new)[None, :]]
    if from_delta:
        kernels.gf_update(coefs, old ^ new, None, dst)
    else:
        kernels.gf_update(coefs, old, new, dst)
    assert np.array_equal(dst, want)


def test_gfni_needs_contiguous_rows(monkeypatch):
    monkeypatch.setattr(kernels, "USE_GFNI", True)
    src = np.zeros((2, 64), dtype=np.uint8)[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        kernels.gf_mac(np.ones((1, 2), np.uint8), src, np.zeros((1, 32), np.uint8))
