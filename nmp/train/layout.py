"""Placement of the store's stripes on memory nodes, from ``nmp.coding.StripeLayout``.

Returns the arrays the store indexes with: ``stripe_of[row]``, ``slot_of[row]`` and
``node_of_pos[stripe, position]`` (positions ``0..k-1`` data slots, ``k..k+r-1`` parities).
Without parity (``r = 0``) rows are striped round-robin over the nodes.
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
    return _coded_positions(total_rows, num_nodes, k, r, rotating)


def _coded_positions(total_rows, num_nodes, k, r, rotating):
    stripes = -(-total_rows // k)
    s = np.arange(stripes, dtype=np.int64)
    node_of_pos = np.empty((stripes, k + r), dtype=np.int64)
    # Parity of stripe s on nodes (N-1-s .. ) rotating (RAID-5 left-symmetric); data on the rest.
    base = (num_nodes - r - s % num_nodes) % num_nodes if rotating else np.full(stripes, k)
    order = (base[:, None] + np.arange(num_nodes)[None, :]) % num_nodes
    node_of_pos[:, k:] = order[:, :r]
    node_of_pos[:, :k] = order[:, r : r + k]
    rows = np.arange(total_rows, dtype=np.int64)
    return rows // k, rows % k, node_of_pos
