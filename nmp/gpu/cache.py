"""Sectored set-associative LRU caches (GPU L1 and L2), compiled with numba.

What the hardware does: a cache of ``sets x ways`` lines of ``line_bytes`` bytes, each line split
into sectors of ``sector_bytes`` (32 B on NVIDIA GPUs). A request names one line and a bitmask of
the sectors it needs. If the line is present, the sectors already valid hit and the missing ones
are fetched from the next level and become valid (a *sector miss*); if the line is absent, the
least recently used unpinned way of the set is replaced and only the requested sectors are
fetched. Pinned lines (L2 pinning with ``evict_last``) are installed before the trace with every
sector valid, occupy their way for good and are never chosen as victims; at most ``pin_ways`` ways
of a set may be pinned, further pinned lines fall back to normal caching.

Set index: ``line mod sets`` for L1 (``hashed=False``) and a multiplicative hash of the line
address for L2 (``hashed=True``): ``h = (line * 0x9E3779B97F4A7C15) mod 2^64``, set =
``((h >> 32) * sets) >> 32`` (Lemire's multiply-shift range reduction, no division). It stands in
for the undisclosed slice/set hash of the real L2 and spreads a row's consecutive lines and the
tables' strides over slices.

A *bank* of caches (one L1 per SM) shares one state array indexed by cache id. The per-access
primitive :func:`access` is used both by :func:`simulate_trace` (a plain trace, as the tests use
it against a reference LRU) and by the fused embedding-kernel simulator in :mod:`nmp.gpu.stream`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

# Knuth's multiplicative constant (2^64 / golden ratio), as uint64.
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@nb.njit(cache=True, error_model="numpy")
def set_of(line: np.int64, sets: np.int64, hashed: bool) -> np.int64:
    """Set index of a line address (see the module docstring)."""
    if hashed:
        h = (np.uint64(line) * _HASH_MULT) >> np.uint64(32)
        return np.int64((h * np.uint64(sets)) >> np.uint64(32))
    return line % sets


def set_index(lines: np.ndarray, sets: int, hashed: bool) -> np.ndarray:
    """Vectorized :func:`set_of` (numpy), for callers outside numba."""
    lines = np.asarray(lines, dtype=np.int64)
    if hashed:
        with np.errstate(over="ignore"):
            h = (lines.astype(np.uint64) * _HASH_MULT) >> np.uint64(32)
            return ((h * np.uint64(sets)) >> np.uint64(32)).astype(np.int64)
    return lines % sets


@intrinsic
def _prefetch(typingctx, arr, flat_index):
    """``llvm.prefetch`` of element ``flat_index`` of a C-contiguous array: a hint that pulls its
    host cache line early, with no effect on any value (and no fault if out of range)."""

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.void(arr, flat_index), codegen


@nb.njit(cache=True)
def prefetch_set(ent, c, s):
    """Start loading set ``s`` of cache ``c`` into the host's caches before :func:`access` needs
    it (the simulator is bound by host cache misses on the state, not by arithmetic)."""
    ways = ent.shape[3]
    first = (c * ent.shape[1] + s) * ways * 2
    for k in range(0, ways * 2 + 7, 8):  # one prefetch per 64-B host line
        _prefetch(ent, first + k)


_VALID = np.int64(0xFF)
_PINNED = np.int64(0x100)
_STAMP_SHIFT = np.int64(9)


@dataclass
class CacheState:
    """State of a bank of ``n`` identical caches, packed for locality: ``ent[n, sets, 0, ways]``
    holds the ways' tags (-1 = empty) and ``ent[n, sets, 1, ways]`` their meta words
    ``stamp << 9 | pinned << 8 | valid`` (LRU stamp, pinned flag, valid-sector mask), so a set is
    one contiguous run of memory and its tags are searched as one contiguous vector."""

    ent: np.ndarray
    hashed: bool
    sectors_per_line: int

    @classmethod
    def empty(cls, n: int, sets: int, ways: int, *, hashed: bool, sectors_per_line: int):
        ent = np.zeros((n, sets, 2, ways), dtype=np.int64)
        ent[:, :, 0, :] = -1
        return cls(ent=ent, hashed=hashed, sectors_per_line=sectors_per_line)

    @property
    def sets(self) -> int:
        return self.ent.shape[1]

    @property
    def ways(self) -> int:
        return self.ent.shape[3]

    @property
    def tags(self) -> np.ndarray:
        return self.ent[:, :, 0, :]

    @property
    def pinned(self) -> np.ndarray:
        return (self.ent[:, :, 1, :] & _PINNED) != 0

    @property
    def valid(self) -> np.ndarray:
        return (self.ent[:, :, 1, :] & _VALID).astype(np.uint8)

    def reset(self) -> None:
        """Invalidate every unpinned line (as L1 is at a kernel boundary); stamps restart."""
        pinned = self.pinned
        self.ent[:, :, 0, :][~pinned] = -1
        self.ent[:, :, 1, :] = np.where(pinned, self.ent[:, :, 1, :] & (_PINNED | _VALID), 0)

    def unpin_all(self) -> None:
        """Release every pinned line: it stays cached as the least recently used line."""
        meta = self.ent[:, :, 1, :]
        self.ent[:, :, 1, :] = np.where((meta & _PINNED) != 0, meta & _VALID, meta)

    def pin(self, lines: np.ndarray, pin_ways: int) -> int:
        """Install ``lines`` as pinned in cache 0 (all sectors valid), at most ``pin_ways`` per
        set, in the given order (hottest first). Returns how many were pinned."""
        full = (1 << self.sectors_per_line) - 1
        return int(_pin(self.ent, np.asarray(lines, dtype=np.int64), pin_ways, self.hashed, full))


@nb.njit(cache=True)
def _pin(ent, lines, pin_ways, hashed, full):
    sets = ent.shape[1]
    ways = ent.shape[3]
    count = np.zeros(sets, dtype=np.int64)
    for s in range(sets):
        for w in range(ways):
            if ent[0, s, 1, w] & _PINNED:
                count[s] += 1
    done = 0
    for i in range(lines.shape[0]):
        line = lines[i]
        s = set_of(line, sets, hashed)
        if count[s] >= pin_ways:
            continue
        present = False
        for w in range(ways):
            if ent[0, s, 0, w] == line and ent[0, s, 1, w] & _PINNED:
                present = True
                break
        if present:
            continue
        for w in range(ways):
            if not ent[0, s, 1, w] & _PINNED:
                ent[0, s, 0, w] = line
                ent[0, s, 1, w] = _PINNED | full
                count[s] += 1
                done += 1
                break
    return done


@nb.njit(cache=True, error_model="numpy")
def access_set(ent, c, s, line, mask, t):
    """:func:`access` with the set index ``s`` of ``line`` already known."""
    ways = ent.shape[3]
    m = np.int64(mask)
    for w in range(ways):
        if ent[c, s, 0, w] == line:
            meta = ent[c, s, 1, w]
            ent[c, s, 1, w] = (t << _STAMP_SHIFT) | (meta & _PINNED) | (meta & _VALID) | m
            return np.uint8(meta & m)
    victim = -1
    oldest = np.int64(0x7FFFFFFFFFFFFFFF)
    for w in range(ways):
        meta = ent[c, s, 1, w]
        if meta & _PINNED:
            continue
        if ent[c, s, 0, w] == -1:
            victim = w
            break
        if meta < oldest:
            oldest = meta
            victim = w
    if victim >= 0:
        ent[c, s, 0, victim] = line
        ent[c, s, 1, victim] = (t << _STAMP_SHIFT) | m
    return np.uint8(0)


@nb.njit(cache=True, error_model="numpy")
def access(ent, c, line, mask, t, hashed):
    """One request to cache ``c``: returns the mask of requested sectors that hit.

    Updates LRU (stamp = ``t``, which must increase per request), fills missing sectors, and on
    a line miss replaces an empty way if any, else the least recently used unpinned way. If every
    way is pinned the line is not allocated (it bypasses the cache).
    """
    return access_set(ent, c, set_of(line, ent.shape[1], hashed), line, mask, t)


@nb.njit(cache=True, error_model="numpy")
def _simulate(ent, cache_ids, lines, masks, hashed, t0):
    n = lines.shape[0]
    hits = np.empty(n, dtype=np.uint8)
    for i in range(n):
        hits[i] = access(ent, cache_ids[i], lines[i], masks[i], t0 + i + 1, hashed)
    return hits


class StampClock:
    """Monotonic LRU time shared by successive traces on one state."""

    def __init__(self) -> None:
        self.t = 0


def simulate_trace(
    state: CacheState,
    lines: np.ndarray,
    masks: np.ndarray,
    cache_ids: np.ndarray | None = None,
    clock: StampClock | None = None,
) -> np.ndarray:
    """Run a trace of (line, sector mask[, cache id]) requests through ``state``.

    Returns the uint8 mask of hit sectors per request (``masks & ~hits`` is what missed).
    """
    lines = np.ascontiguousarray(lines, dtype=np.int64)
    masks = np.ascontiguousarray(masks, dtype=np.uint8)
    if cache_ids is None:
        cache_ids = np.zeros(lines.shape[0], dtype=np.int64)
    cache_ids = np.ascontiguousarray(cache_ids, dtype=np.int64)
    clock = clock or StampClock()
    hits = _simulate(state.ent, cache_ids, lines, masks, state.hashed, clock.t)
    clock.t += lines.shape[0]
    return hits


def popcount8(x: np.ndarray) -> np.ndarray:
    """Set bits per uint8 (sector counts of masks)."""
    return np.unpackbits(np.asarray(x, dtype=np.uint8)[..., None], axis=-1).sum(axis=-1)
