"""Stripe placement over N memory nodes (ranks, bank groups, or servers).

Data row ``i`` belongs to stripe ``s = i // k`` as member ``j = i % k``; a stripe's k data rows
and r parity rows sit on k + r distinct nodes, each in one slot (a row-sized location) there.

- ``rotating=True`` (RAID-5-like, as ECRec's round-robin): stripe ``s`` takes the k + r
  consecutive nodes starting at ``s mod N`` (data first, then parity), so parity rotates over all
  nodes and every node holds data and parity in the ratio k : r.
- ``rotating=False`` (RAID-4-like, fixed parity): nodes ``N - r .. N - 1`` hold only parity (slot
  = stripe); data rows go round-robin over the ``N - r`` data nodes (row ``i`` on node
  ``i mod (N - r)``, slot ``i // (N - r)``).

All look-ups are vectorized over row (or stripe) arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.coding.errors import CodingError


@dataclass(frozen=True)
class StripeLayout:
    num_nodes: int
    k: int
    r: int = 1
    rotating: bool = True

    def __post_init__(self) -> None:
        if self.k < 1 or self.r < 1:
            raise CodingError(f"stripe needs k >= 1 and r >= 1, got k={self.k}, r={self.r}")
        if self.k + self.r > self.num_nodes:
            raise CodingError(
                f"a stripe of k + r = {self.k + self.r} rows needs as many distinct nodes, "
                f"only {self.num_nodes} given"
            )

    @property
    def width(self) -> int:
        return self.k + self.r

    @property
    def memory_overhead(self) -> float:
        """Parity bytes per data byte (r / k); e.g. 0.25 for k = 4, r = 1."""
        return self.r / self.k

    def num_stripes(self, num_rows: int) -> int:
        return -(-int(num_rows) // self.k)

    def _slot(self, stripe: np.ndarray, node: np.ndarray) -> np.ndarray:
        """Rotating layout: slot of ``stripe`` on ``node`` = stripes before it that use the node."""
        n, w = self.num_nodes, self.width
        before = (stripe // n) * w  # full rotations: each node is in w of every n stripes
        u = stripe % n
        for d in range(w):  # stripes t of the current rotation with (node - t) mod n == d, t < u
            before = before + (((node - d) % n) < u)
        return before

    def locate(self, rows: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(stripe, node, slot) of each data row, as int64 arrays."""
        i = np.asarray(rows, dtype=np.int64)
        if np.any(i < 0):
            raise CodingError("row indices must be >= 0")
        stripe, j = i // self.k, i % self.k
        if self.rotating:
            node = (stripe + j) % self.num_nodes
            slot = self._slot(stripe, node)
        else:
            dn = self.num_nodes - self.r
            node, slot = i % dn, i // dn
        return stripe, node, slot

    def parity_location(self, stripes: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """(node, slot) of each stripe's parity rows, arrays of shape ``[..., r]``."""
        s = np.asarray(stripes, dtype=np.int64)[..., None]
        p = np.arange(self.r, dtype=np.int64)
        if self.rotating:
            node = (s + self.k + p) % self.num_nodes
            return node, self._slot(s, node)
        node = np.broadcast_to(self.num_nodes - self.r + p, s.shape[:-1] + (self.r,))
        return node.copy(), np.broadcast_to(s, node.shape).copy()

    def parity_nodes(self, stripes: np.ndarray | int) -> np.ndarray:
        """Node(s) holding the parity of each stripe, shape ``[..., r]``."""
        return self.parity_location(stripes)[0]

    def stripe_rows(self, stripe: int, num_rows: int | None = None) -> np.ndarray:
        """Data row indices of one stripe (a last partial stripe is cut at ``num_rows``)."""
        rows = np.arange(stripe * self.k, (stripe + 1) * self.k, dtype=np.int64)
        return rows if num_rows is None else rows[rows < num_rows]

    def slots_per_node(self, num_rows: int) -> np.ndarray:
        """Row slots each node needs (data and parity) for a table of ``num_rows`` rows."""
        rows = np.arange(int(num_rows), dtype=np.int64)
        _, node, slot = self.locate(rows)
        pnode, pslot = self.parity_location(np.arange(self.num_stripes(num_rows)))
        need = np.zeros(self.num_nodes, dtype=np.int64)
        np.maximum.at(need, node, slot + 1)
        np.maximum.at(need, pnode.ravel(), pslot.ravel() + 1)
        return need
