"""Mechanisms of issue 19: each acts where it should, and its readings order as the sources
say (subarray-level parallelism readings, the frequency-aware ablation base)."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch, load_arch_spec
from nmp.arch.locality import _locality_order, windowed_locality_order
from nmp.arch.spec import LEVELS
from nmp.errors import NmpError
from nmp.workload import generate_batch, load_workload

ABLATION_BASE = {
    "subarray_parallelism": False,
    "bandwidth_aware_partition": False,
    "locality_aware_scheduling": False,
}


@pytest.fixture(scope="module")
def skewed():
    """Criteo-like skew (Zipf) on four small tables, enough lookups to load the bank units."""
    return load_workload("recross-eval", {"rows": [4000, 20000, 800, 60000], "batch": 16})


def _bank_ns(workload, **overrides) -> float:
    arch = load_arch("recross", overrides=overrides)
    arch.bind(workload)
    _, op = arch.gather_reduce(generate_batch(workload, seed=3), functional=False)
    return op.breakdown["levels"]["bank"]["dram_ns"]


def test_salp_readings_order_the_bank_time(skewed):
    """No SALP >= SALP-1 (precharge hidden) >= SALP-2 (two activations) >= MASA."""
    base = {**ABLATION_BASE}
    none = _bank_ns(skewed, **base)
    with_salp = {**base, "subarray_parallelism": True}
    t = {r: _bank_ns(skewed, **with_salp, **{"bank.salp": r}) for r in ("salp1", "salp2", "masa")}
    assert none > t["salp1"] >= t["salp2"] * 0.98 and t["salp2"] > t["masa"]
    assert none > 1.2 * t["masa"]


def test_frequency_base_puts_hot_rows_on_the_bank_units(skewed):
    """Without the LP, the frequency-aware base gives the bank level (most bandwidth per stored
    row) the hottest rows: its share of lookups exceeds its capacity share (4 of 32 banks),
    while the capacity base gives it about its capacity share."""
    shares = {}
    for base in ("frequency", "capacity"):
        arch = load_arch("recross", overrides={**ABLATION_BASE, "base_placement": base})
        arch.bind(skewed)
        _, plc, _ = arch.prepare(generate_batch(skewed, seed=3))
        shares[base] = float(np.mean(plc.level == LEVELS.index("bank")))
    assert shares["frequency"] > 2 * 4 / 32
    assert shares["capacity"] == pytest.approx(4 / 32, abs=0.05)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [({"bank.salp": "salp3"}, "arch.bank.salp"), ({"base_placement": "x"}, "arch.base_placement")],
)
def test_unknown_readings_name_the_key(overrides, key):
    with pytest.raises(NmpError, match=key.replace(".", r"\.")):
        load_arch_spec("recross", overrides)


def test_locality_scheduling_reorders_only_within_the_window():
    """Each node's arrivals are reordered only inside consecutive windows of its queue's size;
    a window as long as the batch is the whole-batch order."""
    rng = np.random.default_rng(5)
    n, nodes, banks, window = 3000, 4, 3, 32
    node = rng.integers(0, nodes, n)
    bank = rng.integers(0, banks, n)
    page = rng.integers(0, 50, n)
    perm = windowed_locality_order(node, bank, page, nodes, banks, window)
    assert np.array_equal(np.sort(perm), np.arange(n))
    assert (np.diff(node[perm]) >= 0).all()  # grouped by node
    for nd in range(nodes):
        arrivals = np.flatnonzero(node == nd)  # the node's lookups in arrival order
        got = perm[node[perm] == nd]
        for w in range(0, arrivals.size, window):
            assert set(got[w : w + window]) == set(arrivals[w : w + window])
    whole = windowed_locality_order(node, bank, page, nodes, banks, 0)
    assert np.array_equal(whole, _locality_order(node, bank, page, nodes, banks))


def test_lru_cache_evicts_the_least_recently_used():
    from nmp.arch.lru_cache import LruCache

    cache = LruCache(owners=2, sets=1, ways=2)
    owner = np.array([0, 0, 0, 0, 0, 1])
    key = np.array([1, 2, 1, 3, 2, 1])  # 3 evicts 2 (1 was used more recently); owner 1 cold
    assert cache.access(owner, key).tolist() == [False, False, True, False, False, False]
    # the state persists across calls: owner 0 now holds 3 and 2
    assert cache.access(np.zeros(3, int), np.array([3, 2, 1])).tolist() == [True, True, False]


def test_lru_cache_is_the_gpu_cache_with_one_sector_per_line():
    """Where the two simulators overlap (whole-line entries, hashed sets, no set-aside, every
    miss allocating), the near-memory LRU and the GPU's sectored cache give the same hits
    access by access (docs/architecture.md says why they stay two kernels)."""
    from nmp.arch.lru_cache import LruCache
    from nmp.gpu.cache import CacheState, simulate_trace

    rng = np.random.default_rng(7)
    owner = rng.integers(0, 3, 20_000)
    key = (rng.zipf(1.2, owner.size) % 5_000) * 64
    arch_hits = LruCache(owners=3, sets=16, ways=4).access(owner, key)
    state = CacheState.empty(3, 16, 4, hashed=True, sectors_per_line=1)
    gpu_hits = simulate_trace(state, key, np.ones(key.size, np.uint8), cache_ids=owner)
    assert 0.1 < arch_hits.mean() < 0.9
    assert np.array_equal(arch_hits, gpu_hits == 1)


@pytest.mark.parametrize("policy", ["profile", "online"])
def test_rank_cache_decides_without_the_future(policy, skewed):
    """From cold caches, a row's first lookup in issue order is never a hit, and the online
    cache never serves a row before its threshold-th lookup: it cannot know the batch's
    future."""
    from nmp.arch.rankcache import _occurrence, rank_cache_hits

    arch = load_arch("recnmp", overrides={"rank.cache_policy": policy})
    arch.bind(skewed)
    flat, plc, order = arch.prepare(generate_batch(skewed, seed=3))
    hit = rank_cache_hits(arch.spec, flat, plc.level, plc.node, order, {}, arch.profile)
    assert hit.any()
    key = plc.node[order] * (int(flat.grow.max()) + 1) + flat.grow[order]
    _, first = np.unique(key, return_index=True)
    assert not hit[order][first].any()
    if policy == "online":
        occ = _occurrence(key)
        # allocated at the threshold-th lookup, so served from the next one on
        assert (occ[hit[order]] > arch.spec.rank.cache_reuse_threshold).all()


def test_rank_cache_starts_each_batch_at_steady_state(skewed):
    """As the host's LLC, the RankCaches are warmed by the batches before the timed one until
    their hit rate settles; a timed batch then hits at least as often as from cold caches, and
    every timed batch starts from the same state."""
    from nmp.arch.lru_cache import STEADY_TOL
    from nmp.arch.rankcache import rank_cache_hits

    arch = load_arch("recnmp")
    arch.bind(skewed)
    batch = generate_batch(skewed, seed=3)
    flat, plc, order = arch.prepare(batch)
    rates = arch.rank_cache_state().warmup_rates
    assert len(rates) >= 2 and abs(rates[-1] - rates[-2]) < STEADY_TOL
    assert plc.info["cache_warmup_batches"] == len(rates)
    cold = rank_cache_hits(arch.spec, flat, plc.level, plc.node, order, {}, arch.profile)
    assert plc.hit.sum() >= cold.sum()
    assert np.array_equal(arch.prepare(batch)[1].hit, plc.hit)


def test_in_dram_reads_pay_only_their_part_of_the_read_path(skewed):
    """A bank unit's reads cost bank_read_share of a full column read: with the share at 1 the
    DRAM core energy rises by exactly the saved part; the rank hop of the I/O is the other
    switch, and the host pays the whole path."""
    batch = generate_batch(skewed, seed=3)
    ops = {}
    for share in (0.35, 1.0):
        arch = load_arch(
            "trim-b",
            overrides={"dram_energy.bank_read_share": share, "dram_energy.bankgroup_read_share": 1},
        )
        arch.bind(skewed)
        ops[share] = arch.gather_reduce(batch, functional=False)[1]
    low, full = ops[0.35], ops[1.0]
    assert full.breakdown["dram_energy"]["read_path_saved_pj"] == 0.0
    saved = low.breakdown["dram_energy"]["read_path_saved_pj"]
    assert saved > 0
    assert full.energy_pj["dram_core"] == pytest.approx(low.energy_pj["dram_core"] + saved)


def test_host_llc_hits_do_not_cross_the_channel(skewed):
    batch = generate_batch(skewed, seed=3)
    ops = {}
    for mib in (0.0, 32.0):
        none = {"host.l1_kib": 0, "host.l2_kib": 0} if mib == 0 else {}
        arch = load_arch("host-cpu", overrides={"host.llc_mib": mib, **none})
        arch.bind(skewed)
        ops[mib] = arch.gather_reduce(batch, functional=False)[1]
    llc = ops[32.0].breakdown["llc"]
    assert llc["hits"] > 0 and llc["hit_rate"] < 1
    assert ops[32.0].bytes_by_level["channel"] == pytest.approx(
        ops[0.0].bytes_by_level["channel"] - llc["hits"] * 64
    )
    assert ops[32.0].t_ns < ops[0.0].t_ns


def test_warm_until_steady_stops_when_the_hit_rate_settles():
    from nmp.arch.lru_cache import warm_until_steady

    rates = [0.5, 0.7, 0.8, 0.805, 0.806, 0.9]
    assert warm_until_steady(lambda k: rates[k], max_batches=6, tol=0.01) == rates[:4]
    assert warm_until_steady(lambda k: rates[k], max_batches=3, tol=0.01) == rates[:3]


def test_host_llc_starts_each_batch_at_steady_state(skewed):
    """The LLC is warmed by as many batches before the timed one as its hit rate needs to
    settle: the last warm-up batches agree within STEADY_TOL, the first (a cold LLC) hits
    least, and every timed batch starts from the same warmed state."""
    from nmp.arch.lru_cache import STEADY_TOL

    arch = load_arch("host-cpu")
    arch.bind(skewed)
    batch = generate_batch(skewed, seed=3)
    llc = arch.gather_reduce(batch, functional=False)[1].breakdown["llc"]
    rates = llc["warmup_hit_rates"]
    assert llc["warmup_batches"] == len(rates) >= 2
    assert abs(rates[-1] - rates[-2]) < STEADY_TOL and rates[0] < rates[-1]
    assert llc["hit_rate"] > rates[0]
    again = arch.gather_reduce(batch, functional=False)[1].breakdown["llc"]
    assert again["hits"] == llc["hits"]  # a copy of the warmed state, not a state run on


def test_replica_choice_trades_partial_sums_for_spread(skewed):
    """Both replica choices balance the finest level's lookups; least-loaded spreads a bag's hot
    lookups over more nodes, so the bank units send more partial sums up."""
    batch = generate_batch(skewed, seed=3)
    sent, spread = {}, {}
    for choice in ("bag-blocks", "least-loaded"):
        arch = load_arch("trim-b", overrides={"replica_choice": choice})
        arch.bind(skewed)
        flat, plc, _ = arch.prepare(batch)
        traffic = arch.tree_traffic(flat, plc)
        sent[choice] = int(traffic.send["bank"].sum())
        loads = np.bincount(plc.node, minlength=arch.layouts["bank"].nodes)
        spread[choice] = loads.max() / loads.mean()
    assert sent["least-loaded"] > sent["bag-blocks"]
    assert spread["least-loaded"] < 1.2 and spread["bag-blocks"] < 1.2


def test_replica_choice_and_base_placement_are_read_by_their_switches(skewed, monkeypatch):
    """The placement asks a registered option's switch, not its name: a twin of least-loaded
    (and of the frequency base) under another name places every lookup as the original, and
    the two originals differ, so a name test would show."""
    import dataclasses

    from nmp.arch.spec import BASE_PLACEMENTS, REPLICA_CHOICES

    for registry, name in ((REPLICA_CHOICES, "least-loaded"), (BASE_PLACEMENTS, "frequency")):
        twin = dataclasses.replace(registry.get(name), name=f"{name}-twin")
        monkeypatch.setitem(registry._items, twin.name, twin)
    batch = generate_batch(skewed, seed=3)

    def nodes(design: str, over: dict) -> np.ndarray:
        arch = load_arch(design, overrides=over)
        arch.bind(skewed)
        _, plc, _ = arch.prepare(batch)
        return np.stack([plc.level, plc.node])

    for design, key, name, other in (
        ("trim-b", "replica_choice", "least-loaded", "bag-blocks"),
        ("recross", "base_placement", "frequency", "capacity"),
    ):
        base = {"bandwidth_aware_partition": False} if design == "recross" else {}
        want = nodes(design, {**base, key: name})
        assert np.array_equal(nodes(design, {**base, key: f"{name}-twin"}), want), key
        assert not np.array_equal(nodes(design, {**base, key: other}), want), key


def test_models_catalog_names_each_design_switch():
    """`nmp models --kind arch` says which reading of each unsourced switch a preset uses."""
    from nmp.arch.point import catalog_rows

    rows = {r["name"]: r["summary"] for r in catalog_rows()}
    assert "SALP (masa)" in rows["recross"] and "window 32" in rows["recross"]
    assert "RankCache 128 KiB (profile)" in rows["recnmp"]
    assert "hot-row replication 4096 (bag-blocks)" in rows["trim-g"]
    assert "LLC 32 MiB" in rows["host-cpu"]


class _Stats:
    def __init__(self, **counts):
        self.cmd_counts = counts


def test_rank_command_cycles_count_each_command_at_its_bus_cycles():
    """DDR5's ACT and column commands take two C/A cycles (the standard's multi_cycle), DDR4's
    one; an idle rank unit issues none."""
    from nmp.arch.bounds import rank_command_cycles
    from nmp.memory import load_memory

    stats = [_Stats(ACT=10, RD=40, PREpb=10, REFab=1), None]
    ddr5 = rank_command_cycles(load_memory("ddr5-4800-40"), stats, 2)
    assert ddr5.tolist() == [10 * 2 + 40 * 2 + 10 + 1, 0.0]
    assert rank_command_cycles(load_memory("ddr4-2400"), stats, 2).tolist() == [61.0, 0.0]


def test_rank_units_commands_share_the_rank_c_a_with_instructions(skewed):
    """The rank's C/A carries the in-DRAM lookups' instructions and the rank unit's own DRAM
    commands: ReCross's C/A time is their sum on the busiest rank; RecNMP's (no in-DRAM
    units) its rank units' commands alone."""
    batch = generate_batch(skewed, seed=3)
    for name in ("recross", "recnmp"):
        arch = load_arch(name)
        arch.bind(skewed)
        op = arch.gather_reduce(batch, functional=False)[1]
        ins = op.breakdown["instruction"]
        assert ins["rank_command_cycles"] > 0
        tck = arch.mem.tck_ns
        if name == "recnmp":  # 8 ranks, at most all the commands on one
            assert 0 < ins["dram_ca_ns"] <= ins["rank_command_cycles"] * tck * (1 + 1e-9)
        else:
            lv = op.breakdown["levels"]
            in_dram = lv["bankgroup"]["lookups"] + lv["bank"]["lookups"]
            ranks = 2  # the even share of both is a floor of the busiest rank's
            even = (in_dram * 85 / 14 + ins["rank_command_cycles"]) / ranks * tck
            assert ins["dram_ca_ns"] >= even * (1 - 1e-9)
            without = in_dram * 85 / 14 / ranks * tck
            assert ins["dram_ca_ns"] > without


