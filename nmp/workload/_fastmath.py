"""exp and log of float64 as straight-line arithmetic (numba), for loops the compiler can
vectorize: a call into libm stops that. Each is within a few units in the last place, not
correctly rounded, so callers use them only to decide what an exact libm result decides, and
fall back to libm where the two could differ (:func:`nmp.workload._kernels.zipf_first_kernel`).

The bounds, for the margins callers keep: :func:`log_pos` of a normal positive ``w`` is within
4 ulp of log(w) (the argument reduced to [sqrt(1/2), sqrt(2)) exactly, log(1 + f) = 2 atanh(s)
with s = f / (2 + f), |s| <= 0.1716, by 11 terms of its series, truncated below 1e-18);
:func:`exp_small` of |y| <= 700 is within 3 ulp of exp(y) (y - n ln 2 by Cody and Waite's
two-part ln 2, exact for |n| < 2^20; degree-13 Taylor on |r| <= 0.3466, truncated below 5e-18).
A test measures both against libm on millions of arguments.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from nmp.jit import njit


@intrinsic
def bits_of(typingctx, x):
    """The IEEE-754 bits of a float64, as an int64 (a bit cast: no instruction)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def float_of(typingctx, n):
    """The float64 whose IEEE-754 bits are the int64 ``n`` (a bit cast)."""
    if n != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


_LN2_HI = 6.93147180369123816490e-01  # fdlibm's: its low 32 bits are zero, so n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # sqrt(1/2)
_EXPONENT_MASK = -(1 << 52)  # (0xFFF0000000000000 as an int64)
# 1.5 x 2^52 and its bits: a small integer-valued float added to it lands in its low bits,
# so ints and floats convert without a cvt instruction (scalar on AVX2)
_ROUNDER = 6755399441055744.0
_ROUNDER_BITS = 0x4338000000000000


@njit(cache=True, inline="always")
def log_pos(w):
    """log(w) of a normal, finite, positive float64 (see the module's bounds)."""
    # w = m 2^e with m in [sqrt(1/2), sqrt(2)), in integers (musl's reduction: no branch, so
    # the loop stays vectorizable)
    b: int = bits_of(w)  # type: ignore[call-arg]  # an intrinsic: no typingctx
    shifted = b - _SQRT_HALF_BITS
    e = float_of(_ROUNDER_BITS + (shifted >> 52)) - _ROUNDER
    m = float_of(b - (shifted & _EXPONENT_MASK))
    f = m - 1.0  # exact (Sterbenz)
    s = f / (2.0 + f)
    z = s * s
    p = 1.0 / 21.0
    p = p * z + 1.0 / 19.0
    p = p * z + 1.0 / 17.0
    p = p * z + 1.0 / 15.0
    p = p * z + 1.0 / 13.0
    p = p * z + 1.0 / 11.0
    p = p * z + 1.0 / 9.0
    p = p * z + 1.0 / 7.0
    p = p * z + 1.0 / 5.0
    p = p * z + 1.0 / 3.0
    return e * _LN2_HI + (e * _LN2_LO + 2.0 * s * (p * z + 1.0))


@njit(cache=True, inline="always")
def exp_small(y):
    """exp(y) for |y| <= 700 (see the module's bounds)."""
    n = np.floor(y * _INV_LN2 + 0.5)  # (np.floor: a float; math.floor converts to int)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    n_bits: int = bits_of(n + _ROUNDER) - _ROUNDER_BITS  # type: ignore[call-arg]  # n, as an int
    scale = float_of((n_bits + 1023) << 52)  # 2^n
    return p * scale
