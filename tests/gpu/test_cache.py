"""The compiled sectored LRU caches against an exact pure-Python reference, request by request,
for L1-like (banked, modulo-indexed) and L2-like (hashed, pinned) configurations, and the fused
kernel-stream simulator against the same reference on a real EmbeddingBag access stream."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.gpu.cache import CacheState, StampClock, set_index, simulate_trace
from nmp.gpu.stream import LEVEL_HBM, LEVEL_L1, LEVEL_L2, KernelLayout, run_kernel_stream

from .reference_lru import ReferenceSectoredLRU, reference_set


def _trace(seed: int, n: int, lines: int, *, hot: int = 0):
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, lines, n)
    if hot:
        is_hot = rng.random(n) < 0.5
        addr[is_hot] = rng.integers(0, hot, int(is_hot.sum()))
    masks = rng.integers(1, 16, n).astype(np.uint8)
    return addr.astype(np.int64), masks


def test_set_index_matches_reference_formula():
    lines = np.array([0, 1, 7, 12345, 2**40 + 17, 987654321], dtype=np.int64)
    for sets in (7, 64, 20480):
        for hashed in (False, True):
            expect = [reference_set(int(x), sets, hashed) for x in lines]
            assert set_index(lines, sets, hashed).tolist() == expect


def test_l1_bank_equals_reference_lru():
    sets, ways, banks = 16, 4, 3
    addr, masks = _trace(1, 6000, 400, hot=40)
    ids = np.random.default_rng(2).integers(0, banks, addr.size)
    state = CacheState.empty(banks, sets, ways, hashed=False, sectors_per_line=4)
    hits = simulate_trace(state, addr, masks, ids)
    refs = [ReferenceSectoredLRU(sets, ways, hashed=False) for _ in range(banks)]
    expect = np.array(
        [refs[c].access(int(a), int(m)) for a, m, c in zip(addr, masks, ids, strict=True)]
    )
    assert np.array_equal(hits, expect)
    # The trace must exercise every case: full hits, sector misses on present lines, line misses.
    assert 0 < np.count_nonzero(hits == masks) < addr.size
    assert np.count_nonzero((hits != 0) & (hits != masks)) > 0


@pytest.mark.parametrize("pin", [False, True])
def test_l2_equals_reference_lru_with_and_without_persisting_lines(pin):
    sets, ways, carve = 32, 8, 6
    addr, masks = _trace(3, 8000, 1500, hot=200)
    # A share of the requests carry the persisting property (an access-policy window's hitProp).
    persist = np.random.default_rng(9).random(addr.size) < (0.3 if pin else 0.0)
    state = CacheState.empty(1, sets, ways, hashed=True, sectors_per_line=4)
    ref = ReferenceSectoredLRU(sets, ways, hashed=True)
    clock = StampClock()
    if pin:
        hot_lines = np.arange(0, 200, dtype=np.int64)
        n_persisting, fetched = state.persist(hot_lines, carve, clock)
        for line in hot_lines.tolist():
            ref.access(line, 15, True, carve)
        assert n_persisting == sum(len(ref.persisting(s)) for s in range(sets)) > 0
        assert fetched == 200 * 4  # a cold cache: every sector comes from memory
    # Two traces in a row on one state: the LRU clock carries over.
    half = addr.size // 2
    hits = np.concatenate(
        [
            simulate_trace(
                state, addr[:half], masks[:half], clock=clock, persist=persist[:half], carve=carve
            ),
            simulate_trace(
                state, addr[half:], masks[half:], clock=clock, persist=persist[half:], carve=carve
            ),
        ]
    )
    expect = np.array(
        [
            ref.access(int(a), int(m), bool(p), carve)
            for a, m, p in zip(addr, masks, persist, strict=True)
        ]
    )
    assert np.array_equal(hits, expect)
    held = np.bincount(set_index(state.tags[state.pinned], sets, True), minlength=sets)
    assert held.max() <= carve
    if pin:
        assert held.sum() > 0


def test_persisting_lines_survive_a_normal_flood_and_reset():
    state = CacheState.empty(1, 4, 4, hashed=True, sectors_per_line=4)
    clock = StampClock()
    n, _ = state.persist(np.arange(16, dtype=np.int64), 2, clock)
    pinned = np.sort(state.tags[state.pinned])
    assert n == pinned.size == 8  # 2 of 4 ways in each of the 4 sets
    assert np.all(np.bincount(set_index(pinned, 4, True), minlength=4) == 2)
    # Coldest first: the lines prefetched last are the ones that stay.
    assert set(pinned.tolist()) <= set(range(16))
    flood = np.arange(1000, 5000, dtype=np.int64)
    simulate_trace(state, flood, np.full(flood.size, 15, np.uint8), clock=clock)
    state.reset()
    hits = simulate_trace(state, pinned, np.full(pinned.size, 15, np.uint8), clock=clock)
    assert np.all(hits == 15)
    # Lines that were not persisting were invalidated by the reset.
    assert not simulate_trace(state, flood[-4:], np.full(4, 15, np.uint8), clock=clock).any()
    # cudaCtxResetPersistingL2Cache: the lines stay, but a flood now evicts them.
    state.reset_persisting()
    assert not state.pinned.any()
    simulate_trace(state, flood, np.full(flood.size, 15, np.uint8), clock=clock)
    assert not simulate_trace(state, pinned, np.full(pinned.size, 15, np.uint8), clock=clock).any()


def _tiny_stream(seed: int):
    """A real EmbeddingBag stream: 48-wide fp32 rows (192 B: slices straddle lines), varied
    bag sizes, skewed rows, on 3 SMs with 2 blocks each."""
    rng = np.random.default_rng(seed)
    batch, rows = 40, 300
    lengths = rng.integers(0, 9, batch)
    offsets = np.zeros(batch + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    hot = rng.random(offsets[-1]) < 0.6
    idx = np.where(hot, rng.integers(0, 20, offsets[-1]), rng.integers(0, rows, offsets[-1]))
    layout = KernelLayout(
        row_bytes=192,
        elem_bytes=4,
        dim=48,
        base_bytes=4096,
        block_y=8,
        grid_blocks=8,
        sms=3,
        blocks_per_sm=2,
        line_bytes=128,
        sector_bytes=32,
    )
    return idx.astype(np.int64), offsets, layout


@pytest.mark.parametrize("pin", [False, True])
def test_kernel_stream_hit_counts_equal_reference(pin):
    idx, offsets, layout = _tiny_stream(5)
    l1 = CacheState.empty(3, 4, 2, hashed=False, sectors_per_line=4)
    l2 = CacheState.empty(1, 8, 4, hashed=True, sectors_per_line=4)
    ref_l1 = [ReferenceSectoredLRU(4, 2, hashed=False) for _ in range(3)]
    ref_l2 = ReferenceSectoredLRU(8, 4, hashed=True)
    clock = StampClock()
    if pin:
        hot = (4096 + np.arange(6) * 192) // 128
        l2.persist(hot, 2, clock)
        for line in hot.tolist():
            ref_l2.access(line, 15, True, 2)
    ks, emitted = run_kernel_stream(idx, offsets, layout, l1, l2, sample=1, clock=clock, emit=True)
    assert emitted is not None  # asked for (emit=True)
    lines, masks, sms = emitted
    assert lines.size >= idx.size * 2  # two 32-feature slices per lookup, some straddling
    l1_hits = l2_req = l2_hits = far = 0
    for line, mask, sm in zip(lines.tolist(), masks.tolist(), sms.tolist(), strict=True):
        h1 = ref_l1[sm].access(line, mask)
        l1_hits += bin(h1).count("1")
        miss = mask & ~h1
        if miss:
            l2_req += bin(miss).count("1")
            # Lines of its set used more recently than this one (its reuse distance in ways).
            entries = ref_l2.lru[reference_set(line, 8, True)]
            rank = list(reversed(entries)).index(line) if line in entries else -1
            hit = ref_l2.access(line, miss)
            l2_hits += bin(hit).count("1")
            far += hit == miss and 2 * rank >= 4  # a line hit older than half its set's 4 ways
    c = ks.counts
    assert c["l1_sectors"] == c["l1_sectors_all"] == sum(bin(m).count("1") for m in masks.tolist())
    assert (c["l1_sector_hits"], c["l2_sectors"], c["l2_sector_hits"]) == (l1_hits, l2_req, l2_hits)
    assert l1_hits > 0 and 0 < l2_hits < l2_req
    assert c["l2_far_line_hits"] == far and 0 < far < c["l2_line_hits"]  # the far-partition rule
    # Every (warp, lookup) unit is counted once, at the level that served its slowest line.
    units = ks.level_units[[LEVEL_L1, LEVEL_L2, LEVEL_HBM]]
    assert ks.warp_levels.sum() == idx.size * 2 == units.sum()
    assert np.array_equal(ks.warp_levels.sum(axis=0)[:3], units)


def test_recency_rank_counts_the_lines_used_since():
    from nmp.gpu.cache import CacheState, access_set, recency_rank

    bank = CacheState.empty(1, 1, 4, hashed=False, sectors_per_line=4)
    for t, line in enumerate((10, 11, 12, 13), start=1):
        access_set(bank.ent, 0, 0, line, 0xF, t)
    assert [recency_rank(bank.ent, 0, 0, x) for x in (13, 12, 11, 10)] == [0, 1, 2, 3]
    access_set(bank.ent, 0, 0, 10, 0xF, 5)  # a hit makes 10 the most recent
    assert recency_rank(bank.ent, 0, 0, 10) == 0 and recency_rank(bank.ent, 0, 0, 11) == 3
    assert recency_rank(bank.ent, 0, 0, 99) == -1
