"""The locality-aware issue order of a unit (ReCross): the lookups in the unit's queue, every
bank's in DRAM-row order, so that hits to an open row go back to back, and the unit's banks taken
in turn so that their activations overlap. A unit reorders only what its queue holds:
:func:`windowed_locality_order` applies the order to consecutive windows of each node's arrivals
(``arch.scheduling_window``); window 0 sorts the whole batch at once (an oracle no hardware has).
A stable radix sort by (node, bank, page), ties in arrival order;
:func:`_locality_order_reference` is its numpy oracle (two packed-key sorts)."""

from __future__ import annotations

import numpy as np
from numba import njit


def _bits(a: np.ndarray) -> int:
    """Bits of the largest value; 64 (no packing) if any is negative."""
    if not a.size:
        return 0
    return 64 if int(a.min()) < 0 else int(a.max()).bit_length()


def _sort_order(*keys: np.ndarray) -> np.ndarray:
    """``np.lexsort(keys[::-1])`` (first key most significant) for non-negative int64 keys
    whose last key is unique: the keys packed into one int64 when they fit in 63 bits (one
    plain sort instead of a sort per key; the same order, as no two packed keys are equal)."""
    widths = [_bits(k) for k in keys]
    if sum(widths) > 63:
        return np.lexsort(keys[::-1])
    packed = np.zeros(keys[0].size, dtype=np.int64)
    for k, w in zip(keys, widths, strict=True):
        packed <<= w
        packed |= k
    return np.argsort(packed)


def _locality_order_reference(node: np.ndarray, bank: np.ndarray, page: np.ndarray) -> np.ndarray:
    """Pure-numpy :func:`_locality_order` (two packed-key sorts), the kernel's test oracle."""
    arrival = np.arange(node.size, dtype=np.int64)
    o = _sort_order(node, bank, page, arrival)
    ns, bs = node[o], bank[o]
    new_group = np.ones(o.size, dtype=bool)
    new_group[1:] = (ns[1:] != ns[:-1]) | (bs[1:] != bs[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, arrival, 0))
    rank_in_bank = np.empty(o.size, dtype=np.int64)
    rank_in_bank[o] = arrival - group_start
    # (node, rank in bank, bank) is unique per lookup: arrival never breaks a tie here
    return _sort_order(node, rank_in_bank, bank, arrival)


RADIX_BITS = 11  # digit of the locality sort (a 2048-entry count table stays in L1)


@njit(cache=True)
def _counting_pass(src, key, shift, mask, dst):  # pragma: no cover - compiled
    """Stable counting sort of the indices ``src`` by digit ``(key[i] >> shift) & mask``."""
    count = np.zeros(mask + 2, dtype=np.int64)
    for k in range(src.shape[0]):
        count[((key[src[k]] >> shift) & mask) + 1] += 1
    for d in range(mask + 1):
        count[d + 1] += count[d]
    for k in range(src.shape[0]):
        i = src[k]
        d = (key[i] >> shift) & mask
        dst[count[d]] = i
        count[d] += 1


@njit(cache=True)
def _grouped_indirect(group, page, groups):  # pragma: no cover - compiled
    """Lookup ids sorted by (group, page, id): LSD radix passes over the ids (page digits,
    then the group)."""
    n = group.shape[0]
    pmax = 0
    for i in range(n):
        pmax = max(pmax, page[i])
    a = np.arange(n)
    b = np.empty(n, dtype=np.int64)
    mask = (1 << RADIX_BITS) - 1
    shift = 0
    while shift == 0 or (pmax >> shift) > 0:
        _counting_pass(a, page, shift, mask, b)
        a, b = b, a
        shift += RADIX_BITS
    fill = np.zeros(groups + 1, dtype=np.int64)
    for i in range(n):
        fill[group[i] + 1] += 1
    for g in range(groups):
        fill[g + 1] += fill[g]
    for k in range(n):  # the last, most significant digit: the group
        i = a[k]
        b[fill[group[i]]] = i
        fill[group[i]] += 1
    return b


@njit(cache=True)
def _grouped_packed(group, page, id_bits, page_bits, group_bits):  # pragma: no cover
    """Lookup ids sorted by (group, page, id), the three packed into one int64 key (group and
    page above the ``id_bits`` of the id): LSD radix passes over the keys themselves, with no
    gathers, every digit's histogram taken in one pass."""
    n = group.shape[0]
    key = np.empty(n, dtype=np.int64)
    tmp = np.empty(n, dtype=np.int64)
    for i in range(n):
        key[i] = (((group[i] << page_bits) | page[i]) << id_bits) | i
    digits = (page_bits + group_bits + RADIX_BITS - 1) // RADIX_BITS
    size = 1 << RADIX_BITS
    mask = size - 1
    count = np.zeros((max(digits, 1), size + 1), dtype=np.int64)
    for i in range(n):
        v = key[i] >> id_bits
        for d in range(digits):
            count[d, ((v >> (d * RADIX_BITS)) & mask) + 1] += 1
    for d in range(digits):
        for x in range(size):
            count[d, x + 1] += count[d, x]
        sh = id_bits + d * RADIX_BITS
        for k in range(n):
            x = (key[k] >> sh) & mask
            tmp[count[d, x]] = key[k]
            count[d, x] += 1
        key, tmp = tmp, key
    id_mask = (np.int64(1) << id_bits) - 1
    for k in range(n):
        key[k] &= id_mask
    return key


