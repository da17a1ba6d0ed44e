"""nmp.identity_cache: values kept per object by identity, and by key."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from nmp.identity_cache import IdentityCache, KeyedCache


class Spec:
    """Equal to every other Spec: a cache by value would confuse them."""

    def __eq__(self, other):
        return isinstance(other, Spec)

    def __hash__(self):
        return 0


def test_built_once_per_object_and_key():
    cache: IdentityCache[int] = IdentityCache(8)
    calls = []

    def build(tag):
        calls.append(tag)
        return len(calls)

    a, b = Spec(), Spec()
    assert cache.get(a, lambda: build("a")) == 1
    assert cache.get(a, lambda: build("again")) == 1
    assert cache.get(b, lambda: build("b")) == 2  # equal, not the same object
    assert cache.get(a, lambda: build("a, level 2"), "level", 2) == 3
    assert cache.get(a, lambda: build("no"), "level", 2) == 3
    assert calls == ["a", "b", "a, level 2"]


def test_an_entry_keeps_its_object_so_its_id_is_not_reused():
    cache: IdentityCache[str] = IdentityCache(8)
    obj = Spec()
    alive = weakref.ref(obj)
    cache.get(obj, lambda: "value")
    del obj
    gc.collect()
    assert alive() is not None  # held by the entry: no new object can take its id
    cache.clear()
    gc.collect()
    assert alive() is None


def test_bounded():
    cache: IdentityCache[int] = IdentityCache(3)
    keep = [Spec() for _ in range(10)]
    for i, obj in enumerate(keep):
        cache.get(obj, lambda i=i: i)
        assert len(cache) <= 3
    with pytest.raises(ValueError, match="at least 1"):
        IdentityCache(0)


def test_a_keyed_cache_drops_its_oldest_entry_past_its_limit():
    cache: KeyedCache[str, int] = KeyedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1 and len(cache) == 2
    cache.put("c", 3)  # "a" is the oldest (kept first): it goes
    assert cache.get("a") is None and cache.values() == [2, 3]
    cache.put("b", 4)  # put again: the newest
    cache.put("d", 5)
    assert cache.get("c") is None and cache.values() == [4, 5]
    cache.clear()
    assert not cache and cache.get("b") is None


def test_a_keyed_cache_of_limit_zero_keeps_nothing():
    cache: KeyedCache[str, int] = KeyedCache(2)
    cache.put("a", 1)
    cache.limit = 0
    cache.put("b", 2)
    assert len(cache) == 0 and cache.get("b") is None
    with pytest.raises(ValueError, match="at least 0"):
        KeyedCache(-1)


def test_a_keyed_cache_shared_by_threads_stays_within_its_limit():
    cache: KeyedCache[int, int] = KeyedCache(4)

    def fill(first: int) -> None:
        for k in range(first, first + 2000):
            cache.put(k % 37, k)
            cache.get((k + 1) % 37)

    threads = [threading.Thread(target=fill, args=(i * 2000,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 4
