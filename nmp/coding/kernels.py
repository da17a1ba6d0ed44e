"""Bulk byte kernels (numba, compiled once and cached): XOR and GF(2^8) multiply-accumulate.

GF(2^8) products are computed eight bytes at a time in a ``uint64`` ("SWAR"): ``x * 2`` for all
eight byte lanes is ``((x & 0x7f..) << 1) ^ (0x1d in every lane whose top bit was set)``, and
``c * x`` is built from such doublings and XORs. Work is blocked (4 KiB of each row) so the
rows being combined stay in cache, and the innermost loops run over contiguous words, which
LLVM vectorizes (AVX2/AVX-512). The wrappers split every row into a ``uint64`` body and a
< 8 byte tail, which goes through the 64 KiB product table.
"""

from __future__ import annotations

import numba
import numpy as np

from nmp.coding.gf256 import MUL

BLOCK_WORDS = 512  # 4 KiB per row block: the block of every source row stays in L1/L2
_LO7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HI1 = np.uint64(0x0101010101010101)
_RED = np.uint64(0x1D1D1D1D1D1D1D1D)
_ONE = np.uint64(1)
_SEVEN = np.uint64(7)
_EIGHT = np.uint64(8)


@numba.njit(cache=True, nogil=True, inline="always")
def _xtime(v):  # pragma: no cover - compiled
    """x * 2 in all 8 byte lanes; the 0x1d reduction mask is (m << 8) - m = 0xff per set lane
    (no 64-bit multiply, which AVX2 lacks)."""
    m = (v >> _SEVEN) & _HI1
    return ((v & _LO7) << _ONE) ^ (((m << _EIGHT) - m) & _RED)


@numba.njit(cache=True, nogil=True)
def _gf_mac_words(coefs, src, dst):  # pragma: no cover - compiled
    """dst[i] ^= XOR_j coefs[i, j] * src[j], on uint64 words (8 byte lanes each).

    Horner's rule over coefficient bits: ``acc = 2 * acc ^ XOR_{j: bit b of c_ij} src_j`` from
    the top bit down, so each output row needs at most 7 doublings whatever k is.
    """
    p, m = coefs.shape
    nwords = src.shape[1]
    top = np.full(p, -1, np.int64)  # highest coefficient bit per output row (-1: all zero)
    for i in range(p):
        for j in range(m):
            for b in range(8):
                if (coefs[i, j] >> b) & 1 and b > top[i]:
                    top[i] = b
    acc = np.empty(BLOCK_WORDS, np.uint64)
    for start in range(0, nwords, BLOCK_WORDS):
        nb = min(BLOCK_WORDS, nwords - start)
        for i in range(p):
            if top[i] < 0:
                continue
            for w in range(nb):
                acc[w] = 0
            for b in range(top[i], -1, -1):
                if b < top[i]:
                    for w in range(nb):
                        acc[w] = _xtime(acc[w])
                for j in range(m):
                    if (coefs[i, j] >> b) & 1:
                        s = src[j, start : start + nb]
                        for w in range(nb):
                            acc[w] ^= s[w]
            d = dst[i, start : start + nb]
            for w in range(nb):
                d[w] ^= acc[w]


@numba.njit(cache=True, nogil=True)
def _gf_update_words(coefs, a, b_, dst, same):  # pragma: no cover - compiled
    """dst[i] ^= coefs[i] * (a XOR b_) on uint64 words; ``same``: a is the delta, b_ unused.

    The delta is doubled once per bit and shared by all r parity rows."""
    p = coefs.shape[0]
    nwords = a.shape[0]
    top = -1
    for i in range(p):
        for bit in range(8):
            if (coefs[i] >> bit) & 1 and bit > top:
                top = bit
    x = np.empty(BLOCK_WORDS, np.uint64)
    for start in range(0, nwords, BLOCK_WORDS):
        nb = min(BLOCK_WORDS, nwords - start)
        sa = a[start : start + nb]
        if same:
            for w in range(nb):
                x[w] = sa[w]
        else:
            sb = b_[start : start + nb]
            for w in range(nb):
                x[w] = sa[w] ^ sb[w]
        for bit in range(top + 1):
            for i in range(p):
                if (coefs[i] >> bit) & 1:
                    d = dst[i, start : start + nb]
                    for w in range(nb):
                        d[w] ^= x[w]
            if bit < top:
                for w in range(nb):
                    x[w] = _xtime(x[w])


