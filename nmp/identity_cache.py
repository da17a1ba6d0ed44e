"""Values kept for the next caller, bounded: per object by identity (:class:`IdentityCache`), or
by a plain key (:class:`KeyedCache`).

:class:`IdentityCache`: values derived from objects that never change (frozen specs, a design's
layouts, a profile), kept per object by identity.

Hashing such an object by value costs more than deriving what is asked of it (a memory spec's
dataclasses hold dicts), so the key is ``id(obj)``. An id is reused once its object is freed:
each entry therefore holds its object, which keeps the id from being reused while the entry
lives, and a lookup checks that the object found is the one asked about. The entries are
bounded: past ``limit`` they are all dropped (a sweep's designs come and go; a design point
asks about the same few objects many times in a row).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class IdentityCache(Generic[V]):
    """``cache.get(obj, build, *key)``: ``build()``'s value for (``obj``, ``key``), built once
    while the entry is kept. ``obj`` must not change while it is kept (the value is not
    rebuilt); ``key`` adds plain hashable parts (a level's name, a queue size)."""

    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self._entries: dict[tuple, tuple[object, V]] = {}

    def get(self, obj: object, build: Callable[[], V], *key: Hashable) -> V:
        k = (id(obj), *key)
        hit = self._entries.get(k)
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = build()
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[k] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


class KeyedCache(Generic[K, V]):
    """Values by key, at most ``limit`` of them (0: none kept): past it the oldest entry goes
    first, as a sweep's batches, bag shapes, set-ups and request streams come and go in order.
    A sweep's threads may share one: two that miss at once both build the value and the
    later one is kept (the same value, as a key defines it)."""

    def __init__(self, limit: int):
        if limit < 0:
            raise ValueError(f"limit must be at least 0, got {limit}")
        self.limit = limit
        self._entries: dict[K, V] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries.pop(key, None)
            while self._entries and len(self._entries) >= self.limit:
                self._entries.pop(next(iter(self._entries)))
            if self.limit > 0:
                self._entries[key] = value

    def values(self) -> list[V]:
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
