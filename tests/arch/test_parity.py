"""In-memory parity: thousands of random updates keep the parity equal to a fresh encode, bit
for bit, and a lost node's rows decode exactly."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch


def _updates(arch, n, seed, table=0):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, arch.tables[table].rows, n)
    vals = rng.standard_normal((n, arch.tables[table].dim)).astype(np.float32)
    # special bit patterns: NaN payloads and -0.0 must survive exactly
    vals[0, 0] = np.float32(np.nan)
    vals[1, :] = -0.0
    return rows, vals


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("recross", {}),
        ("recnmp", {}),
        ("host-cpu", {}),
        ("trim-g", {"parity.code": "rs", "parity.r": 2}),
    ],
)
def test_parity_after_thousands_of_updates(name, overrides, small_workload):
    arch = load_arch(name, overrides=overrides)
    arch.bind(small_workload)
    total = 0
    for step in range(3):
        rows, vals = _updates(arch, 1500, seed=step)
        op = arch.parity_update(rows, vals, table=0)
        total += rows.size
        assert op.t_ns > 0
        assert op.energy_pj["dram_core"] > 0 and op.energy_pj["units"] > 0
        # the last write of each row is what memory holds
        last = {int(r): i for i, r in enumerate(rows)}
        idx = np.array(list(last.values()))
        assert np.array_equal(
            arch.store.read(0, rows[idx]).view(np.uint32), vals[idx].view(np.uint32)
        )
    assert total >= 3000
    assert arch.parity_consistent(0)
    nodes = arch.parity_level_nodes
    for lost in (0, nodes - 1):
        got_rows, got = arch.recover_node(lost, 0)
        assert got_rows.size > 0
        want = arch.store.read(0, got_rows)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_corrupted_parity_is_detected(small_workload):
    arch = load_arch("recross")
    arch.bind(small_workload)
    rows, vals = _updates(arch, 200, seed=9)
    arch.parity_update(rows, vals)
    assert arch.parity_consistent(0)
    arch._parity_state.parity[0][0, 0, 3] ^= 0x10
    assert not arch.parity_consistent(0)


def test_parity_traffic_between_nodes(small_workload):
    """In-DRAM units send every delta through the buffer chip; rank units on one channel need
    the channel only for deltas that change rank."""
    arch = load_arch("recross")
    arch.bind(small_workload)
    rows, vals = _updates(arch, 400, seed=4)
    op = arch.parity_update(rows, vals)
    rb = 4 * arch.tables[0].dim
    assert op.bytes_by_level["rank"] >= 2 * rows.size * rb  # every delta crosses it twice
    assert op.breakdown["data_side"]["bytes"] == 2 * rows.size * rb
    assert op.breakdown["parity_side"]["bytes"] == 2 * rows.size * rb
