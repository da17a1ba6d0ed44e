"""AccessProfile.hottest: the most looked-up rows, ties broken by table then row."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch.profile import AccessProfile


def _profile(seed: int) -> AccessProfile:
    rng = np.random.default_rng(seed)
    keys, counts = [], []
    for _ in range(5):
        k = np.unique(rng.integers(0, 5000, int(rng.integers(1, 3000))))
        keys.append(k.astype(np.int64))
        counts.append(rng.integers(1, 6, k.size).astype(np.float64))  # many ties
    return AccessProfile(tuple(keys), tuple(counts), (5000,) * 5, 1)


@pytest.mark.parametrize("count", [1, 7, 100, 1000, 10**6])
def test_hottest_is_the_head_of_the_full_order(count) -> None:
    p = _profile(count)
    tabs = np.concatenate([np.full(k.size, t) for t, k in enumerate(p.keys)])
    rows, counts = np.concatenate(p.keys), np.concatenate(p.counts)
    order = np.lexsort((rows, tabs, -counts))[:count]
    got_tabs, got_rows = p.hottest(count)
    assert got_tabs.tolist() == tabs[order].tolist()
    assert got_rows.tolist() == rows[order].tolist()
    assert p.hottest(0)[0].size == 0
