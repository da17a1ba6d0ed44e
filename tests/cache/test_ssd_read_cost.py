"""The SSD read that a request with a miss pays in the EVStore cache model (nmp/cache/tiers.py):
one read of the key-value store at the sourced 80 us per request that misses, whatever the
number of its misses, and nothing for a request served wholly from memory.

So the modeled mean latency with the SSD, less the same run's with a free SSD, is the share of
requests with a miss (1 - perfect hit rate) times 80 us, and the tier module's constant and
the run's default are that same 80 us.
"""

from __future__ import annotations

import pytest

from nmp.cache import tiers
from nmp.cache.serve import CacheConfig, run_cache

SSD_READ_US = 80.0  # tiers.py: NAND NVMe at queue depth 1, near the top of 20-100 us
BASE = {
    "workload": "criteo-kaggle",
    "requests": 1500,
    "warmup": 750,
    "backend": "",
    "accuracy": False,
    "l1_mb": 0.5,
    "policy": "lru",
    "seed": 3,
    # users whose histories draw related rows: some requests hit wholly (tests/cache/test_users.py)
    "request_model": "users",
    "users": 20_000,
}


def test_the_ssd_read_is_the_sourced_80_us_everywhere():
    assert tiers.SSD_READ_US == SSD_READ_US
    assert CacheConfig().ssd_read_us == SSD_READ_US
    assert tiers.TierLatency(dram_line_ns=50.0, burst_ns=2.5).ssd_read_ns == SSD_READ_US * 1e3


def test_a_request_with_a_miss_pays_one_ssd_read():
    paid = run_cache(CacheConfig(**BASE))
    free = run_cache(CacheConfig(**BASE, ssd_read_us=0.0))
    assert paid["tier_ssd_us"] == SSD_READ_US
    assert paid["hit_rate"] == free["hit_rate"] and 0.0 < paid["perfect_hit_rate"] < 1.0
    missing = 1.0 - paid["perfect_hit_rate"]
    extra = paid["avg_latency_us"] - free["avg_latency_us"]
    assert extra == pytest.approx(missing * SSD_READ_US, rel=1e-9)
