"""``np.random.default_rng([a, b])`` for two keys, without numpy's seeding in Python.

A batch draws each table from its own Generator, ``default_rng([seed, table])``: 26 of them
for every new-seed design point of ``recross-eval``. numpy spends about 26 us on one, most of
it hashing the entropy in SeedSequence's Python-level code (10 us) and again for the PCG64
state (10 us); a design point spent 0.6-1.0 ms so (issue 43). The hash is integer arithmetic,
the same for every numpy since SeedSequence was added (its output is fixed by numpy's seeding
policy, NEP 19), so it runs compiled here and PCG64 takes the state words as they are.
``tests/workload/test_seeding.py`` checks the Generators' states against numpy's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.random import PCG64, Generator
from numpy.random.bit_generator import ISeedSequence

_W32 = 0xFFFFFFFF
_KERNEL: Any = None


class _StateWords(ISeedSequence):
    """A seed sequence whose state words are already computed (PCG64 asks for 4 uint64)."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        self.words = words

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if n_words != 4 or np.dtype(dtype) != np.uint64:  # (PCG64 asks for nothing else)
            raise ValueError(f"state words: have 4 uint64, asked for {n_words} {dtype}")
        return self.words


def _words(key: int) -> list[int]:
    # SeedSequence's words of a non-negative int: little-endian 32-bit words, 0 as one word
    return [key & _W32] if key <= _W32 else [key & _W32, key >> 32]


def rng_of(a: int, b: int) -> Generator:
    """A Generator equal to ``np.random.default_rng([a, b])`` (same state, same draws)."""
    a, b = int(a), int(b)
    if not (0 <= a < 1 << 64 and 0 <= b < 1 << 64) or not _checked():
        return np.random.default_rng([a, b])  # (numpy's words, errors and all)
    return _generator(a, b)


def _generator(a: int, b: int) -> Generator:
    ent = _words(a) + _words(b)
    n = len(ent)
    ent += [0] * (4 - n)
    words = np.empty(4, np.uint64)
    _KERNEL(ent[0], ent[1], ent[2], ent[3], n, words)
    # (PCG64 takes any ISeedSequence; numpy's stubs name only SeedSequence)
    return Generator(PCG64(_StateWords(words)))  # type: ignore[arg-type]


_OK: bool | None = None


def _checked() -> bool:
    """Whether this numpy's Generators equal the ones built here, tried once per process on
    keys of one and two words each (a numpy that seeded otherwise would get its own)."""
    global _OK, _KERNEL
    if _OK is None:
        from nmp.workload._kernels import seed_state_kernel  # numba: loaded on use

        _KERNEL = seed_state_kernel
        try:
            _OK = all(
                _generator(x, y).bit_generator.state
                == np.random.default_rng([x, y]).bit_generator.state
                for x, y in ((0, 0), (12345, 7), (2**40 + 3, 2**63 + 11))
            )
        except (TypeError, ValueError):
            _OK = False
    return _OK