def test_a_bank_unit_shares_its_bank_groups_column_path(skewed):
    """In ReCross-d the 4 bank units sit in bank groups 0-3 beside the bank-group units: with
    arch.shared_bankgroup_column_path their bursts and the bank-group unit's (reads and the
    partial sums it receives) share one burst per tCCD_L; switched off, or in TRiM-B (no
    bank-group units), there is no such bound."""
    from nmp.arch.bounds import shared_bankgroup_bound

    batch = generate_batch(skewed, seed=3)
    ops, archs = {}, {}
    for shared in (True, False):
        archs[shared] = load_arch("recross", overrides={"shared_bankgroup_column_path": shared})
        archs[shared].bind(skewed)
        ops[shared] = archs[shared].gather_reduce(batch, functional=False)[1]
    arch = archs[True]
    t = ops[True].breakdown["bounds_ns"]["bankgroup_column_path"]
    assert "bankgroup_column_path" not in ops[False].breakdown["bounds_ns"]
    lv = ops[True].breakdown["levels"]
    # the busiest shared bank group carries at least the even share of both levels' bytes over
    # its 4 x 2 (rank, bank group) paths, and at most all of it
    both = lv["bankgroup"]["bytes"] + lv["bank"]["bytes"]
    per_burst = 12 * arch.mem.tck_ns / 64
    assert both / 8 * per_burst * (1 - 1e-9) <= t <= both * per_burst
    assert ops[True].t_ns >= t
    # a hand-built load: 64 B on bank-group unit 1 and 128 B on bank unit 1 of rank 0 share
    # bank group 1: 3 bursts x 12 tCK
    nodes = {lv: arch.layouts[lv].nodes for lv in ("bankgroup", "bank")}
    load = {lv: np.zeros(n) for lv, n in nodes.items()}
    load["bankgroup"][1], load["bank"][1] = 64.0, 128.0
    assert shared_bankgroup_bound(arch, load) == pytest.approx(3 * 12 * arch.mem.tck_ns)
    trim_b = load_arch("trim-b")
    trim_b.bind(skewed)
    assert shared_bankgroup_bound(trim_b, {"bank": np.ones(trim_b.layouts["bank"].nodes)}) == 0.0


