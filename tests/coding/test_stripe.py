"""Stripe placement: distinct nodes per stripe, no slot shared, parity rotation or pinning."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.coding import CodingError, StripeLayout


def all_locations(layout, rows):
    stripe, node, slot = layout.locate(np.arange(rows))
    pnode, pslot = layout.parity_location(np.arange(layout.num_stripes(rows)))
    return stripe, node, slot, pnode, pslot


@pytest.mark.parametrize(
    "n,k,r,rot",
    [
        (5, 4, 1, True),
        (5, 2, 1, True),
        (6, 2, 1, True),
        (8, 4, 2, True),
        (5, 3, 1, False),
        (6, 2, 2, False),
        (4, 3, 1, False),
    ],
)
def test_slots_unique_and_stripes_on_distinct_nodes(n, k, r, rot):
    layout = StripeLayout(n, k, r, rotating=rot)
    rows = 997
    stripe, node, slot, pnode, pslot = all_locations(layout, rows)
    pairs = set(zip(node.tolist(), slot.tolist(), strict=True))
    pairs |= set(zip(pnode.ravel().tolist(), pslot.ravel().tolist(), strict=True))
    assert len(pairs) == rows + pnode.size  # no two rows share a (node, slot)
    for s in range(layout.num_stripes(rows)):
        members = np.concatenate([node[stripe == s], pnode[s]])
        assert len(set(members.tolist())) == len(members)
    need = layout.slots_per_node(rows)
    assert need.sum() >= rows + pnode.size


def test_rotating_parity_visits_every_node_evenly():
    layout = StripeLayout(5, 4, 1)
    counts = np.bincount(layout.parity_nodes(np.arange(1000)).ravel(), minlength=5)
    assert counts.tolist() == [200] * 5
    need = layout.slots_per_node(4000)
    assert need.max() - need.min() <= 1


def test_fixed_parity_is_pinned():
    layout = StripeLayout(5, 3, 1, rotating=False)
    assert set(layout.parity_nodes(np.arange(100)).ravel().tolist()) == {4}
    _, node, _ = layout.locate(np.arange(100))
    assert 4 not in set(node.tolist())


def test_overhead_and_errors():
    assert StripeLayout(5, 4, 1).memory_overhead == pytest.approx(0.25)
    assert StripeLayout(8, 4, 2).memory_overhead == pytest.approx(0.5)
    with pytest.raises(CodingError, match="distinct nodes"):
        StripeLayout(4, 4, 1)
    with pytest.raises(CodingError):
        StripeLayout(4, 0, 1)
