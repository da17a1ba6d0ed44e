"""Sectored set-associative LRU caches (GPU L1 and L2), compiled with numba.

What the hardware does: a cache of ``sets x ways`` lines of ``line_bytes`` bytes, each line split
into sectors of ``sector_bytes`` (32 B on NVIDIA GPUs). A request names one line and a bitmask of
the sectors it needs. If the line is present, the sectors already valid hit and the missing ones
are fetched from the next level and become valid (a *sector miss*); if the line is absent, the
least recently used unpinned way of the set is replaced and only the requested sectors are
fetched.

Persisting lines (the L2 set-aside of CUDA's ``cudaLimitPersistingL2CacheSize``, filled by
accesses with the persisting property: an access-policy window's ``hitProp`` or a
``prefetch.global.L2::evict_last``): a request may carry the persisting class. At most ``carve``
ways of a set (the set-aside's share of the set) hold persisting lines. A persisting miss takes an
empty way or the least recently used normal line while the set holds fewer than ``carve``
persisting lines, else it replaces the least recently used persisting line (persisting data larger
than the set-aside thrashes within it). A normal miss takes an empty way or the least recently used
normal line and never evicts a persisting one (normal accesses may use the set-aside ways that
persisting lines leave free, as the CUDA programming guide states); with every way persisting it
bypasses the cache. A persisting hit on a normal line promotes it (demoting the set's least
recently used persisting line when the set is at ``carve``). ``reset_persisting`` turns every
persisting line normal (``cudaCtxResetPersistingL2Cache``).

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

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from nmp.jit import njit

# Knuth's multiplicative constant (2^64 / golden ratio), as uint64.
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, error_model="numpy")
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


@njit(cache=True)
def prefetch_set(ent, c, s):
    """Start loading set ``s`` of cache ``c`` into the host's caches before :func:`access` needs
    it (the simulator is bound by host cache misses on the state, not by arithmetic)."""
    ways = ent.shape[3]
    first = (c * ent.shape[1] + s) * ways * 2
    for k in range(0, ways * 2 + 7, 8):  # one prefetch per 64-B host line
        _prefetch(ent, first + k)  # type: ignore[call-arg]  # an intrinsic: no typingctx


_VALID = np.int64(0xFF)
_PINNED = np.int64(0x100)
_STAMP_SHIFT = np.int64(9)


@dataclass
class CacheState:
    """State of a bank of ``n`` identical caches, packed for locality: ``ent[n, sets, 0, ways]``
    holds the ways' tags (-1 = empty) and ``ent[n, sets, 1, ways]`` their meta words
    ``stamp << 9 | persisting << 8 | valid`` (LRU stamp, persisting flag, valid-sector mask), so
    a set is one contiguous run of memory and its tags are searched as one contiguous vector."""

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
        """Invalidate every line that is not persisting (as L1 is at a kernel boundary)."""
        pinned = self.pinned
        self.ent[:, :, 0, :][~pinned] = -1
        self.ent[:, :, 1, :] = np.where(pinned, self.ent[:, :, 1, :], 0)

    def reset_persisting(self) -> None:
        """``cudaCtxResetPersistingL2Cache``: every persisting line becomes normal (it stays
        cached with its LRU stamp)."""
        self.ent[:, :, 1, :] &= ~_PINNED

    def persist(
        self,
        lines: np.ndarray,
        carve: int,
        clock: StampClock,
        caches: np.ndarray | None = None,
        sample: int = 1,
    ) -> tuple[int, int]:
        """``prefetch.global.L2::evict_last`` of every sector of ``lines`` (in the given order)
        into each cache of ``caches`` (default all): persisting accesses with set-aside ``carve``
        ways per set. Returns (lines persisting afterwards, sectors fetched from memory).
        ``sample`` = k: only the lines of sets whose index is a multiple of k are simulated (the
        sets line sampling keeps, :mod:`nmp.gpu.stream`); both counts are scaled by k."""
        full = (1 << self.sectors_per_line) - 1
        caches = np.arange(self.ent.shape[0]) if caches is None else caches
        lines = np.ascontiguousarray(lines, dtype=np.int64)
        if sample > 1:
            lines = lines[set_index(lines, self.sets, self.hashed) % sample == 0]
        fetched = _persist(
            self.ent, np.asarray(caches, dtype=np.int64), lines, carve, self.hashed, full, clock.t
        )
        clock.t += lines.shape[0] * len(caches)
        return int(np.count_nonzero(self.pinned)) * sample, int(fetched) * sample


# Set bits of each 8-bit sector mask (sectors a mask names).
POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


@njit(cache=True)
def _persist(ent, caches, lines, carve, hashed, full, t0):
    sets = ent.shape[1]
    t = t0
    fetched = 0
    for c in caches:
        for i in range(lines.shape[0]):
            t += 1
            s = set_of(lines[i], sets, hashed)
            hit = access_set(ent, c, s, lines[i], full, t, True, carve)
            fetched += POPCOUNT8[full & ~np.int64(hit)]
    return fetched


@njit(cache=True, error_model="numpy")
def _lru_way(ent, c, s, persisting):
    """Least recently used way of set ``s`` among the persisting (or the normal) lines; an empty
    way first when looking for a normal one; -1 if there is none."""
    ways = ent.shape[3]
    victim = -1
    oldest = np.int64(0x7FFFFFFFFFFFFFFF)
    for w in range(ways):
        meta = ent[c, s, 1, w]
        is_p = (meta & _PINNED) != 0
        if is_p != persisting:
            continue
        if not persisting and ent[c, s, 0, w] == -1:
            return w
        if meta < oldest:
            oldest = meta
            victim = w
    return victim


@njit(cache=True, error_model="numpy")
def find_way(ent, c, s, line):
    """The way of set ``s`` of cache ``c`` that holds ``line``, or -1."""
    for w in range(ent.shape[3]):
        if ent[c, s, 0, w] == line:
            return w
    return -1


@njit(cache=True, error_model="numpy")
def rank_of_way(ent, c, s, way):
    """How many lines of set ``s`` were used more recently than the one in ``way`` (0: the most
    recent); -1 if ``way`` is -1 (see :func:`recency_rank`)."""
    if way < 0:
        return -1
    mine = ent[c, s, 1, way] >> _STAMP_SHIFT
    rank = 0
    for w in range(ent.shape[3]):
        if ent[c, s, 0, w] != -1 and (ent[c, s, 1, w] >> _STAMP_SHIFT) > mine:
            rank += 1
    return rank


@njit(cache=True, error_model="numpy")
def recency_rank(ent, c, s, line):
    """How many lines of set ``s`` were used more recently than ``line`` (0: the most recent),
    or -1 if ``line`` is not in the set. Over a hashed set index, rank / ways approximates the
    line's reuse distance as a fraction of the cache (what :mod:`nmp.gpu.model` uses to tell a
    near-partition L2 hit from a far one)."""
    return rank_of_way(ent, c, s, find_way(ent, c, s, line))


@njit(cache=True, error_model="numpy")
def access_set(ent, c, s, line, mask, t, persist=False, carve=0):
    """:func:`access` with the set index ``s`` of ``line`` already known; ``persist``: the
    request has the persisting property, ``carve``: set-aside ways per set."""
    return access_way(ent, c, s, find_way(ent, c, s, line), line, mask, t, persist, carve)


@njit(cache=True, error_model="numpy")
def access_way(ent, c, s, way, line, mask, t, persist=False, carve=0):
    """:func:`access_set` with the way that holds ``line`` already found (:func:`find_way`;
    -1: a line miss)."""
    ways = ent.shape[3]
    m = np.int64(mask)
    persist = persist and carve > 0
    n_p = 0
    if persist:
        for w in range(ways):
            if ent[c, s, 1, w] & _PINNED:
                n_p += 1
    if way >= 0:
        meta = ent[c, s, 1, way]
        flag = meta & _PINNED
        if persist and not flag:
            if n_p >= carve:
                old = _lru_way(ent, c, s, True)
                ent[c, s, 1, old] &= ~_PINNED
            flag = _PINNED
        ent[c, s, 1, way] = (t << _STAMP_SHIFT) | flag | (meta & _VALID) | m
        return np.uint8(meta & m)
    # A persisting miss at the set's share of the set-aside replaces a persisting line.
    victim = _lru_way(ent, c, s, persist and n_p >= carve)
    if victim >= 0:
        ent[c, s, 0, victim] = line
        ent[c, s, 1, victim] = (t << _STAMP_SHIFT) | (_PINNED if persist else 0) | m
    return np.uint8(0)


@njit(cache=True, error_model="numpy")
def access(ent, c, line, mask, t, hashed, persist=False, carve=0):
    """One request to cache ``c``: returns the mask of requested sectors that hit.

    Updates LRU (stamp = ``t``, which must increase per request), fills missing sectors, and on
    a line miss replaces a way as the module docstring says (a normal request never evicts a
    persisting line; with every way persisting it bypasses the cache).
    """
    return access_set(ent, c, set_of(line, ent.shape[1], hashed), line, mask, t, persist, carve)


@njit(cache=True, error_model="numpy")
def _simulate(ent, cache_ids, lines, masks, persist, carve, hashed, t0):
    n = lines.shape[0]
    hits = np.empty(n, dtype=np.uint8)
    for i in range(n):
        hits[i] = access(
            ent, cache_ids[i], lines[i], masks[i], t0 + i + 1, hashed, persist[i], carve
        )
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
    *,
    persist: np.ndarray | None = None,
    carve: int = 0,
) -> np.ndarray:
    """Run a trace of (line, sector mask[, cache id][, persisting flag]) requests through
    ``state`` (``carve``: set-aside ways per set for persisting requests).

    Returns the uint8 mask of hit sectors per request (``masks & ~hits`` is what missed).
    """
    lines = np.ascontiguousarray(lines, dtype=np.int64)
    masks = np.ascontiguousarray(masks, dtype=np.uint8)
    if cache_ids is None:
        cache_ids = np.zeros(lines.shape[0], dtype=np.int64)
    cache_ids = np.ascontiguousarray(cache_ids, dtype=np.int64)
    clock = clock or StampClock()
    if persist is None:
        persist = np.zeros(lines.shape[0], dtype=np.bool_)
    persist = np.ascontiguousarray(persist, dtype=np.bool_)
    hits = _simulate(state.ent, cache_ids, lines, masks, persist, carve, state.hashed, clock.t)
    clock.t += lines.shape[0]
    return hits


def popcount8(x: np.ndarray) -> np.ndarray:
    """Set bits per uint8 (sector counts of masks)."""
    return np.unpackbits(np.asarray(x, dtype=np.uint8)[..., None], axis=-1).sum(axis=-1)
