"""Seeded random update streams for the parity unit, and their reference results from
:mod:`nmp.coding` (the hardware must agree with these, bit for bit).

The stream updates a table laid out as ``depth`` stripes of ``k`` data rows, each row one parity
word wide (``width / 8`` bytes); parity word ``a`` holds parity row ``parity_row`` of stripe
``a``. Half the updates hit a small hot set of addresses, so back-to-back updates to one address
(the read-modify-write hazard) are frequent; a fraction of cycles carry no update (bubbles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.coding import ReedSolomonCode, XorCode
from nmp.coding.gf256 import gf_mul
from nmp.rtl.parity import ParityUnitConfig


@dataclass(frozen=True)
class UpdateStream:
    """One entry per offered slot; entries with ``valid == False`` are bubbles."""

    valid: np.ndarray  # bool [n]
    addr: np.ndarray  # int64 [n]
    old: np.ndarray  # uint8 [n, width/8]
    new: np.ndarray  # uint8 [n, width/8]
    coef: np.ndarray  # uint8 [n] (1 for the XOR unit)
    final_parity: dict[int, bytes]  # fresh encode of the final data, per touched address

    @property
    def delta(self) -> np.ndarray:
        return self.old ^ self.new

    def __len__(self) -> int:
        return int(self.valid.shape[0])


def word_to_int(word: np.ndarray) -> int:
    """Byte lane b of a word is bits 8b..8b+7 (little-endian)."""
    return int.from_bytes(np.asarray(word, dtype=np.uint8).tobytes(), "little")


def int_to_word(value: int, width: int) -> np.ndarray:
    return np.frombuffer(int(value).to_bytes(width // 8, "little"), dtype=np.uint8).copy()


def random_stream(
    cfg: ParityUnitConfig,
    n: int,
    *,
    seed: int = 0,
    k: int = 4,
    parity_row: int = 1,
    hot_addresses: int = 4,
    hot_fraction: float = 0.5,
    bubble_fraction: float = 0.2,
    touch: int | None = None,
) -> UpdateStream:
    """``n`` entries of random row updates, coded by ``XorCode(k)`` (XOR unit) or
    ``ReedSolomonCode(k, 2)`` (GF unit; coefficients of ``parity_row``). Only addresses below
    ``touch`` (default: ``min(depth, 64)``) are used, so collisions occur and the final
    check stays short."""
    rng = np.random.default_rng(seed)
    nbytes = cfg.width // 8
    touch = min(cfg.depth, 64) if touch is None else min(touch, cfg.depth)
    code: ReedSolomonCode | XorCode
    if cfg.gf:
        code = ReedSolomonCode(k, 2)
        coefs = code.coefficients[parity_row]
    else:
        code = XorCode(k)
        parity_row = 0
        coefs = code.coefficients[0]
    data = np.zeros((touch, k, nbytes), dtype=np.uint8)  # all zero: the cleared parity matches
    valid = rng.random(n) >= bubble_fraction
    hot = rng.choice(touch, size=min(hot_addresses, touch), replace=False)
    addr = np.where(rng.random(n) < hot_fraction, rng.choice(hot, n), rng.integers(0, touch, n))
    rows = rng.integers(0, k, n)
    new = rng.integers(0, 256, (n, nbytes), dtype=np.uint8)
    old = np.zeros_like(new)
    for t in np.nonzero(valid)[0]:  # sequential by nature: each update sees the previous ones
        old[t] = data[addr[t], rows[t]]
        data[addr[t], rows[t]] = new[t]
    bubbles = ~valid  # bubbles carry random junk that the unit must ignore
    old[bubbles] = rng.integers(0, 256, (int(bubbles.sum()), nbytes), dtype=np.uint8)
    coef = coefs[rows].astype(np.uint8)
    touched = sorted({int(a) for a in addr[valid]})
    final = {a: code.encode(data[a])[parity_row].tobytes() for a in touched}
    return UpdateStream(valid, addr.astype(np.int64), old, new, coef, final)


def reference_writes(stream: UpdateStream) -> list[tuple[int, bytes]]:
    """The (addr, word) the unit must write for each accepted update, in order, computed by
    sequential read-modify-write with the GF(2^8) product of :mod:`nmp.coding`."""
    mem: dict[int, np.ndarray] = {}
    out = []
    for t in np.nonzero(stream.valid)[0]:
        a = int(stream.addr[t])
        word = mem.get(a, np.zeros(stream.old.shape[1], dtype=np.uint8))
        word = word ^ gf_mul(stream.coef[t], stream.old[t] ^ stream.new[t])
        mem[a] = word
        out.append((a, word.tobytes()))
    return out
