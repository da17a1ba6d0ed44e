"""Replays reused across design points.

The DRAM engine is a pure function of its inputs, so a node's request stream replayed on the
same view gives the same statistics. Points that share a batch (one lookup seed, as every point
of an ``nmp evaluate`` sweep) and a level configuration (the layout, placement and lowering),
such as a sweep of energy, area, lane or host parameters, then replay each stream once.

An entry is keyed on the engine backend, the view's full value (timing, organization,
controller, energy, bus level: its ``repr``) and a digest of the stream; the stored copy of the
addresses (and writes) confirms a candidate element by element, so a digest collision is a
miss, never a wrong result. A stream is stored the first time it is replayed while that has
paid off: up to :data:`SPECULATIVE_STORES` streams stored at their first sighting and not yet
reused (a reuse refunds its stream), so that a sweep's second point already reuses its first
point's replays; past that budget a stream is stored the second time its digest is seen (the
first time only the digest is noted): points that share nothing, such as points with their own
seeds, then pay for a digest per replay (~0.1 ms per ReCross point), not for a copy of every
stream (~1.3 ms per ReCross point). The cache holds at most :attr:`ReplayCache.max_bytes`
(least recently used out first; 0 turns it off); each process (``nmp evaluate``'s workers)
has its own.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from nmp.identity_cache import IdentityCache
from nmp.memory.driver import engine_backend

# Enough for every node stream of ~25 ReCross points on recross-eval (~2.2 MB each)
REPLAY_CACHE_BYTES = 64 << 20
_ENTRY_OVERHEAD_BYTES = 2048  # the statistics object and the key, roughly
_SEEN_MAX = 4096  # digests noted once (a few hundred bytes each)
# Streams stored at their first sighting and not reused yet, at most: chosen, about 3.5
# ReCross points' node streams (18 each), so that a run whose points share nothing (a new seed
# per point) stops copying streams after a few points (nmp.arch.point's cost: ~1.3 ms each)
SPECULATIVE_STORES = 64


def _digest(a: np.ndarray) -> tuple[int, int]:
    """A cheap summary of a uint64 array that picks the candidate entry (not a proof): its
    size and ~64 evenly spaced elements, the last one included."""
    if not a.size:
        return (0, 0)
    step = max(1, a.size // 64)
    return (int(a.size), hash(a[::-step].tobytes()))


def _detached(st: Any) -> Any:
    """A copy of a MemStats whose mappings a caller may change without touching the cache's."""
    at = {k: dict(v) if isinstance(v, dict) else v for k, v in st.at_cycles.items()}
    return dataclasses.replace(
        st,
        cmd_counts=dict(st.cmd_counts),
        energy_breakdown_pj=dict(st.energy_breakdown_pj),
        at_cycles=at,
    )


