"""Float-sum parity (ECRec / ECRM): parity is the float32 sum of k rows, kept by adding deltas.

The published system codes embedding rows with a (k + 1, k) code whose parity is the float32
sum of the k data rows; the data server applies the optimizer and sends the *applied* delta
(``new - old``), which the parity server adds. Floating-point addition is not associative, so
this parity drifts from a fresh sum, and even a fresh sum does not give the lost row back bit for
bit (``(a + b) - b != a``). :func:`measure_float_sum_drift` measures both against XOR parity on
raw bits, which is exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from nmp.coding.bytesview import as_bytes
from nmp.coding.codes import XorCode
from nmp.coding.errors import CodingError, DecodeError
from nmp.jit import njit


def _f32(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype != np.float32:
        raise CodingError(f"{name} must be float32, got {arr.dtype}")
    return arr


def _seq_sum(rows: np.ndarray) -> np.ndarray:
    """Sum of rows in row order, rounding to float32 after every add (what a server does)."""
    acc = rows[0].copy()
    for row in rows[1:]:  # k is small (2..8); each add is vectorized over the row
        acc += row
    return acc


class FloatSumParity:
    """(k + 1, k) code with parity ``sum_j data_j`` in float32 (not exact; see module doc)."""

    def __init__(self, k: int) -> None:
        if int(k) < 1:
            raise CodingError(f"FloatSumParity needs k >= 1, got {k}")
        self.k = int(k)
        self.r = 1
        self.coefficients = np.ones((1, self.k), dtype=np.float32)

    def __repr__(self) -> str:
        return f"FloatSumParity(k={self.k})"

    @property
    def memory_overhead(self) -> float:
        return 1.0 / self.k

    def encode(self, data: np.ndarray) -> np.ndarray:
        """Parity ``float32 [1, n]`` of ``data float32 [k, n]``."""
        data = _f32(data, "data")
        if data.ndim != 2 or data.shape[0] != self.k:
            raise CodingError(f"data must have shape [k={self.k}, n], got {data.shape}")
        return _seq_sum(data)[None, :]

    def _check(self, parity: np.ndarray, j: int, *rows: np.ndarray) -> np.ndarray:
        if not 0 <= int(j) < self.k:
            raise CodingError(f"data row index j={j} outside 0..{self.k - 1}")
        parity = _f32(parity, "parity")
        if parity.ndim != 2 or parity.shape[0] != 1:
            raise CodingError(f"parity must be float32 [1, n], got {parity.shape}")
        for row in rows:
            if np.shape(row) != parity.shape[1:]:
                raise CodingError(
                    f"row of shape {np.shape(row)} does not match parity {parity.shape}"
                )
        return parity

    def update(self, parity: np.ndarray, j: int, old: np.ndarray, new: np.ndarray) -> None:
        """In place: ``parity += (new - old)``, the applied delta of data row ``j``."""
        parity = self._check(parity, j, old, new)
        parity[0] += _f32(new, "new") - _f32(old, "old")

    def update_delta(self, parity: np.ndarray, j: int, delta: np.ndarray) -> None:
        """In place: ``parity += delta`` (the delta the data server applied to row ``j``)."""
        parity = self._check(parity, j, delta)
        parity[0] += _f32(delta, "delta")

    def decode(self, shards: np.ndarray, erased: Iterable[int]) -> np.ndarray:
        """Data ``float32 [k, n]``; a lost data row is ``parity - sum(other rows)`` (inexact)."""
        shards = _f32(shards, "shards")
        if shards.ndim != 2 or shards.shape[0] != self.k + 1:
            raise CodingError(f"shards must have shape [k+1={self.k + 1}, n], got {shards.shape}")
        lost = sorted({int(e) for e in erased})
        if any(not 0 <= e <= self.k for e in lost):
            raise CodingError(f"erased shard index outside 0..{self.k}: {lost}")
        if len(lost) > 1:
            raise DecodeError(f"{len(lost)} shards lost ({lost}) but the code tolerates only 1")
        data = shards[: self.k].copy()
        if lost and lost[0] < self.k:
            e = lost[0]
            others = np.delete(data, e, axis=0)
            data[e] = shards[self.k] - _seq_sum(others) if self.k > 1 else shards[self.k]
        return data


@njit(cache=True)
def _apply_updates(data, parity, stripe, row, step):  # pragma: no cover - compiled
    """Sequential optimizer steps: ``new = old + step`` on the data row, then the parity adds
    the applied delta ``new - old``, all in float32 (the ECRec difference propagation)."""
    for t in range(stripe.shape[0]):
        s = stripe[t]
        j = row[t]
        for c in range(data.shape[2]):
            old = data[s, j, c]
            new = old + step[t, c]
            data[s, j, c] = new
            parity[s, c] = parity[s, c] + (new - old)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of representable float32 values between ``a`` and ``b`` (0 for +0 vs -0)."""

    def ordered(x: np.ndarray) -> np.ndarray:
        u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
        return np.where(u & 0x80000000, -(u & 0x7FFFFFFF), u)

    return np.abs(ordered(a) - ordered(b))


