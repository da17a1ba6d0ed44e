"""The locality-aware issue order of a unit (ReCross): the lookups in the unit's queue, every
bank's in DRAM-row order, so that hits to an open row go back to back, and the unit's banks taken
in turn so that their activations overlap. A unit reorders only what its queue holds:
:func:`windowed_locality_order` applies the order to consecutive windows of each node's arrivals
(``arch.scheduling_window``); window 0 sorts the whole batch at once (an oracle no hardware has).
A stable radix sort by (node, bank, page), ties in arrival order;
:func:`_locality_order_reference` is its numpy oracle (two packed-key sorts)."""

from __future__ import annotations

import numpy as np

from nmp.jit import njit


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


# A window's lookups of one bank (a group) are sorted by an insertion sort of packed (page,
# arrival) keys when no group holds more than this many; larger groups (a whole-batch window)
# take the radix sort. With a queue of 32 a ReCross group holds 2-32 lookups, where the radix
# sort's passes over every digit cost more than the insertion (issue 43: the three levels'
# order 1.40 -> 1.18 ms a point, with the windows' ids, the checks and the bounds taken in the
# same kernel instead of separate passes and numpy reductions). Their indices are unsigned
# (ids and pages are checked non-negative first): numba adds a wrap-around of negative
# indices to each signed one; a point's three calls took 0.95 instead of 1.15 ms (captured,
# alternating, best of 300, 2-core AMD EPYC).
SMALL_GROUP = 64


@njit(cache=True)
def _shift_or_minus1(d):  # pragma: no cover - compiled
    """log2(d) when ``d`` > 0 is a power of two, else -1."""
    if d <= 0 or d & (d - 1):
        return -1
    sh = 0
    while (1 << sh) < d:
        sh += 1
    return sh


