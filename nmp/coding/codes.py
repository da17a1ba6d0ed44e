"""Systematic erasure codes on raw bytes: XOR (k + 1) and Reed-Solomon over GF(2^8) (k + r).

Shards are rows of a ``uint8 [k + r, n]`` array: rows ``0..k-1`` are data, ``k..k+r-1`` parity
(``parity_i = XOR_j g_ij * data_j``). Updates are incremental: a data row changing from ``old`` to
``new`` changes parity ``i`` by ``g_ij * (old XOR new)``, which is what a memory-side parity unit
applies in place (see :mod:`nmp.rtl.parity`). Decoding never guesses: more than ``r`` erasures
raise :class:`~nmp.coding.errors.DecodeError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache

import numpy as np

from nmp.coding import kernels
from nmp.coding.errors import CodingError, DecodeError
from nmp.coding.gf256 import cauchy_generator, gf_matinv, vandermonde_generator
from nmp.errors import NmpError
from nmp.registry import Registry

# A Reed-Solomon code's parity coefficients: ``make(k, r)`` gives an [r, k] uint8 matrix whose
# systematic generator [I; P] is MDS (a small family, registered here).
RS_GENERATORS: Registry[Callable[[int, int], np.ndarray]] = Registry("Reed-Solomon generator")
RS_GENERATORS.register(vandermonde_generator, name="vandermonde")
RS_GENERATORS.register(cauchy_generator, name="cauchy")


def _as_u8(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != np.uint8:
        raise CodingError(f"{name} must be uint8 (use nmp.coding.as_bytes), got {arr.dtype}")
    if arr.ndim and arr.shape[-1] > 1 and arr.strides[-1] != 1:
        arr = np.ascontiguousarray(arr)
    return arr


class _SystematicCode:
    """Shared machinery; subclasses set ``k``, ``r`` and ``coefficients`` ([r, k] uint8)."""

    k: int
    r: int
    coefficients: np.ndarray

    @property
    def n_shards(self) -> int:
        return self.k + self.r

    @property
    def memory_overhead(self) -> float:
        """Parity bytes per data byte (r / k)."""
        return self.r / self.k

    @property
    def generator(self) -> np.ndarray:
        """The full systematic generator ``[k + r, k]``: identity over the parity rows."""
        return np.concatenate([np.eye(self.k, dtype=np.uint8), self.coefficients])

    # -- encode / update ------------------------------------------------------------------
    def encode(self, data: np.ndarray) -> np.ndarray:
        """Parity ``uint8 [r, n]`` of data ``uint8 [k, n]`` (a fresh encode)."""
        data = _as_u8(data, "data")
        if data.ndim != 2 or data.shape[0] != self.k:
            raise CodingError(f"data must have shape [k={self.k}, n], got {data.shape}")
        parity = np.zeros((self.r, data.shape[1]), dtype=np.uint8)
        self._encode_into(data, parity)
        return parity

    def _encode_into(self, data: np.ndarray, parity: np.ndarray) -> None:
        kernels.gf_mac(self.coefficients, data, parity)

    def _check_update(self, parity: np.ndarray, j: int, *rows: np.ndarray) -> np.ndarray:
        if not 0 <= int(j) < self.k:
            raise CodingError(f"data row index j={j} outside 0..{self.k - 1}")
        parity = np.asarray(parity)
        if parity.dtype != np.uint8 or parity.ndim != 2 or parity.shape[0] != self.r:
            raise CodingError(
                f"parity must be uint8 [r={self.r}, n], got {parity.dtype} {parity.shape}"
            )
        if parity.shape[1] > 1 and parity.strides[1] != 1:
            raise CodingError("parity is updated in place and needs a contiguous last axis")
        for row in rows:
            if row.shape != parity.shape[1:]:
                raise CodingError(f"row of shape {row.shape} does not match parity {parity.shape}")
        return parity

    def update(self, parity: np.ndarray, j: int, old: np.ndarray, new: np.ndarray) -> None:
        """In place: data row ``j`` changed from ``old`` to ``new`` (``parity_i ^= g_ij *
        (old XOR new)``), one fused pass over the bytes."""
        old, new = _as_u8(old, "old"), _as_u8(new, "new")
        parity = self._check_update(parity, j, old, new)
        kernels.gf_update(self.coefficients[:, int(j)], old, new, parity)

    def update_delta(self, parity: np.ndarray, j: int, delta: np.ndarray) -> None:
        """In place: ``parity_i ^= g_ij * delta`` where ``delta = old XOR new`` of data row j."""
        delta = _as_u8(delta, "delta")
        parity = self._check_update(parity, j, delta)
        kernels.gf_update(self.coefficients[:, int(j)], delta, None, parity)

    # -- decode ---------------------------------------------------------------------------
    def _check_erased(self, shards: np.ndarray, erased: Iterable[int]) -> tuple[np.ndarray, list]:
        shards = _as_u8(shards, "shards")
        if shards.ndim != 2 or shards.shape[0] != self.n_shards:
            raise CodingError(
                f"shards must have shape [k+r={self.n_shards}, n], got {shards.shape}"
            )
        lost = sorted({int(e) for e in erased})
        bad = [e for e in lost if not 0 <= e < self.n_shards]
        if bad:
            raise CodingError(f"erased shard index {bad[0]} outside 0..{self.n_shards - 1}")
        if len(lost) > self.r:
            raise DecodeError(
                f"{len(lost)} shards lost ({lost}) but the code tolerates only {self.r}"
            )
        return shards, lost

    def decode_lost(self, shards: np.ndarray, erased: Iterable[int]) -> np.ndarray:
        """Only the lost *data* rows, ``uint8 [e, n]`` in ascending row order (no copy of the
        surviving data): what a degraded read of missing rows needs."""
        shards, lost = self._check_erased(shards, erased)
        lost_data = [e for e in lost if e < self.k]
        out = np.zeros((len(lost_data), shards.shape[1]), dtype=np.uint8)
        if lost_data:
            survivors = tuple(i for i in range(self.n_shards) if i not in lost)[: self.k]
            # rows of inv(G_S) spread over all k + r shards (zero for unused ones), so the
            # kernel reads the survivors in place
            coefs = np.zeros((len(lost_data), self.n_shards), dtype=np.uint8)
            coefs[:, list(survivors)] = _decode_matrix(self, survivors)[lost_data]
            kernels.gf_mac(coefs, shards, out)
        return out

    def decode(self, shards: np.ndarray, erased: Iterable[int]) -> np.ndarray:
        """Data ``uint8 [k, n]`` rebuilt from the surviving rows of ``shards [k + r, n]``.

        Rows listed in ``erased`` are ignored (their content may be garbage). Lost data rows
        are ``inv(G_S) @ survivors`` for the first k surviving rows S; raises DecodeError when
        more than r rows are lost.
        """
        shards, lost = self._check_erased(shards, erased)
        data = shards[: self.k].copy()
        lost_data = [e for e in lost if e < self.k]
        if lost_data:
            data[lost_data] = self.decode_lost(shards, lost)
        return data

    def reconstruct(self, shards: np.ndarray, erased: Iterable[int]) -> np.ndarray:
        """All ``k + r`` shards, lost data decoded and lost parity re-encoded."""
        shards, lost = self._check_erased(shards, erased)
        data = self.decode(shards, lost)
        full = np.concatenate([data, shards[self.k :]])
        if any(e >= self.k for e in lost):
            full[self.k :] = self.encode(data)
        return full


@lru_cache(maxsize=256)
def _decode_matrix_cached(coef_bytes: bytes, k: int, r: int, survivors: tuple) -> np.ndarray:
    coefs = np.frombuffer(coef_bytes, dtype=np.uint8).reshape(r, k)
    gen = np.concatenate([np.eye(k, dtype=np.uint8), coefs])
    return gf_matinv(gen[list(survivors)])


def _decode_matrix(code: _SystematicCode, survivors: tuple) -> np.ndarray:
    try:
        return _decode_matrix_cached(code.coefficients.tobytes(), code.k, code.r, survivors)
    except CodingError as exc:  # only possible for a non-MDS generator
        raise DecodeError(f"survivors {survivors} do not determine the data: {exc}") from exc


class XorCode(_SystematicCode):
    """k data rows + 1 parity row, ``parity = XOR of the data`` (RAID-5 arithmetic).

    The r = 1 Reed-Solomon case with all coefficients 1; its kernels skip the GF multiply.
    """

    def __init__(self, k: int) -> None:
        if int(k) < 1:
            raise CodingError(f"XorCode needs k >= 1, got {k}")
        self.k = int(k)
        self.r = 1
        self.coefficients = np.ones((1, self.k), dtype=np.uint8)
        self.coefficients.flags.writeable = False

    def __repr__(self) -> str:
        return f"XorCode(k={self.k})"

    def _encode_into(self, data: np.ndarray, parity: np.ndarray) -> None:
        kernels.xor_reduce(data, parity[0])

    def update(self, parity: np.ndarray, j: int, old: np.ndarray, new: np.ndarray) -> None:
        old, new = _as_u8(old, "old"), _as_u8(new, "new")
        parity = self._check_update(parity, j, old, new)
        kernels.xor_into(parity[0], old, new)

    def update_delta(self, parity: np.ndarray, j: int, delta: np.ndarray) -> None:
        delta = _as_u8(delta, "delta")
        parity = self._check_update(parity, j, delta)
        kernels.xor_into(parity[0], delta)


class ReedSolomonCode(_SystematicCode):
    """k data rows + r parity rows over GF(2^8) (polynomial 0x11d), systematic and MDS.

    ``generator="vandermonde"``: ``V @ inv(V[:k])`` for the Vandermonde matrix on points
    0..k+r-1; ``"cauchy"``: ISA-L's Cauchy matrix ``1 / ((k + i) XOR j)``. Both are MDS for any
    k + r <= 256, so any r erasures decode.
    """

    def __init__(self, k: int, r: int, generator: str = "vandermonde") -> None:
        k, r = int(k), int(r)
        if k < 1 or r < 1:
            raise CodingError(f"ReedSolomonCode needs k >= 1 and r >= 1, got k={k}, r={r}")
        if k + r > 256:
            raise CodingError(f"GF(2^8) allows at most 256 shards, got k + r = {k + r}")
        try:
            make = RS_GENERATORS.get(generator)
        except NmpError as exc:
            raise CodingError(exc.message) from None
        coefs = make(k, r)
        self.k, self.r, self.generator_name = k, r, generator
        self.coefficients = coefs
        self.coefficients.flags.writeable = False

    def __repr__(self) -> str:
        return f"ReedSolomonCode(k={self.k}, r={self.r}, generator={self.generator_name!r})"