class ReplayCache:
    """MemStats of replays by (backend, view, stream); thread-safe; bounded in bytes."""

    def __init__(
        self, max_bytes: int = REPLAY_CACHE_BYTES, speculative: int = SPECULATIVE_STORES
    ) -> None:
        self.max_bytes = max_bytes
        self.speculative = speculative  # SPECULATIVE_STORES of this cache
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple, tuple] = OrderedDict()
        self._seen: OrderedDict[tuple, None] = OrderedDict()  # keys replayed once, not stored
        self._unproven: set[tuple] = set()  # keys stored at first sight, not reused yet
        self._spent = 0  # streams stored at first sight and not refunded by a reuse
        self._bytes = 0
        self._views: IdentityCache[str] = IdentityCache(256)  # view -> repr(view)
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._seen.clear()
            self._unproven.clear()
            self._spent = 0
            self._views.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def _view_key(self, view: Any) -> str:
        # specs are frozen: their repr is computed once per object
        return self._views.get(view, lambda: repr(view))

    def replay(
        self,
        replay_lines: Callable[..., Any],
        addr: np.ndarray,
        view: Any,
        write: np.ndarray | bool = False,
    ) -> Any:
        """``replay_lines(addr, view, write)`` (uint64 ``addr``), or the stored result of the
        same call."""
        if self.max_bytes <= 0:
            return replay_lines(addr, view, write)
        key, entry, w_arr, stored = self._lookup(addr, view, write)
        if stored is not None:
            return stored
        st = replay_lines(addr, view, write)
        self._record(key, entry, addr, w_arr, st)
        return st

    def replay_many(
        self, replay_lines_many: Callable[..., list], streams: list[np.ndarray], view: Any
    ) -> list:
        """``replay_lines_many(streams, view)`` (uint64 read streams), the stored results of
        the same replays taken from the cache and the others run in one call, stored as
        :meth:`replay` stores them."""
        if self.max_bytes <= 0:
            return replay_lines_many(streams, view)
        looked = [self._lookup(addr, view, False) for addr in streams]
        missing = [i for i, found in enumerate(looked) if found[3] is None]
        ran = replay_lines_many([streams[i] for i in missing], view) if missing else []
        out = [found[3] for found in looked]
        for i, st in zip(missing, ran, strict=True):
            key, entry, w_arr, _ = looked[i]
            self._record(key, entry, streams[i], w_arr, st)
            out[i] = st
        return out

    def _lookup(
        self, addr: np.ndarray, view: Any, write: np.ndarray | bool
    ) -> tuple[tuple, Any, np.ndarray | None, Any]:
        """(the replay's key, its entry or None, its writes as an array or None, the stored
        statistics (a copy) where the entry holds this very replay, else None)."""
        if isinstance(write, bool | np.bool_):
            w_key: tuple = (bool(write),)
            w_arr = None
        else:
            w_arr = np.asarray(write)
            w_key = (w_arr.dtype.str, w_arr.shape, int(np.count_nonzero(w_arr)))
        key = (engine_backend(), self._view_key(view), _digest(addr), w_key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is not None:
            s_addr, s_write, st = entry
            if w_arr is None:
                same_writes = s_write is None
            else:
                same_writes = s_write is not None and np.array_equal(s_write, w_arr)
            same = same_writes and np.array_equal(s_addr, addr)
            if same:
                with self._lock:
                    self.hits += 1
                    if key in self._unproven:  # a stream stored at first sight paid off
                        self._unproven.discard(key)
                        self._spent -= 1
                return key, entry, w_arr, _detached(st)
        return key, entry, w_arr, None

    def _record(
        self, key: tuple, entry: Any, addr: np.ndarray, w_arr: np.ndarray | None, st: Any
    ) -> None:
        """A replay run (a miss): stored now, or its digest noted (the module docstring)."""
        with self._lock:
            self.misses += 1
            again = entry is not None or key in self._seen
            if again:
                self._seen.pop(key, None)
            elif self._spent < self.speculative:  # stored now: a later point may reuse it
                self._spent += 1
                self._unproven.add(key)
                again = True
            else:
                self._seen[key] = None
                if len(self._seen) > _SEEN_MAX:
                    self._seen.popitem(last=False)
        if again:
            self._store(key, addr, w_arr, st)

    def _store(self, key: tuple, addr: np.ndarray, w_arr: np.ndarray | None, st: Any) -> None:
        stored = (addr.copy(), None if w_arr is None else w_arr.copy(), _detached(st))
        size = self._entry_bytes(stored)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= self._entry_bytes(old)
            self._entries[key] = stored
            self._bytes += size
            while self._bytes > self.max_bytes:
                gone, evicted = self._entries.popitem(last=False)
                self._bytes -= self._entry_bytes(evicted)
                self._unproven.discard(gone)  # (its budget stays spent: it never paid off)

    @staticmethod
    def _entry_bytes(entry: tuple) -> int:
        s_addr, s_write, _ = entry
        return s_addr.nbytes + (0 if s_write is None else s_write.nbytes) + _ENTRY_OVERHEAD_BYTES


# The process's cache, shared by every design point (and the threads of one)
REPLAYS = ReplayCache()

__all__ = ["REPLAYS", "REPLAY_CACHE_BYTES", "SPECULATIVE_STORES", "ReplayCache"]
