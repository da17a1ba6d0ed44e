"""The compiled fast paths of lowering, placement and the tree equal their numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch
from nmp.arch import lowering as low
from nmp.arch import memview as mv
from nmp.arch import tree as tree_mod
from nmp.arch.locality import (
    _locality_order,
    _locality_order_reference,
    windowed_locality_order,
)
from nmp.arch.placement import bag_major_order, flatten
from nmp.arch.spec import LEVELS
from nmp.memory import load_memory, make_requests, replay, replay_lines
from nmp.workload import LookupBatch, TableLookups, generate_batch


@pytest.mark.parametrize("seed", range(6))
def test_locality_kernel_equals_packed_sorts(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(0, 2000))
        nodes, banks = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        node = rng.integers(0, nodes, n)
        bank = rng.integers(0, banks, n)
        # pages up to 2^55: (node, bank, page, arrival) then too wide for one packed key
        page = rng.integers(0, int(rng.choice([2, 50, 1 << 40, 1 << 55])), n)
        got = _locality_order(node, bank, page, nodes, banks)
        assert np.array_equal(got, _locality_order_reference(node, bank, page))


@pytest.mark.parametrize("seed", range(4))
def test_windowed_locality_kernel_equals_packed_sorts_per_window(seed):
    """Windows of a power of two and not, groups small (insertion sort) and larger than
    SMALL_GROUP (radix sort), pages too wide to pack: the numpy sorts on (node, window) ids."""
    from nmp.arch.locality import SMALL_GROUP, _window_ids_reference

    rng = np.random.default_rng(100 + seed)
    for _ in range(30):
        n = int(rng.integers(1, 3000))
        nodes, banks = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        window = int(rng.choice([1, 3, 32, 33, 4 * SMALL_GROUP, 100_000]))
        node = rng.integers(0, nodes, n)
        bank = rng.integers(0, banks, n)
        page = rng.integers(0, int(rng.choice([2, 50, 1 << 40, 1 << 55])), n)
        w = _window_ids_reference(node, window)
        seen: dict[int, int] = {}
        for i, nd in enumerate(node.tolist()):  # the window ids by their definition
            assert w[i] == seen.get(nd, 0) // window
            seen[nd] = seen.get(nd, 0) + 1
        want = _locality_order_reference(node * (int(w.max()) + 1) + w, bank, page)
        got = windowed_locality_order(node, bank, page, nodes, banks, window)
        assert np.array_equal(got, want)


def test_split_levels_divides_exactly_by_multiplying():
    """_split_levels' quotient by a unit's bank count (a multiply and a shift) equals integer
    division for every dividend below 2^31, on divisors from 1 to 2^31 - 1, the extremes
    included."""
    rng = np.random.default_rng(7)
    top = (1 << low._MAGIC_BITS) - 1
    edges = np.array([0, 1, 2, 3, top - 1, top], dtype=np.int64)
    for d in [1, 2, 3, 5, 6, 7, 12, 24, 1000, 4099, (1 << 20) + 1, top - 1, top]:
        m, shift = low._magic(d)
        s = np.concatenate(
            [edges, rng.integers(0, top, 20_000), d * rng.integers(0, top // d, 500)]
        )
        s = np.concatenate([s, np.maximum(s - 1, 0), np.minimum(s + 1, top)])
        got = (s.astype(np.uint64) * np.uint64(m)) >> np.uint64(shift)
        assert np.array_equal(got.astype(np.int64), s // d), d


def test_split_keeps_the_most_lines_per_row_and_the_page_test():
    """The split pass's most lines per row of each level is the maximum over its lookups, and
    "no row leaves its page" (``(col0 + lines).max() <= lines per page``) is that maximum
    fitting a page: rows of 1, 4 and 128 lines (longer than a 64-line page)."""
    arch = load_arch("recross")
    rng = np.random.default_rng(4)
    offsets = np.arange(0, 8 * 20 + 1, 20, dtype=np.int64)
    tables = tuple(
        TableLookups(rng.integers(0, rows, 160), offsets, None, rows, dim)
        for rows, dim in ((5000, 16), (3000, 2048), (800, 64))
    )
    flat, plc, order = arch.prepare(LookupBatch(tables))
    split = low.split_levels(arch.layouts, arch.mem, flat, plc, order)
    lpp = mv.lines_per_page(arch.mem)
    for li in range(len(LEVELS)):
        a, b = int(split.offsets[li]), int(split.offsets[li + 1])
        if a < b:
            lpr, col0 = split.lpr[a:b], split.col0[a:b]
            assert split.lpr_top[li] == lpr.max()
            assert bool((col0 + lpr).max() <= lpp) == bool(lpr.max() <= lpp)
    assert (split.lpr > lpp).any() and (split.lpr <= lpp).any()


def _lru_slots_reference(node: np.ndarray, row: np.ndarray, salp: int) -> np.ndarray:
    """The activated-subarray slots by the rule in words: per node from empty slots, a held
    row keeps its slot, a new row takes the first empty slot, else the least recently used."""
    out = np.empty(node.size, dtype=np.int64)
    held: list[int] = []
    last: list[int] = []
    for i, (nd, r) in enumerate(zip(node.tolist(), row.tolist(), strict=True)):
        if i == 0 or nd != node[i - 1]:
            held, last = [-1] * salp, [-1] * salp
        if r in held:
            s = held.index(r)
        elif -1 in held:
            s = held.index(-1)
        else:
            s = last.index(min(last))
        held[s], last[s] = r, i
        out[i] = s
    return out


@pytest.mark.parametrize("salp", [1, 2, 4, 8])
def test_subarray_slots_follow_the_lru_rule(salp):
    """The branch-free slot pick (every slot visited each time) gives the slots of the rule:
    rows repeated at once, after a while and never, over several nodes."""
    from nmp.arch.salp import subarray_slots

    rng = np.random.default_rng(salp)
    node = np.sort(rng.integers(0, 4, 3000))
    row = rng.integers(0, 12, 3000)  # few rows: hits on every slot, not only the last one
    row[::7] = rng.integers(0, 1 << 40, row[::7].size)
    got = subarray_slots(node, row, salp)
    assert np.array_equal(got, _lru_slots_reference(node, row, salp))
    assert np.bincount(got, minlength=salp).min() > 0  # every slot was picked


@pytest.mark.parametrize("name", ["recross", "trim-g", "recnmp"])
def test_dense_tree_count_equals_the_sorting_path(name, small_workload, monkeypatch):
    arch = load_arch(name)
    arch.bind(small_workload)
    flat, plc, _ = arch.prepare(generate_batch(small_workload, seed=4))
    fast = arch.tree_traffic(flat, plc)
    monkeypatch.setattr(tree_mod, "_count_tree", lambda *a, **k: None)
    slow = arch.tree_traffic(flat, plc)
    assert list(fast.send) == list(slow.send) and sorted(fast.recv) == sorted(slow.recv)
    for lv in slow.send:
        assert np.array_equal(fast.send[lv], slow.send[lv])
    for lv in slow.recv:
        assert np.array_equal(fast.recv[lv], slow.recv[lv])
    assert np.array_equal(fast.host_recv, slow.host_recv)


@pytest.mark.parametrize(
    "name,overrides",
    [
        ("recross", {}),  # SALP bank level, locality scheduling
        ("recross", {"subarray_parallelism": False, "locality_aware_scheduling": False}),
        ("trim-g", {}),
        ("recnmp", {}),
    ],
)
def test_emitted_addresses_equal_direct_encoding(name, overrides, small_workload):
    """The compiled lowering (OR of per-field address codes) equals encode_address of every
    request's fields, request for request, on every data level; nodes come grouped."""
    arch = load_arch(name, overrides=overrides)
    arch.bind(small_workload)
    flat, plc, order = arch.prepare(generate_batch(small_workload, seed=3))
    split = low.split_levels(arch.layouts, arch.mem, flat, plc, order)
    lowered = 0
    for lv, lay in arch.layouts.items():
        if lay.capacity_banks <= 0:
            continue
        stream = low.lower_level(arch.spec, lv, lay, arch.mem, flat, plc, order, split)
        alone = low.lower_level(arch.spec, lv, lay, arch.mem, flat, plc, order)
        assert np.array_equal(stream.addr, alone.addr)
        assert np.array_equal(stream.node_lines, alone.node_lines)
        node, lpr, b, page, col0, _, _ = split.level(LEVELS.index(lv), lay.nodes)
        if arch.spec.locality_aware_scheduling:
            perm = windowed_locality_order(
                node, b, page, lay.nodes, lay.banks_per_unit, arch.spec.scheduling_window
            )
        else:
            perm = np.argsort(node, kind="stable")
        salp = 0
        rows_mod = arch.mem.org.rows
        if lv == "bank" and arch.spec.subarray_parallelism:
            salp = min(low._next_pow2(arch.spec.bank.subarrays), low.SALP_TRACKED_SUBARRAYS)
            rows_mod = stream.view.org.rows
        lpp = mv.lines_per_page(arch.mem)
        addr, node_req = low._lower_direct(
            arch.spec, lay, stream.view, perm, node, b, page, col0, lpr, lpp, rows_mod, salp
        )
        assert np.array_equal(stream.addr, addr)
        assert np.array_equal(stream.node_ids(), node_req)
        lowered += 1
    assert lowered