def test_profile_counts_of_all_tables_equal_the_counts_per_table(monkeypatch):
    """AccessProfile.counts_of (a dense map, or one search over all tables) gives row_counts
    table by table, rows the profile never saw included; a row outside its table takes the
    loop (0 there, not the next table's count)."""
    from nmp.arch import profile as profile_mod
    from nmp.arch.profile import AccessProfile

    rng = np.random.default_rng(3)
    table_rows = (50, 7, 200)
    keys = tuple(np.union1d(rng.integers(0, r, r // 2), [0]) for r in table_rows)
    counts = tuple(rng.integers(1, 9, k.size).astype(np.float64) for k in keys)
    prof = AccessProfile(keys, counts, table_rows, 4)
    tables = rng.integers(0, 3, 500)
    rows = np.array([rng.integers(0, table_rows[t]) for t in tables])
    want = np.empty(500)
    for t in range(3):
        sel = tables == t
        want[sel] = prof.row_counts(t, rows[sel])
    np.testing.assert_array_equal(prof.counts_of(tables, rows), want)
    assert want.min() == 0 and want.max() > 0  # both seen and unseen rows
    # table 1's row 7 is past its end: globally it is table 2's row 0
    out = prof.counts_of(np.array([1, 2]), np.array([7, 0]))
    assert out[0] == 0 and out[1] == prof.row_counts(2, np.array([0]))[0] > 0
    # these tables are small enough for the dense map; a profile above its limit searches
    # the keys, and gives the same counts
    assert prof._count_map is not None
    monkeypatch.setattr(profile_mod, "_DENSE_COUNT_ROWS", 10)
    searched = AccessProfile(keys, counts, table_rows, 4)
    assert searched._count_map is None
    np.testing.assert_array_equal(searched.counts_of(tables, rows), want)


@pytest.mark.parametrize("reading", ["salp2", "masa"])
def test_salp_slots_in_the_emission_pass_match_subarray_slots(skewed, monkeypatch, reading):
    """The emission pass picks each lookup's activated-subarray slot itself (one pass, issue
    43); the direct path takes them from ``salp.subarray_slots``. Forcing the direct path must
    leave every figure of the bank level unchanged."""
    from nmp.arch import lowering

    overrides = {**ABLATION_BASE, "subarray_parallelism": True, "bank.salp": reading}

    def bank_level():
        arch = load_arch("recross", overrides=overrides)
        arch.bind(skewed)
        _, op = arch.gather_reduce(generate_batch(skewed, seed=3), functional=False)
        return op.breakdown["levels"]["bank"]

    emitted = bank_level()
    codes = lowering._field_codes

    def direct(view):
        fields, _, shift = codes(view)
        return fields, False, shift  # "addresses do not compose": every request encoded alone

    monkeypatch.setattr(lowering, "_field_codes", direct)
    assert bank_level() == emitted
