"""ReCross's bandwidth-aware partition: an LP over frequency classes, fast on Criteo Kaggle."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nmp.arch import load_arch
from nmp.arch.partition import PartitionProblem, solve_partition
from nmp.arch.placement import solve_cross_level
from nmp.arch.profile import build_profile
from nmp.workload import generate_batch, load_workload


def test_lp_balances_levels_under_capacity():
    # two classes: 10 hot rows with most lookups, 1000 cold rows; the fast level holds 100 rows
    p = PartitionProblem(
        rows=np.array([10.0, 1000.0]),
        freq=np.array([900.0, 100.0]),
        row_bytes=np.array([256.0, 256.0]),
        capacity_bytes=np.array([1e9, 100 * 256.0]),
        ns_per_byte=np.array([1 / 20.0, 1 / 60.0]),
        ca_ns_per_lookup=np.zeros(2),
    )
    r = solve_partition(p)
    assert np.allclose(r.fractions.sum(axis=1), 1)
    used = (p.rows * p.row_bytes * r.fractions.T).sum(axis=1)
    assert used[1] <= p.capacity_bytes[1] * (1 + 1e-9)
    # min-max optimum: 256,000 bytes over 20 + 60 bytes/ns, both levels busy 3,200 ns
    assert r.t_ns == pytest.approx(256_000 / 80, rel=1e-6)
    assert np.allclose(r.level_t_ns, 3200.0, rtol=1e-6)
    # the fast level spends its small capacity on hot rows: 100 rows hold > 80 % of its load
    assert r.fractions[0, 1] > 0.8


def test_lp_counts_a_shared_path_once():
    """Two levels of 60 bytes/ns each, the second's bytes also crossing the first's paths (a
    bank unit in a bank-group unit's bank group): both together get 60, not 120."""
    base = dict(
        rows=np.array([1000.0]),
        freq=np.array([1000.0]),
        row_bytes=np.array([256.0]),
        capacity_bytes=np.array([1e9, 1e9]),
        ns_per_byte=np.array([1 / 60.0, 1 / 60.0]),
        ca_ns_per_lookup=np.zeros(2),
    )
    apart = solve_partition(PartitionProblem(**base))
    assert apart.t_ns == pytest.approx(256_000 / 120, rel=1e-6)
    shared = np.array([[0.0, 1.0], [0.0, 0.0]])
    together = solve_partition(
        PartitionProblem(**base, shared=shared, peak_ns_per_byte=np.array([1 / 60.0, 1 / 60.0]))
    )
    assert together.t_ns == pytest.approx(256_000 / 60, rel=1e-6)


def test_criteo_kaggle_partition_solves_fast():
    wl = load_workload("criteo-kaggle", {"dim": 64, "dtype": "float32"})
    assert len(wl.tables) == 26
    arch = load_arch("recross")
    arch.bind(wl)
    batches = [generate_batch(wl, seed=100 + i) for i in range(2)]
    profile = build_profile(batches, [t.rows for t in wl.tables])
    t0 = time.perf_counter()
    frac, result = solve_cross_level(
        arch.spec, arch.layouts, arch.mem, profile, arch.table_row_bytes
    )
    elapsed = time.perf_counter() - t0
    assert elapsed < 10.0
    assert result is not None and frac.shape[0] == 26
    assert np.allclose(frac.sum(axis=2), 1)
    # the LP equalizes the levels it uses (a min-max objective), within 1 %
    lv_t = result.level_t_ns[result.level_t_ns > 0]
    assert lv_t.max() <= result.t_ns * 1.01


def test_partition_switch_changes_placement(small_workload):
    on = load_arch("recross")
    # the frequency-oblivious base (the default base is frequency-aware: test_mechanisms.py)
    off = load_arch(
        "recross", overrides={"bandwidth_aware_partition": False, "base_placement": "capacity"}
    )
    for a in (on, off):
        a.bind(small_workload)
    batch = generate_batch(small_workload, seed=0)
    _, _, _ = on.prepare(batch)
    flat_on, plc_on, _ = on.prepare(batch)
    flat_off, plc_off, _ = off.prepare(batch)
    share_on = np.bincount(plc_on.level, minlength=3) / flat_on.n
    share_off = np.bincount(plc_off.level, minlength=3) / flat_off.n
    # frequency-oblivious placement follows the capacity ratio 16:12:4
    assert abs(share_off[2] - 4 / 32) < 0.08
    # the LP moves lookups off the rank level, whose bandwidth per byte is lowest
    assert share_on[0] < share_off[0]