def test_flatten_and_bag_major_order_equal_numpy():
    """The compiled flatten and issue order equal their numpy definitions, also on uneven
    bags and empty tables; invalid offsets take the numpy path."""
    rng = np.random.default_rng(1)
    tables = []
    for rows in (50, 7, 300):
        lengths = rng.integers(0, 6, 9)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        idx = rng.integers(0, rows, int(offsets[-1])).astype(np.int64)
        tables.append(TableLookups(idx, offsets, None, rows, 16))
    tables.append(TableLookups(np.zeros(0, np.int64), np.zeros(10, np.int64), None, 5, 16))
    batch = LookupBatch(tuple(tables))
    flat = flatten(batch, [64, 64, 64, 64], [50, 7, 300, 5])
    table = np.concatenate([np.full(t.indices.size, i) for i, t in enumerate(tables)])
    bag = np.concatenate([np.repeat(np.arange(t.batch), np.diff(t.offsets)) for t in tables])
    assert np.array_equal(flat.table, table) and np.array_equal(flat.bag, bag)
    assert np.array_equal(flat.grow, np.array([0, 50, 57, 357])[table] + flat.row)
    assert np.array_equal(bag_major_order(flat), np.lexsort((table, bag)))
    # a batch of the same shape with other rows shares the table, bag and order arrays
    again = LookupBatch(
        tuple(
            TableLookups((t.indices + 1) % t.num_rows, t.offsets, None, t.num_rows, 16)
            for t in tables
        )
    )
    flat2 = flatten(again, [64, 64, 64, 64], [50, 7, 300, 5])
    assert flat2.table is flat.table and flat2.bag is flat.bag
    assert np.array_equal(flat2.row, (flat.row + 1) % np.array([50, 7, 300, 5])[table])
    assert np.array_equal(flat2.grow, np.array([0, 50, 57, 357])[table] + flat2.row)
    assert bag_major_order(flat2) is bag_major_order(flat)
    assert np.array_equal(bag_major_order(flat2), np.lexsort((table, bag)))
    # offsets that do not start at 0: numpy's repeat semantics, as before
    odd = TableLookups(np.arange(4, dtype=np.int64), np.array([1, 3, 5]), None, 9, 16)
    flat = flatten(LookupBatch((odd,)), [64], [9])
    assert np.array_equal(flat.bag, [0, 0, 1, 1])


