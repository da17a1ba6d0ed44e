"""nmp.identity_cache: values kept per object by identity."""

from __future__ import annotations

import gc
import weakref

import pytest

from nmp.identity_cache import IdentityCache


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
