"""Replays reused across design points (nmp.arch.replay_cache): a reused replay gives what a
fresh one gives, and any change of the stream, its writes or the view is a new replay."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nmp.arch.architecture as architecture
import nmp.arch.point as point
from nmp.arch import run_design_point
from nmp.arch.lowering import unit_view
from nmp.arch.replay_cache import REPLAYS, ReplayCache, _digest
from nmp.arch.salp import precharge_hidden
from nmp.identity_cache import KeyedCache
from nmp.memory import encode_address, load_memory, replay_lines

SMALL = {"batch": 8}


def _point(pj_per_add: float, seed: int = 3, memory: dict | None = None) -> dict:
    overrides = {"workload": SMALL, "arch": {"rank.pj_per_add": pj_per_add}}
    if memory:
        overrides["memory"] = memory
    out = run_design_point("recross", "recross-eval", overrides=overrides, seed=seed).to_json()
    out["breakdown"].pop("lp_solve_s", None)  # the LP's wall time
    return out


@pytest.fixture
def fresh_cache(monkeypatch):
    """An empty process cache, and fresh designs (whose set-up replays would hit it), with no
    set-up shared between them (nmp.arch.design_key)."""
    monkeypatch.setattr(point, "_ARCH_CACHE", {})
    monkeypatch.setattr(architecture, "_SETUPS", KeyedCache(0))
    REPLAYS.clear()
    yield REPLAYS
    REPLAYS.clear()


def test_points_sharing_streams_reuse_replays_with_the_same_results(fresh_cache, monkeypatch):
    # a sweep of an energy figure at one seed: every point lowers the same streams
    values = (0.9, 1.0, 1.1, 1.2)
    cached = [_point(v) for v in values]
    assert fresh_cache.hits > 0  # stored at the second sighting, reused from the third
    monkeypatch.setattr(fresh_cache, "max_bytes", 0)  # off
    monkeypatch.setattr(point, "_ARCH_CACHE", {})
    hits = fresh_cache.hits
    uncached = [_point(v) for v in values]
    assert fresh_cache.hits == hits
    assert json.dumps(cached, sort_keys=True) == json.dumps(uncached, sort_keys=True)
    # the swept figure still changes the result
    assert cached[0]["energy_pj_per_lookup"] != cached[1]["energy_pj_per_lookup"]


def test_a_new_seed_or_memory_timing_is_replayed_again(fresh_cache):
    for v in (0.9, 1.0, 1.1):
        _point(v)
    hits = fresh_cache.hits
    _point(1.2, seed=4)  # another batch: other streams (set-up replays still shared)
    after_seed = fresh_cache.hits - hits
    _point(1.3, seed=4)
    assert fresh_cache.hits - hits > after_seed  # seed 4's timed streams now seen twice
    hits, misses = fresh_cache.hits, fresh_cache.misses
    _point(0.9, memory={"timing.nRCD": 41})  # same streams, another view: nothing reused
    assert fresh_cache.hits == hits and fresh_cache.misses > misses


def _view_and_stream():
    mem = load_memory("ddr5-4800-40", channels=1, ranks=2)
    view = unit_view(mem, "bankgroup", 16)
    rng = np.random.default_rng(0)
    n = 600
    addr = encode_address(
        view,
        bankgroup=0,
        bank=rng.integers(0, 3, n),
        row=rng.integers(0, 64, n),
        column=rng.integers(0, 8, n),
    ).astype(np.uint64)
    return view, addr


def _fields(st) -> dict:
    return {k: v for k, v in vars(st).items() if k != "timeline"}


def test_every_input_that_matters_misses():
    view, addr = _view_and_stream()
    cache = ReplayCache(speculative=0)  # stored at the second sighting
    calls = []

    def counted(a, v, w=False):
        calls.append(1)
        return replay_lines(a, v, w)

    first = cache.replay(counted, addr, view)
    cache.replay(counted, addr, view)  # seen twice: stored
    again = cache.replay(counted, addr, view)
    assert len(calls) == 2 and cache.hits == 1
    assert _fields(again) == _fields(first) == _fields(replay_lines(addr, view))
    # a copy: changing it leaves the stored one alone
    again.cmd_counts["ACT"] += 1
    assert _fields(cache.replay(counted, addr, view)) == _fields(first)
    hits = cache.hits

    # each of these replays once more, then is reused
    swapped = addr.copy()  # the same digest: the stored copy tells them apart
    swapped[[10, 11]] = swapped[[11, 10]]
    assert swapped[10] != swapped[11] and _digest(swapped) == _digest(addr)
    changed = addr.copy()
    changed[5] ^= np.uint64(1 << 13)
    writes = np.zeros(addr.size, dtype=bool)
    writes[::7] = True
    for a, v, w in (
        (swapped, view, False),
        (changed, view, False),
        (addr, view, True),
        (addr, view, writes),
        (addr, precharge_hidden(view), False),  # another timing
        (addr, unit_view(load_memory("ddr5-4800-40", channels=1, ranks=2), "bankgroup", 8), False),
    ):
        before = len(calls)
        got = cache.replay(counted, a, v, w)
        assert len(calls) == before + 1  # a miss: replayed
        assert _fields(got) == _fields(replay_lines(a, v, w))
        for _ in range(2):  # stored by now, and reused
            assert _fields(cache.replay(counted, a, v, w)) == _fields(got)
        assert len(calls) <= before + 2
    assert cache.hits > hits


def test_first_sightings_are_stored_while_they_pay_off():
    view, addr = _view_and_stream()
    cache = ReplayCache(speculative=2)
    calls = []

    def counted(a, v, w=False):
        calls.append(1)
        return replay_lines(a, v, w)

    streams = [addr + np.uint64(k * 64 * 1024) for k in range(5)]  # other rows: new streams
    first = cache.replay(counted, streams[0], view)  # stored at once
    assert _fields(cache.replay(counted, streams[0], view)) == _fields(first)
    assert len(calls) == 1 and cache.hits == 1  # reused: its budget refunded
    for a in streams[1:3]:  # the budget: two unproven streams stored
        cache.replay(counted, a, view)
    cache.replay(counted, streams[3], view)  # past it: only noted
    assert len(cache) == 3
    for a in streams[1:4]:
        cache.replay(counted, a, view)
    assert len(calls) == 5 and cache.hits == 3  # streams 1 and 2 reused, 3 replayed again
    cache.replay(counted, streams[4], view)  # refunded by the reuses: stored at once again
    cache.replay(counted, streams[4], view)
    assert len(calls) == 6 and cache.hits == 4


def test_the_cache_stays_within_its_bytes():
    view, addr = _view_and_stream()
    cache = ReplayCache(max_bytes=3 * (addr.nbytes + 2048))
    for k in range(8):
        a = addr + np.uint64(k * 64 * 1024)  # other rows: a new stream
        for _ in range(2):
            cache.replay(replay_lines, a, view)
        assert cache.bytes <= cache.max_bytes
    assert len(cache) == 3
    off = ReplayCache(max_bytes=0)
    for _ in range(3):
        off.replay(replay_lines, addr, view)
    assert len(off) == 0 and off.hits == 0


def test_streams_replayed_in_one_call_are_cached_as_one_by_one():
    """ReplayCache.replay_many: the stored replays taken, the others run in one call and
    stored as replay() stores them; the same statistics as replaying one by one."""
    from nmp.memory.driver import replay_lines_many

    view = unit_view(load_memory("ddr4-3200aa"), "rank")
    rng = np.random.default_rng(6)
    streams = [(rng.integers(0, 1 << 20, n) * 64).astype(np.uint64) for n in (300, 50, 700)]
    cache = ReplayCache(speculative=1)
    calls: list[int] = []

    def many(batch, spec):
        calls.append(len(batch))
        return replay_lines_many(batch, spec)

    first = cache.replay_many(many, streams, view)
    assert first == [replay_lines(s, view) for s in streams]
    assert (cache.misses, cache.hits, len(cache), calls) == (3, 0, 1, [3])
    again = cache.replay_many(many, streams, view)  # one stored at first sight, two now
    assert again == first and (cache.hits, len(cache), calls) == (1, 3, [3, 2])
    assert cache.replay_many(many, streams, view) == first and calls == [3, 2]
    off = ReplayCache(max_bytes=0)
    assert off.replay_many(many, streams, view) == first and calls == [3, 2, 3]