@njit(cache=True)
def _locality_kernel(node, bank, page, nodes, banks):  # pragma: no cover - compiled
    """A stable sort of the lookups by (node, bank, page), ties in arrival order (radix, LSD),
    then per node the banks taken in turn: the i-th lookup of every bank before the (i+1)-th
    of any."""
    n = node.shape[0]
    groups = nodes * banks
    group = np.empty(n, dtype=np.int64)
    start = np.zeros(groups + 1, dtype=np.int64)
    pmax = 0
    for i in range(n):
        g = node[i] * banks + bank[i]
        group[i] = g
        start[g + 1] += 1
        pmax = max(pmax, page[i])
    for g in range(groups):
        start[g + 1] += start[g]
    id_bits = 0
    while (1 << id_bits) < n:
        id_bits += 1
    pbits = 0
    while (pmax >> pbits) > 0:
        pbits += 1
    gbits = 0
    while (1 << gbits) < groups:
        gbits += 1
    if id_bits + pbits + gbits <= 62:
        grouped = _grouped_packed(group, page, id_bits, pbits, gbits)
    else:
        grouped = _grouped_indirect(group, page, groups)
    out = np.empty(n, dtype=np.int64)
    k = 0
    for nd in range(nodes):
        longest = 0
        for bk in range(banks):
            g = nd * banks + bk
            longest = max(longest, start[g + 1] - start[g])
        for r in range(longest):
            for bk in range(banks):
                g = nd * banks + bk
                if start[g] + r < start[g + 1]:
                    out[k] = grouped[start[g] + r]
                    k += 1
    return out


def _locality_order(
    node: np.ndarray, bank: np.ndarray, page: np.ndarray, nodes: int = 0, banks: int = 0
) -> np.ndarray:
    """Issue order, grouped by node: every bank's lookups in DRAM-row order (hits to an open
    row back to back), the banks taken in turn lookup by lookup (their activations and bursts
    overlap); ties in arrival order. ``nodes`` and ``banks`` bound the node and bank ids
    (taken from the data when 0)."""
    if not node.size:
        return np.empty(0, dtype=np.int64)
    if min(int(node.min()), int(bank.min()), int(page.min())) < 0:
        return _locality_order_reference(node, bank, page)
    nodes = max(nodes, int(node.max()) + 1)
    banks = max(banks, int(bank.max()) + 1)
    return _locality_kernel(
        np.ascontiguousarray(node, dtype=np.int64),
        np.ascontiguousarray(bank, dtype=np.int64),
        np.ascontiguousarray(page, dtype=np.int64),
        nodes,
        banks,
    )


@njit(cache=True)
def _window_nodes(node, nodes, window):  # pragma: no cover - compiled
    """Each lookup's (node, window) as one id, node-major (node * windows per node + the
    window of its arrival within the node), and the windows per node."""
    seen = np.zeros(nodes, dtype=np.int64)
    for i in range(node.shape[0]):
        seen[node[i]] += 1
    most = 0
    for k in range(nodes):
        most = max(most, seen[k])
    per_node = max(1, (most + window - 1) // window)
    seen[:] = 0
    out = np.empty(node.shape[0], dtype=np.int64)
    for i in range(node.shape[0]):
        nd = node[i]
        out[i] = nd * per_node + seen[nd] // window
        seen[nd] += 1
    return out, per_node


def windowed_locality_order(
    node: np.ndarray, bank: np.ndarray, page: np.ndarray, nodes: int, banks: int, window: int
) -> np.ndarray:
    """:func:`_locality_order` applied to each node's arrivals ``window`` lookups at a time
    (the unit's queue): the result is grouped by node, its windows in arrival order, each
    window in locality order. ``window`` <= 0: the whole batch is one window."""
    if window <= 0 or not node.size:
        return _locality_order(node, bank, page, nodes, banks)
    nodes = max(nodes, int(node.max()) + 1)
    virtual, per_node = _window_nodes(np.ascontiguousarray(node, dtype=np.int64), nodes, window)
    return _locality_order(virtual, bank, page, nodes * per_node, banks)
