"""Parity schemes of the training store, as thin adapters over :mod:`nmp.coding`.

The store keeps records (float32 rows) in stripes ``[S, k, W]`` and parity in ``[S, r, ...]``.
A scheme says how to encode whole stripes, how an update's delta is formed, what it contributes
to each parity of its stripe, how contributions combine, and how to decode erased positions.
Everything is vectorized over many stripes at once: the byte codes of :mod:`nmp.coding` work on
``[k, n]`` shards of any length, so ``m`` stripes become one shard of ``m * row_bytes`` bytes.

- ``xor``: raw-bit XOR (k+1); exact. The hot-path delta/apply is XOR on ``uint64`` views.
- ``rs``: Reed-Solomon over GF(2^8) (k+r), ``parity_i ^= g_ij * delta``; exact.
- ``float-sum``: the published ECRec parity, the float32 sum of the k rows; updates add the
  applied float delta. Recovery is ``parity - sum(others)``, which rounds: it drifts.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from nmp.coding.codes import XorCode, _SystematicCode
from nmp.coding.floatsum import FloatSumParity
from nmp.errors import NmpError
from nmp.parity_codes import PARITY_CODES


class ParityScheme:
    """Common interface; see the subclasses."""

    name: str
    k: int
    r: int
    exact: bool = True
    # the parity is the raw-byte XOR of the rows: a delta goes into it by an in-place XOR that
    # accumulates duplicate stripes (the parity units' of nmp.arch), in any order
    in_place_xor: bool = False

    def empty_parity(self, stripes: int, width: int) -> np.ndarray:
        raise NotImplementedError

    def encode(self, data: np.ndarray) -> np.ndarray:
        """``data`` float32 [m, k, W] -> parity [m, r, ...]."""
        raise NotImplementedError

    def delta(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """The update's delta for records [n, W]."""
        raise NotImplementedError

    def contributions(self, slot: int, delta: np.ndarray) -> np.ndarray:
        """What a delta at data slot ``slot`` adds to each parity: [r, n, ...]."""
        raise NotImplementedError

    def combine(self, parity: np.ndarray, contrib: np.ndarray) -> np.ndarray:
        """``parity`` updated by ``contrib`` (same shape)."""
        raise NotImplementedError

    def decode(self, shards_data: np.ndarray, shards_parity: np.ndarray, erased: list[int]):
        """Rebuild every data slot of ``m`` stripes with positions ``erased`` lost.

        ``shards_data`` float32 [m, k, W] (garbage where erased), ``shards_parity`` [m, r, ...];
        returns float32 [m, k, W].
        """
        raise NotImplementedError

    def parity_bytes_per_stripe(self, width: int) -> int:
        return self.r * width * 4


