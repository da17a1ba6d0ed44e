"""A generated request stream is kept for the next cache served from it (nmp.cache.serve's
``_generated``): generated once per definition, the same results, read-only, and not kept past
its size bound."""

from __future__ import annotations

import numpy as np
import pytest

import nmp.cache.request_models.independent as independent_model
import nmp.cache.request_models.users as users_model
import nmp.cache.serve as serve
from nmp.cache.serve import CacheConfig, build_stream, run_cache
from nmp.identity_cache import KeyedCache

BASE = {"workload": "criteo-kaggle", "requests": 600, "warmup": 300, "backend": ""}
BASE |= {"accuracy": False, "l1_mb": 0.5}


@pytest.fixture
def counted(monkeypatch) -> dict:
    """A fresh stream cache, and how often each generator ran."""
    monkeypatch.setattr(serve, "_STREAMS", KeyedCache(serve._STREAMS.limit))
    runs = {"batches": 0, "users": 0}
    batches, users = independent_model.request_stream, users_model.user_requests

    def count_batches(*args, **kwargs):
        runs["batches"] += 1
        return batches(*args, **kwargs)

    def count_users(*args, **kwargs):
        runs["users"] += 1
        return users(*args, **kwargs)

    monkeypatch.setattr(independent_model, "request_stream", count_batches)
    monkeypatch.setattr(users_model, "user_requests", count_users)
    return runs


@pytest.mark.parametrize("model", [{}, {"request_model": "users", "users": 5000}])
def test_caches_of_one_stream_generate_it_once_with_the_same_results(counted, model) -> None:
    lru = run_cache(CacheConfig(**BASE, **model, policy="lru"))
    again = run_cache(CacheConfig(**BASE, **model, policy="lru"))
    other = run_cache(CacheConfig(**BASE, **model, policy="lfu"))
    assert sum(counted.values()) == 1
    assert lru == again and other["policy"] != lru["policy"]
    serve._STREAMS.clear()
    assert run_cache(CacheConfig(**BASE, **model, policy="lru")) == lru  # generated anew
    assert sum(counted.values()) == 2


def test_another_seed_or_size_is_another_stream(counted) -> None:
    a, _, _ = build_stream(CacheConfig(**BASE))
    b, _, _ = build_stream(CacheConfig(**BASE | {"seed": 1}))
    c, _, _ = build_stream(CacheConfig(**BASE | {"requests": 700}))
    assert counted["batches"] == 3 and c.requests == 1000
    assert not np.array_equal(a.keys[:100], b.keys[:100])
    assert len(serve._STREAMS) == serve._STREAMS.limit  # the oldest went


def test_a_kept_stream_cannot_be_changed(counted) -> None:
    stream, _, _ = build_stream(CacheConfig(**BASE))
    with pytest.raises(ValueError, match="read-only"):
        stream.keys[0] = -1


def test_a_stream_past_the_bound_is_not_kept(counted, monkeypatch) -> None:
    monkeypatch.setattr(serve, "_STREAM_KEPT_BYTES", 1024)
    first, _, _ = build_stream(CacheConfig(**BASE))
    build_stream(CacheConfig(**BASE))
    assert counted["batches"] == 2 and not serve._STREAMS and first.keys.flags.writeable
