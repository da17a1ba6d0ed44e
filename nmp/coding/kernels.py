"""Bulk byte kernels (numba, compiled once and cached): XOR and GF(2^8) multiply-accumulate.

Two ways to multiply bytes by a constant in GF(2^8), with the same results:

* **GFNI** (x86 CPUs with the Galois-field instructions, Intel since Ice Lake, AMD since Zen 4):
  ``vgf2p8affineqb`` applies an 8x8 bit matrix to each of 32 bytes in one instruction, and
  multiplying by ``c`` is linear over GF(2), so ``c * x`` is the matrix whose column ``j`` is
  ``c * 2^j`` (:data:`AFFINE`); the kernels are then limited by memory bandwidth (ISA-L's
  approach on such CPUs). The instruction is reached through an LLVM intrinsic.
* **SWAR** elsewhere: products eight bytes at a time in a ``uint64``: ``x * 2`` for all eight
  byte lanes is ``((x & 0x7f..) << 1) ^ (0x1d in every lane whose top bit was set)``, and
  ``c * x`` is built from such doublings and XORs.

Work is blocked (4 KiB of each row) so the rows being combined stay in cache, and the innermost
loops run over contiguous words, which LLVM vectorizes (AVX2/AVX-512). The wrappers split every
row into a body the kernels take (whole ``uint64`` words; for GFNI whole 32-byte chunks) and a
short tail, which goes through the 64 KiB product table.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from nmp.coding.gf256 import MUL
from nmp.jit import njit

BLOCK_WORDS = 512  # 4 KiB per row block: the block of every source row stays in L1/L2
BLOCK_BYTES = 8 * BLOCK_WORDS
CHUNK = 32  # bytes per GFNI instruction (256-bit registers)
_LO7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HI1 = np.uint64(0x0101010101010101)
_RED = np.uint64(0x1D1D1D1D1D1D1D1D)
_ONE = np.uint64(1)
_SEVEN = np.uint64(7)
_EIGHT = np.uint64(8)


def _affine_matrices() -> np.ndarray:
    """The ``vgf2p8affineqb`` matrix of multiplication by each c (uint64 [256]): result bit i
    is the parity of ``x & byte[7 - i]``, so byte ``7 - i`` holds the j whose ``c * 2^j`` has
    bit i set."""
    cols = MUL[:, 1 << np.arange(8)].astype(np.uint64)  # [c, j] = c * 2^j
    out = np.zeros(256, dtype=np.uint64)
    for i in range(8):
        row = np.zeros(256, dtype=np.uint64)
        for j in range(8):
            row |= ((cols[:, j] >> np.uint64(i)) & _ONE) << np.uint64(j)
        out |= row << np.uint64(8 * (7 - i))
    return out


AFFINE = _affine_matrices()


def _gfni_supported() -> bool:
    """Whether numba compiles for a CPU with GFNI and AVX2 (the host, unless NUMBA_CPU_NAME or
    NUMBA_CPU_FEATURES name another target)."""
    from numba.core import config

    cpu_features = getattr(config, "CPU_FEATURES", None)
    if cpu_features:
        return {"+gfni", "+avx2"} <= set(cpu_features.replace(",", " ").split())
    if getattr(config, "CPU_NAME", None) not in (None, "host"):
        return False
    try:
        from llvmlite import binding

        host = binding.get_host_cpu_features()
    except RuntimeError:
        return False
    return bool(host.get("gfni")) and bool(host.get("avx2"))


# Which path gf_mac / gf_update take (tests switch it to compare the two).
USE_GFNI = _gfni_supported()


def _affine_xor32_typing(typingctx, dst, a, b, offset, matrix, same):  # pragma: no cover
    """``dst[o:o+32] ^= M(a[o:o+32] XOR b[o:o+32])`` (``same``: ``M(a[o:o+32])``) for 1-D uint8
    arrays of unit stride, ``M`` the bit matrix ``matrix`` applied to every byte
    (``vgf2p8affineqb``); the caller keeps ``o + 32`` within the arrays."""
    sig = numba.types.void(dst, a, b, offset, matrix, same)

    def codegen(context, builder, signature, args):
        d_arr, a_arr, b_arr, off, mat, same_ = args
        vec = ir.VectorType(ir.IntType(8), CHUNK)

        def chunk(arr, ty):
            data = context.make_array(ty)(context, builder, arr).data
            return builder.bitcast(builder.gep(data, [off]), vec.as_pointer())

        d_ptr = chunk(d_arr, signature.args[0])
        x = builder.load(chunk(a_arr, signature.args[1]), align=1)
        with builder.if_else(same_) as (then, otherwise):
            with then:
                x_same = x
                block_same = builder.block
            with otherwise:
                x_pair = builder.xor(x, builder.load(chunk(b_arr, signature.args[2]), align=1))
                block_pair = builder.block
        x_phi = builder.phi(vec)
        x_phi.add_incoming(x_same, block_same)
        x_phi.add_incoming(x_pair, block_pair)
        quad = ir.VectorType(ir.IntType(64), CHUNK // 8)
        m = ir.Constant(quad, ir.Undefined)
        for i in range(CHUNK // 8):
            m = builder.insert_element(m, mat, ir.Constant(ir.IntType(32), i))
        fnty = ir.FunctionType(vec, [vec, vec, ir.IntType(8)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.vgf2p8affineqb.256")
        y = builder.call(fn, [x_phi, builder.bitcast(m, vec), ir.Constant(ir.IntType(8), 0)])
        builder.store(builder.xor(builder.load(d_ptr, align=1), y), d_ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


# (typed Any: numba calls the intrinsic without the typing context its definition takes)
_affine_xor32: Any = intrinsic(_affine_xor32_typing)


@njit(cache=True, nogil=True)
def _gf_mac_gfni(mats, src, dst, nbytes):  # pragma: no cover - compiled
    """dst[i, :nbytes] ^= XOR_j M_ij(src[j, :nbytes]), ``M_ij`` the matrix ``mats[i, j]``
    (0: a zero coefficient, skipped); ``nbytes`` a multiple of 32, rows of unit stride."""
    p, m = mats.shape
    for start in range(0, nbytes, BLOCK_BYTES):
        stop = min(start + BLOCK_BYTES, nbytes)
        for i in range(p):
            d = dst[i]
            for j in range(m):
                mat = mats[i, j]
                if mat == 0:
                    continue
                s = src[j]
                for o in range(start, stop, CHUNK):
                    _affine_xor32(d, s, s, o, mat, True)


@njit(cache=True, nogil=True)
def _gf_update_gfni(mats, a, b_, dst, same, nbytes):  # pragma: no cover - compiled
    """dst[i, :nbytes] ^= M_i(a XOR b_) (``same``: M_i(a)); the 4 KiB block of a and b_ is read
    from memory once and stays in L1 for the r parity rows."""
    p = mats.shape[0]
    for start in range(0, nbytes, BLOCK_BYTES):
        stop = min(start + BLOCK_BYTES, nbytes)
        for i in range(p):
            mat = mats[i]
            if mat == 0:
                continue
            d = dst[i]
            for o in range(start, stop, CHUNK):
                _affine_xor32(d, a, b_, o, mat, same)


@njit(cache=True, nogil=True, inline="always")
def _xtime(v):  # pragma: no cover - compiled
    """x * 2 in all 8 byte lanes; the 0x1d reduction mask is (m << 8) - m = 0xff per set lane
    (no 64-bit multiply, which AVX2 lacks)."""
    m = (v >> _SEVEN) & _HI1
    return ((v & _LO7) << _ONE) ^ (((m << _EIGHT) - m) & _RED)


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
def _xor_reduce_words(src, dst):  # pragma: no cover - compiled
    """dst = XOR of all rows of src (one pass, no temporaries)."""
    m, nwords = src.shape
    for w in range(nwords):
        acc = src[0, w]
        for j in range(1, m):
            acc ^= src[j, w]
        dst[w] = acc


@njit(cache=True, nogil=True)
def _xor3_words(dst, a, b_):  # pragma: no cover - compiled
    """dst ^= a XOR b_ in one fused pass (the XOR-code update from old and new)."""
    for w in range(dst.shape[0]):
        dst[w] ^= a[w] ^ b_[w]


@njit(cache=True, nogil=True)
def _xor2_words(dst, a):  # pragma: no cover - compiled
    for w in range(dst.shape[0]):
        dst[w] ^= a[w]


def _check_unit_stride(*arrays: np.ndarray) -> None:
    """The GFNI kernels address rows as contiguous bytes (as ``_split``'s views require)."""
    for arr in arrays:
        if arr.dtype != np.uint8 or (arr.shape[-1] > 1 and arr.strides[-1] != 1):
            raise ValueError("rows must be uint8 with a contiguous last axis")


def _split(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Body (uint64 view of the first 8*floor(n/8) bytes) and byte tail of the last axis."""
    n8 = arr.shape[-1] - arr.shape[-1] % 8
    return arr[..., :n8].view(np.uint64), arr[..., n8:]


def gf_mac(coefs: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
    """``dst[i] ^= XOR_j coefs[i, j] * src[j]`` for uint8 ``src [m, n]``, ``dst [p, n]``."""
    coefs = np.ascontiguousarray(coefs, dtype=np.uint8)
    if USE_GFNI:
        _check_unit_stride(src, dst)
        body = src.shape[-1] - src.shape[-1] % CHUNK
        if body:
            _gf_mac_gfni(AFFINE[coefs], src, dst, body)
        st, dt = src[:, body:], dst[:, body:]
    else:
        sb, st = _split(src)
        db, dt = _split(dst)
        if sb.shape[1]:
            _gf_mac_words(coefs, sb, db)
    if st.shape[1]:
        dt ^= np.bitwise_xor.reduce(MUL[coefs[:, :, None], st[None, :, :]], axis=1)


def gf_update(coefs: np.ndarray, a: np.ndarray, b: np.ndarray | None, dst: np.ndarray) -> None:
    """``dst[i] ^= coefs[i] * (a XOR b)`` (``b=None``: ``a`` is the delta) for uint8 rows."""
    coefs = np.ascontiguousarray(coefs, dtype=np.uint8)
    if USE_GFNI:
        _check_unit_stride(a, a if b is None else b, dst)
        body = a.shape[0] - a.shape[0] % CHUNK
        if body:
            _gf_update_gfni(AFFINE[coefs], a, a if b is None else b, dst, b is None, body)
        at, dt = a[body:], dst[:, body:]
        bt = None if b is None else b[body:]
    else:
        ab, at = _split(a)
        db, dt = _split(dst)
        bb, bt = (ab, None) if b is None else _split(b)
        if ab.shape[0]:
            _gf_update_words(coefs, ab, bb, db, b is None)
    if at.shape[0]:
        delta = at if bt is None else at ^ bt
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