def test_replay_lines_equals_replay_of_requests():
    """The request-free replay path returns the same statistics as replay(make_requests())."""
    rng = np.random.default_rng(2)
    for preset in ("ddr5-4800-40", "hbm2-2000"):
        mem = load_memory(preset)
        addr = rng.integers(0, 1 << 16, 3000).astype(np.uint64) * np.uint64(64)
        write = rng.random(3000) < 0.2
        a = replay(make_requests(addr, write), mem)
        b = replay_lines(addr, mem, write)
        assert a.to_json() == b.to_json()
        assert replay(make_requests(addr), mem).to_json() == replay_lines(addr, mem).to_json()


@pytest.mark.parametrize("bad", ["level", "node", "key"])
def test_dense_tree_count_declines_out_of_range_ids(bad, small_workload):
    """Ids outside the tree leave the counting to the sorting path (None), as before."""
    arch = load_arch("recross")
    arch.bind(small_workload)
    flat, plc, _ = arch.prepare(generate_batch(small_workload, seed=4))
    level, node = plc.level.copy(), plc.node.copy()
    key = flat.table * flat.batch + flat.bag
    num_keys = flat.num_tables * flat.batch
    args = (arch.layouts, arch.mem.org.ranks, arch.mem.org.channels)
    assert tree_mod._count_tree(*args, level, node, key, num_keys) is not None
    if bad == "level":
        level[3] = len(LEVELS)
    elif bad == "node":
        node[3] = arch.layouts[LEVELS[level[3]]].nodes
    else:
        key = key.copy()
        key[3] = num_keys
    assert tree_mod._count_tree(*args, level, node, key, num_keys) is None
