"""GF(2^8) arithmetic with the polynomial x^8+x^4+x^3+x^2+1 (0x11d), as ISA-L uses.

Tables are built once at import: ``EXP``/``LOG`` (generator 2), the full 256 x 256 product table
``MUL`` (64 KiB, used for byte tails and small matrices) and ``INV``. Small matrices (generators,
their inverses) are handled here row-vectorized; bulk data goes through :mod:`nmp.coding.kernels`.
"""

from __future__ import annotations

import itertools

import numpy as np

from nmp.coding.errors import CodingError

POLY = 0x11D
ORDER = 255  # multiplicative group order


def _build_tables() -> tuple[np.ndarray, np.ndarray]:
    exp = np.zeros(2 * ORDER, dtype=np.uint8)
    log = np.zeros(256, dtype=np.int32)
    x = 1
    for i in range(ORDER):  # 255 steps, once per process
        exp[i] = x
        log[x] = i
        x <<= 1
        if x & 0x100:
            x ^= POLY
    exp[ORDER:] = exp[:ORDER]
    return exp, log


EXP, LOG = _build_tables()


def _build_mul() -> np.ndarray:
    a = np.arange(256)
    la = LOG[a][:, None] + LOG[a][None, :]
    mul = EXP[la % ORDER].astype(np.uint8)
    mul[0, :] = 0
    mul[:, 0] = 0
    return mul


MUL = _build_mul()
INV = np.zeros(256, dtype=np.uint8)
INV[1:] = EXP[(ORDER - LOG[1:]) % ORDER]


def gf_mul(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """Elementwise product of byte arrays (broadcasting), by table look-up."""
    return MUL[np.asarray(a, dtype=np.uint8), np.asarray(b, dtype=np.uint8)]


def gf_pow(a: int, n: int) -> int:
    if n == 0:
        return 1
    if a == 0:
        return 0
    return int(EXP[(int(LOG[a]) * n) % ORDER])


def gf_inv(a: int) -> int:
    if a == 0:
        raise CodingError("0 has no inverse in GF(2^8)")
    return int(INV[a])


def gf_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Product of small GF(2^8) matrices ``a [m, l]`` and ``b [l, n]``."""
    a = np.asarray(a, dtype=np.uint8)
    b = np.asarray(b, dtype=np.uint8)
    prod = MUL[a[:, :, None], b[None, :, :]]  # [m, l, n]
    return np.bitwise_xor.reduce(prod, axis=1).astype(np.uint8)


def gf_matinv(m: np.ndarray) -> np.ndarray:
    """Inverse of a square GF(2^8) matrix by Gauss-Jordan; raises CodingError if singular."""
    m = np.asarray(m, dtype=np.uint8)
    n = m.shape[0]
    if m.shape != (n, n):
        raise CodingError(f"matrix inverse needs a square matrix, got {m.shape}")
    aug = np.concatenate([m, np.eye(n, dtype=np.uint8)], axis=1)
    for col in range(n):  # one row operation per column, vectorized over the row
        pivots = np.nonzero(aug[col:, col])[0]
        if pivots.size == 0:
            raise CodingError("matrix is singular over GF(2^8)")
        p = col + int(pivots[0])
        if p != col:
            aug[[col, p]] = aug[[p, col]]
        aug[col] = MUL[INV[aug[col, col]], aug[col]]
        factors = aug[:, col].copy()
        factors[col] = 0
        aug ^= MUL[factors[:, None], aug[col][None, :]]
    return aug[:, n:].copy()


def vandermonde_generator(k: int, r: int) -> np.ndarray:
    """Parity rows ``[r, k]`` of a systematic, MDS Vandermonde code.

    The (k+r) x k Vandermonde matrix ``V[i, j] = i^j`` (distinct points 0..k+r-1) has every k x k
    row subset invertible; ``V @ inv(V[:k])`` keeps that property and starts with the identity,
    so its last r rows are a systematic MDS generator (the Backblaze / klauspost construction).
    ISA-L's ``gf_gen_rs_matrix`` (rows of powers of 2) is not MDS for all k, so it is not used.
    """
    n = k + r
    v = np.zeros((n, k), dtype=np.uint8)
    for i in range(n):
        v[i] = [gf_pow(i, j) for j in range(k)]
    g = gf_matmul(v, gf_matinv(v[:k]))
    if not np.array_equal(g[:k], np.eye(k, dtype=np.uint8)):
        raise AssertionError("systematic Vandermonde construction failed")
    return g[k:].copy()


def cauchy_generator(k: int, r: int) -> np.ndarray:
    """Parity rows ``[r, k]`` of a Cauchy code, ``g[i, j] = 1 / ((k + i) XOR j)`` (ISA-L's
    ``gf_gen_cauchy1_matrix``). Every square submatrix of a Cauchy matrix is invertible, so
    the code is MDS for any k + r <= 256."""
    i = np.arange(k, k + r)[:, None]
    j = np.arange(k)[None, :]
    return INV[(i ^ j).astype(np.uint8)].astype(np.uint8)


def is_mds(coefficients: np.ndarray) -> bool:
    """True when every k x k submatrix of the systematic generator ``[I; P]`` is invertible.

    Equivalent to every square submatrix of ``P`` being invertible; checked exhaustively over
    all square submatrices (cost grows as C(k, s) C(r, s): meant for tests and small k).
    """
    p = np.asarray(coefficients, dtype=np.uint8)
    r, k = p.shape
    for s in range(1, min(r, k) + 1):
        for rows in itertools.combinations(range(r), s):
            for cols in itertools.combinations(range(k), s):
                try:
                    gf_matinv(p[np.ix_(rows, cols)])
                except CodingError:
                    return False
    return True
