"""Placement of the store's stripes on memory nodes, from :class:`nmp.coding.StripeLayout`.

Returns the arrays the store indexes with: ``stripe_of[row]``, ``slot_of[row]`` (member of the
stripe, ``0..k-1``) and ``node_of_pos[stripe, position]`` (positions ``0..k-1`` are the data
members, ``k..k+r-1`` the parities). Without parity (``r = 0``) rows go round-robin over the
nodes (stripes of ``N`` rows, one per node).
"""

from __future__ import annotations

import numpy as np


def stripe_positions(
    total_rows: int, num_nodes: int, k: int, r: int, *, rotating: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.arange(total_rows, dtype=np.int64)
    if r == 0:
        stripes = -(-total_rows // num_nodes)
        node_of_pos = np.tile(np.arange(num_nodes, dtype=np.int64), (stripes, 1))
        return rows // num_nodes, rows % num_nodes, node_of_pos
    from nmp.coding import StripeLayout

    layout = StripeLayout(num_nodes, k, r, rotating=rotating)
    stripes = layout.num_stripes(total_rows)
    all_rows = np.arange(stripes * k, dtype=np.int64)  # the last stripe's padding rows too
    stripe, node, _ = layout.locate(all_rows)
    node_of_pos = np.empty((stripes, k + r), dtype=np.int64)
    node_of_pos[:, :k] = node.reshape(stripes, k)
    node_of_pos[:, k:] = layout.parity_nodes(np.arange(stripes))
    return rows // k, rows % k, node_of_pos