@dataclass(frozen=True)
class FloatSumDrift:
    """How far float-sum parity drifts after ``updates`` random row updates (see fields)."""

    k: int
    stripes: int
    dim: int
    updates: int
    seed: int
    parity_max_abs: float  # max |maintained parity - fresh float32 sum|
    parity_max_ulp: int  # the same in float32 ULPs
    parity_mismatch_fraction: float  # parity elements not bit-equal to a fresh sum
    recovery_max_abs: float  # max |row decoded from maintained parity - true row|
    recovery_max_ulp: int
    recovery_mismatch_fraction: float  # decoded elements not bit-equal to the true value
    fresh_recovery_mismatch_fraction: float  # same with a fresh (drift-free) float sum
    xor_recovery_mismatch_fraction: float  # same with XOR parity on raw bits (always 0)

    def to_dict(self) -> dict:
        return asdict(self)


def measure_float_sum_drift(
    k: int = 4,
    *,
    stripes: int = 64,
    dim: int = 64,
    updates: int = 100_000,
    init_scale: float = 0.05,
    step_scale: float = 1e-3,
    seed: int = 0,
) -> FloatSumDrift:
    """Apply ``updates`` random optimizer steps to rows of ``stripes`` stripes of k float32 rows
    (width ``dim``), keeping float-sum parity by difference propagation and XOR parity by
    ``old XOR new``, then compare each with a fresh encode and decode every row from each.

    Values start uniform in ``[-init_scale, init_scale]`` (embedding-like initialization) and
    steps are normal with deviation ``step_scale`` (SGD-sized); both are chosen, not measured.
    """
    rng = np.random.default_rng(seed)
    data = rng.uniform(-init_scale, init_scale, (stripes, k, dim)).astype(np.float32)
    code = FloatSumParity(k)
    parity = np.stack([code.encode(d)[0] for d in data])
    start = data.copy()
    stripe = rng.integers(0, stripes, updates)
    row = rng.integers(0, k, updates)
    step = (rng.standard_normal((updates, dim)) * step_scale).astype(np.float32)
    _apply_updates(data, parity, stripe, row, step)

    xor = XorCode(k)
    xor_parity = np.stack([xor.encode(as_bytes(d)) for d in start])
    # XOR difference propagation over the same steps, in one vectorized pass per stripe: the
    # XOR of all deltas of a row telescopes to start XOR final, and XOR is associative.
    for s in range(stripes):
        for j in range(k):
            xor.update(xor_parity[s], j, as_bytes(start[s, j]), as_bytes(data[s, j]))

    fresh = np.stack([code.encode(d)[0] for d in data])
    drift_ulp = ulp_distance(parity, fresh)
    rec_err, rec_ulp, rec_bad, fresh_bad, xor_bad = 0.0, 0, 0, 0, 0
    for s in range(stripes):  # k decodes per stripe, each vectorized over the row
        shards = np.concatenate([data[s], parity[s][None]])
        fresh_shards = np.concatenate([data[s], fresh[s][None]])
        xor_shards = np.concatenate([as_bytes(data[s]), xor_parity[s]])
        for j in range(k):
            got = code.decode(shards, [j])[j]
            rec_err = max(rec_err, float(np.max(np.abs(got - data[s, j]))))
            rec_ulp = max(rec_ulp, int(ulp_distance(got, data[s, j]).max()))
            rec_bad += int(np.count_nonzero(got.view(np.uint32) != data[s, j].view(np.uint32)))
            got_fresh = code.decode(fresh_shards, [j])[j]
            fresh_bad += int(
                np.count_nonzero(got_fresh.view(np.uint32) != data[s, j].view(np.uint32))
            )
            got_xor = xor.decode(xor_shards, [j])[j]
            xor_bad += int(np.count_nonzero(got_xor != as_bytes(data[s, j])))
    total = stripes * k * dim
    return FloatSumDrift(
        k=k,
        stripes=stripes,
        dim=dim,
        updates=updates,
        seed=seed,
        parity_max_abs=float(np.max(np.abs(parity - fresh))),
        parity_max_ulp=int(drift_ulp.max()),
        parity_mismatch_fraction=float(np.count_nonzero(drift_ulp) / parity.size),
        recovery_max_abs=rec_err,
        recovery_max_ulp=rec_ulp,
        recovery_mismatch_fraction=rec_bad / total,
        fresh_recovery_mismatch_fraction=fresh_bad / total,
        xor_recovery_mismatch_fraction=xor_bad / (total * 4),
    )
