"""The compiled fast paths of lowering, placement and the tree equal their numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch
from nmp.arch import tree as tree_mod
from nmp.arch.lowering import _locality_order, _locality_order_reference
from nmp.workload import generate_batch


@pytest.mark.parametrize("seed", range(6))
def test_locality_kernel_equals_packed_sorts(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(0, 2000))
        nodes, banks = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        node = rng.integers(0, nodes, n)
        bank = rng.integers(0, banks, n)
        page = rng.integers(0, int(rng.choice([2, 50, 1 << 40])), n)
        got = _locality_order(node, bank, page, nodes, banks)
        assert np.array_equal(got, _locality_order_reference(node, bank, page))


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