@numba.njit(cache=True, nogil=True)
def _xor_reduce_words(src, dst):  # pragma: no cover - compiled
    """dst = XOR of all rows of src (one pass, no temporaries)."""
    m, nwords = src.shape
    for w in range(nwords):
        acc = src[0, w]
        for j in range(1, m):
            acc ^= src[j, w]
        dst[w] = acc


@numba.njit(cache=True, nogil=True)
def _xor3_words(dst, a, b_):  # pragma: no cover - compiled
    """dst ^= a XOR b_ in one fused pass (the XOR-code update from old and new)."""
    for w in range(dst.shape[0]):
        dst[w] ^= a[w] ^ b_[w]


@numba.njit(cache=True, nogil=True)
def _xor2_words(dst, a):  # pragma: no cover - compiled
    for w in range(dst.shape[0]):
        dst[w] ^= a[w]


def _split(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Body (uint64 view of the first 8*floor(n/8) bytes) and byte tail of the last axis."""
    n8 = arr.shape[-1] - arr.shape[-1] % 8
    return arr[..., :n8].view(np.uint64), arr[..., n8:]


def gf_mac(coefs: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[i] ^= XOR_j coefs[i, j] * src[j]`` for uint8 ``src [m, n]``, ``dst [p, n]``."""
    coefs = np.ascontiguousarray(coefs, dtype=np.uint8)
    sb, st = _split(src)
    db, dt = _split(dst)
    if sb.shape[1]:
        _gf_mac_words(coefs, sb, db)
    if st.shape[1]:
        dt ^= np.bitwise_xor.reduce(MUL[coefs[:, :, None], st[None, :, :]], axis=1)


def gf_update(coefs: np.ndarray, a: np.ndarray, b: np.ndarray | None, dst: np.ndarray) -> None:
    """``dst[i] ^= coefs[i] * (a XOR b)`` (``b=None``: ``a`` is the delta) for uint8 rows."""
    coefs = np.ascontiguousarray(coefs, dtype=np.uint8)
    ab, at = _split(a)
    db, dt = _split(dst)
    if b is None:
        bb, bt = ab, at
    else:
        bb, bt = _split(b)
    if ab.shape[0]:
        _gf_update_words(coefs, ab, bb, db, b is None)
    if at.shape[0]:
        delta = at if b is None else at ^ bt
        dt ^= MUL[coefs[:, None], delta[None, :]]


def xor_reduce(src: np.ndarray, dst: np.ndarray) -> None:
    """``dst = XOR of the rows of src`` (uint8 ``[m, n]`` into ``[n]``)."""
    sb, st = _split(src)
    db, dt = _split(dst)
    if sb.shape[1]:
        _xor_reduce_words(sb, db)
    if st.shape[1]:
        dt[...] = np.bitwise_xor.reduce(st, axis=0)


def xor_into(dst: np.ndarray, a: np.ndarray, b: np.ndarray | None = None) -> None:
    """``dst ^= a`` or ``dst ^= a XOR b`` in one pass (uint8 rows of equal length)."""
    db, dt = _split(dst)
    ab, at = _split(a)
    if b is None:
        if db.shape[0]:
            _xor2_words(db, ab)
        dt ^= at
    else:
        bb, bt = _split(b)
        if db.shape[0]:
            _xor3_words(db, ab, bb)
        dt ^= at ^ bt