@njit(cache=True)
def _group_ids(node, bank, nodes, banks, window, group):  # pragma: no cover - compiled
    """Each lookup's group, ``(node * windows per node + its window) * banks + bank``, into
    ``group``; its window is the index of its arrival among its node's divided by ``window``
    (``window`` <= 0: one window). Returns the windows per node."""
    n = node.shape[0]
    if window <= 0:
        for i in range(n):
            group[i] = node[i] * banks + bank[i]
        return 1
    seen = np.zeros(nodes, dtype=np.int64)
    for i in range(n):
        seen[np.uint64(node[i])] += 1
    most = 0
    for k in range(nodes):
        most = max(most, seen[k])
    per_node = max(1, (most + window - 1) // window)
    seen[:] = 0
    w_sh = _shift_or_minus1(window)  # (a queue's size is usually 2^k: a shift, no division)
    for i in range(n):
        nd = node[i]
        s = seen[np.uint64(nd)]
        w = s >> w_sh if w_sh >= 0 else s // window
        group[i] = (nd * per_node + w) * banks + bank[i]
        seen[np.uint64(nd)] = s + 1
    return per_node


@njit(cache=True)
def _sort_small_groups(group, page, start, id_bits):  # pragma: no cover - compiled
    """Lookup ids sorted by (group, page, id) for groups of a few lookups each: a counting pass
    by group (``start``: each group's first position), then an insertion sort of each group's
    keys ``page << id_bits | id`` (unique, so the order is the sort's whatever its
    stability)."""
    n = group.shape[0]
    keys = np.empty(n, dtype=np.int64)
    fill = start[:-1].copy()
    for i in range(n):
        gid = np.uint64(group[i])
        f = fill[gid]
        keys[np.uint64(f)] = (page[i] << id_bits) | i
        fill[gid] = f + 1
    one = np.uint64(1)
    for g in range(start.shape[0] - 1):
        a, b = np.uint64(start[g]), np.uint64(start[g + 1])
        for pos in range(a + one, b):
            v = keys[pos]
            y = np.uint64(pos)
            while y > a and keys[y - one] > v:
                keys[y] = keys[y - one]
                y -= one
            keys[y] = v
    mask = (np.int64(1) << id_bits) - 1
    for x in range(n):
        keys[x] &= mask
    return keys


# Above this many banks a node's turns go over a list of the banks that still have lookups
# (every pass over it takes one lookup of each, with no branch), below it over every bank
# with a test each: for a rank unit's 16 banks 42 against 125 us a recross point, for a
# bank-group unit's 3 banks 101 against 78 us (captured inputs, thread CPU, best of 9).
FEW_BANKS = 4


@njit(cache=True)
def _banks_in_turn(grouped, start, nodes, banks, out):  # pragma: no cover - compiled
    """Per node, the i-th lookup of every bank before the (i+1)-th of any (``grouped``: ids by
    (node, bank, ...), group ``g = node * banks + bank`` from ``start[g]``), into ``out``."""
    if banks == 1:  # one bank a node: the groups' order itself
        out[:] = grouped
        return
    active = np.empty(banks, dtype=np.int64)
    k = 0
    for nd in range(nodes):
        if banks <= FEW_BANKS:
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
            continue
        m = 0  # the node's banks with lookups, in bank order
        for bk in range(banks):
            g = nd * banks + bk
            active[m] = g
            m += start[g + 1] > start[g]
        r = 0
        while m > 0:  # the r-th lookup of each; those with more stay, in order
            left = 0
            for q in range(m):
                g = active[q]
                out[k] = grouped[start[g] + r]
                k += 1
                active[left] = g
                left += start[g] + r + 1 < start[g + 1]
            m = left
            r += 1


@njit(cache=True)
def _locality_kernel(node, bank, page, nodes, banks, window):  # pragma: no cover - compiled
    """The windowed locality order (:func:`windowed_locality_order`): a stable sort of the
    lookups by (node, window, bank, page), ties in arrival order, then per (node, window) the
    banks taken in turn. ``nodes`` and ``banks`` are raised to the ids' bounds; ``ok`` False
    (nothing done) if an id or page is negative."""
    n = node.shape[0]
    out = np.empty(n, dtype=np.int64)
    n_top, b_top, pmax = -1, -1, 0
    for i in range(n):
        if node[i] < 0 or bank[i] < 0 or page[i] < 0:
            return out, False
        n_top = max(n_top, node[i])
        b_top = max(b_top, bank[i])
        pmax = max(pmax, page[i])
    nodes = max(nodes, n_top + 1)
    banks = max(banks, b_top + 1)
    group = np.empty(n, dtype=np.int64)
    per_node = _group_ids(node, bank, nodes, banks, window, group)
    vnodes = nodes * per_node
    groups = vnodes * banks
    start = np.zeros(groups + 1, dtype=np.int64)
    for i in range(n):
        start[np.uint64(group[i] + 1)] += 1
    largest = 0
    for g in range(groups):
        largest = max(largest, start[g + 1])
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
    if largest <= SMALL_GROUP and id_bits + pbits <= 62:
        grouped = _sort_small_groups(group, page, start, id_bits)
    elif id_bits + pbits + gbits <= 62:
        grouped = _grouped_packed(group, page, id_bits, pbits, gbits)
    else:
        grouped = _grouped_indirect(group, page, groups)
    _banks_in_turn(grouped, start, vnodes, banks, out)
    return out, True


def _locality_order(
    node: np.ndarray, bank: np.ndarray, page: np.ndarray, nodes: int = 0, banks: int = 0
) -> np.ndarray:
    """Issue order, grouped by node: every bank's lookups in DRAM-row order (hits to an open
    row back to back), the banks taken in turn lookup by lookup (their activations and bursts
    overlap); ties in arrival order. ``nodes`` and ``banks`` bound the node and bank ids
    (taken from the data when 0)."""
    return windowed_locality_order(node, bank, page, nodes, banks, 0)


def _window_ids_reference(node: np.ndarray, window: int) -> np.ndarray:
    """Each lookup's window among its node's arrivals (numpy; the kernel's test oracle)."""
    order = np.argsort(node, kind="stable")
    ranked = node[order]
    within = np.arange(node.size, dtype=np.int64) - np.searchsorted(ranked, ranked)
    out = np.empty(node.size, dtype=np.int64)
    out[order] = within // window
    return out


def windowed_locality_order(
    node: np.ndarray, bank: np.ndarray, page: np.ndarray, nodes: int, banks: int, window: int
) -> np.ndarray:
    """:func:`_locality_order` applied to each node's arrivals ``window`` lookups at a time
    (the unit's queue): the result is grouped by node, its windows in arrival order, each
    window in locality order. ``window`` <= 0: the whole batch is one window."""
    if not node.size:
        return np.empty(0, dtype=np.int64)
    out, ok = _locality_kernel(
        np.ascontiguousarray(node, dtype=np.int64),
        np.ascontiguousarray(bank, dtype=np.int64),
        np.ascontiguousarray(page, dtype=np.int64),
        int(nodes),
        int(banks),
        int(window),
    )
    if ok:
        return out
    if window <= 0:  # negative ids: numpy's sorts take them
        return _locality_order_reference(node, bank, page)
    w = _window_ids_reference(node, window)
    return _locality_order_reference(node * (int(w.max()) + 1) + w, bank, page)