class _ByteCode(ParityScheme):
    """XOR and Reed-Solomon: parity is raw bytes, uint8 [S, r, 4W]."""

    def __init__(self, code, k: int, r: int, name: str) -> None:
        self.code, self.k, self.r, self.name = code, k, r, name

    def empty_parity(self, stripes: int, width: int) -> np.ndarray:
        return np.zeros((stripes, self.r, 4 * width), dtype=np.uint8)

    def encode(self, data: np.ndarray) -> np.ndarray:
        m, k, w = data.shape
        shards = _bytes(data).transpose(1, 0, 2).reshape(k, m * 4 * w)
        parity = np.asarray(self.code.encode(np.ascontiguousarray(shards)))
        return parity.reshape(self.r, m, 4 * w).transpose(1, 0, 2).copy()

    def delta(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        # old XOR new on 64-bit words: the data unit's delta, 8 bytes per operation.
        return (_u64(old) ^ _u64(new)).view(np.uint8)

    def combine(self, parity: np.ndarray, contrib: np.ndarray) -> np.ndarray:
        return (_u64(parity) ^ _u64(contrib)).view(np.uint8)

    def decode(self, shards_data, shards_parity, erased):
        m, k, w = shards_data.shape
        shards = np.concatenate([_bytes(shards_data), shards_parity], axis=1)
        flat = np.ascontiguousarray(shards.transpose(1, 0, 2).reshape(k + self.r, m * 4 * w))
        data = np.asarray(self.code.decode(flat, list(erased)))
        out = data.reshape(k, m, 4 * w).transpose(1, 0, 2)
        return np.ascontiguousarray(out).view(np.float32)


class XorScheme(_ByteCode):
    in_place_xor = True

    def __init__(self, k: int, name: str = "xor") -> None:
        from nmp.coding import XorCode

        super().__init__(XorCode(k), k, 1, name)

    def contributions(self, slot: int, delta: np.ndarray) -> np.ndarray:
        return delta[None]


class ReedSolomonScheme(_ByteCode):
    """Any systematic GF(2^8) code (Reed-Solomon, or another generator): ``parity_i ^= g_ij *
    delta``."""

    def __init__(self, k: int, r: int, code: Any = None, name: str = "rs") -> None:
        from nmp.coding import ReedSolomonCode

        super().__init__(ReedSolomonCode(k, r) if code is None else code, k, r, name)

    def contributions(self, slot: int, delta: np.ndarray) -> np.ndarray:
        n, nb = delta.shape
        contrib = np.zeros((self.r, n * nb), dtype=np.uint8)
        # update_delta on a zero parity gives g_ij * delta for every parity i (GF(2^8) tables).
        self.code.update_delta(contrib, slot, np.ascontiguousarray(delta).reshape(-1))
        return contrib.reshape(self.r, n, nb)


class FloatSumScheme(ParityScheme):
    """Parity = float32 sum of the k rows (ECRec's code); decoding rounds, so it drifts."""

    exact = False

    def __init__(self, k: int, name: str = "float-sum") -> None:
        from nmp.coding import FloatSumParity

        self.code = FloatSumParity(k)
        self.k, self.r, self.name = k, 1, name

    def empty_parity(self, stripes: int, width: int) -> np.ndarray:
        return np.zeros((stripes, 1, width), dtype=np.float32)

    def encode(self, data: np.ndarray) -> np.ndarray:
        m, k, w = data.shape
        flat = np.ascontiguousarray(data.transpose(1, 0, 2).reshape(k, m * w))
        return self.code.encode(flat).reshape(m, 1, w)

    def delta(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        return new - old

    def contributions(self, slot: int, delta: np.ndarray) -> np.ndarray:
        return delta[None]

    def combine(self, parity: np.ndarray, contrib: np.ndarray) -> np.ndarray:
        return parity + contrib

    def decode(self, shards_data, shards_parity, erased):
        m, k, w = shards_data.shape
        shards = np.concatenate([shards_data, shards_parity], axis=1)
        flat = np.ascontiguousarray(shards.transpose(1, 0, 2).reshape(k + 1, m * w))
        data = self.code.decode(flat, list(erased))
        return np.ascontiguousarray(data.reshape(k, m, w).transpose(1, 0, 2))


def make_scheme(name: str, num_nodes: int, r: int) -> ParityScheme:
    """A scheme with ``k = num_nodes - r`` data rows per stripe (every stripe spans all nodes),
    for the code :data:`~nmp.coding.parity_codes.PARITY_CODES` registers as ``name``."""
    k = num_nodes - r
    if k < 1:
        raise NmpError(f"{num_nodes} nodes cannot hold a stripe with r = {r} parities")
    code = PARITY_CODES.get(name)
    error = code.parities_error(r)
    if error:
        raise NmpError(error)
    return scheme_for(code.build(k, r), code.name)


@functools.singledispatch
def scheme_for(code: Any, name: str) -> ParityScheme:
    """The stripe scheme that applies ``code`` (dispatched on the code's class)."""
    raise NmpError(f"parity code '{name}' ({type(code).__name__}) has no training-store scheme")


@scheme_for.register
def _(code: _SystematicCode, name: str) -> ParityScheme:
    return ReedSolomonScheme(code.k, code.r, code, name)


@scheme_for.register
def _(code: XorCode, name: str) -> ParityScheme:
    return XorScheme(code.k, name)


@scheme_for.register
def _(code: FloatSumParity, name: str) -> ParityScheme:
    return FloatSumScheme(code.k, name)


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def _u64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint64)
