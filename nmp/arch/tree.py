"""The reduction tree: bank units -> their bank group's unit (if it has one) -> the rank unit
(buffer chip) -> the host, with partial sums merged at every node they pass.

A partial sum is one bag's running sum held by one unit. A node merges its own partial sums with
its children's (one per distinct bag) and sends the merged ones to its parent. The counts of
sent and received partial sums per node are what the timing charges to the buses between levels;
the same procedure, run on the values, computes the pooled outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmp.arch.functional import reduce_segments, segment_ids
from nmp.arch.layout import LevelLayout
from nmp.arch.spec import LEVELS
from nmp.identity_cache import IdentityCache
from nmp.jit import njit

HOST = len(LEVELS)  # level index of the host


def parents(
    layouts: dict[str, LevelLayout], level: str, ranks: int
) -> tuple[np.ndarray, np.ndarray]:
    """(parent level index, parent node) of every node of ``level``."""
    lay = layouts[level]
    nodes = np.arange(lay.nodes, dtype=np.int64)
    rank_id = lay.node_rank_id(nodes)
    p_level = np.full(lay.nodes, HOST, dtype=np.int64)
    p_node = rank_id // ranks  # the host, per channel
    if level != "rank" and "rank" in layouts:
        p_level[:] = LEVELS.index("rank")
        p_node = rank_id.copy()
    if level == "bank" and "bankgroup" in layouts and layouts["bankgroup"].capacity_banks > 0:
        bgl = layouts["bankgroup"]
        nbg = int(max(bgl.unit_bg.max(), lay.unit_bg.max())) + 1
        owner = np.full(nbg, -1, dtype=np.int64)
        for u in range(bgl.units):
            owner[np.unique(bgl.unit_bg[u])] = u
        _, _, unit = lay.node_coords(nodes)
        own = owner[lay.unit_bg[unit, 0]]
        m = own >= 0
        p_level[m] = LEVELS.index("bankgroup")
        p_node[m] = rank_id[m] * bgl.units + own[m]
    return p_level, p_node


@dataclass
class TreeTraffic:
    send: dict[str, np.ndarray] = field(default_factory=dict)  # partial sums sent per node
    recv: dict[str, np.ndarray] = field(default_factory=dict)  # partial sums received per node
    host_recv: np.ndarray | None = None  # partial sums arriving at the host, per channel


def tree_reduce(
    layouts: dict[str, LevelLayout],
    ranks: int,
    channels: int,
    s_level: np.ndarray,
    s_node: np.ndarray,
    s_key: np.ndarray,
    partial: np.ndarray | None,
    num_keys: int,
) -> tuple[np.ndarray | None, TreeTraffic]:
    """Reduce leaf partial sums (level, node, key) up the tree.

    Returns the final sums per key (float32 [num_keys, dim], or None when ``partial`` is None:
    counting only) and the traffic per node."""
    if partial is None:
        counted = _count_tree(layouts, ranks, channels, s_level, s_node, s_key, num_keys)
        if counted is not None:
            return None, counted
    traffic = TreeTraffic()
    lvl, node, key, val = s_level, s_node, s_key, partial
    for li in range(len(LEVELS) - 1, -1, -1):
        lv = LEVELS[li]
        if lv not in layouts:
            continue
        lay = layouts[lv]
        here = lvl == li
        # merge what sits at this level (own partial sums and those of children)
        if val is None:
            merged_node, merged_key = _distinct_pairs(node[here], key[here])
            merged_val = None
        else:
            ids, first, n_ids = segment_ids(node[here], key[here])
            merged_node = node[here][first]
            merged_key = key[here][first]
            merged_val = reduce_segments(ids, val[here], n_ids)
        traffic.send[lv] = np.bincount(merged_node, minlength=lay.nodes)
        p_level, p_node = parents(layouts, lv, ranks)
        up_level = p_level[merged_node]
        up_node = p_node[merged_node]
        for pli in np.unique(up_level):
            if pli == HOST:
                continue
            plv = LEVELS[int(pli)]
            m = up_level == pli
            prev = traffic.recv.get(plv, np.zeros(layouts[plv].nodes, dtype=np.int64))
            traffic.recv[plv] = prev + np.bincount(up_node[m], minlength=layouts[plv].nodes)
        to_host = up_level == HOST
        if to_host.any():
            prev = (
                traffic.host_recv
                if traffic.host_recv is not None
                else np.zeros(channels, dtype=np.int64)
            )
            traffic.host_recv = prev + np.bincount(up_node[to_host], minlength=channels)
        keep = ~here
        lvl = np.concatenate([lvl[keep], up_level])
        node = np.concatenate([node[keep], up_node])
        key = np.concatenate([key[keep], merged_key])
        if val is not None:
            val = np.concatenate([val[keep], merged_val])
    if traffic.host_recv is None:
        traffic.host_recv = np.zeros(channels, dtype=np.int64)
    if val is None:
        return None, traffic
    return reduce_segments(key, val, num_keys), traffic


def _count_tree(
    layouts: dict[str, LevelLayout],
    ranks: int,
    channels: int,
    s_level: np.ndarray,
    s_node: np.ndarray,
    s_key: np.ndarray,
    num_keys: int,
) -> TreeTraffic | None:
    """:func:`tree_reduce` counting only, on a dense (global node, key) table: None when the
    table would be too large or an id is out of range (the sorting path handles those)."""
    nlev = len(LEVELS)
    base = np.zeros(nlev + 1, dtype=np.int64)
    nodes = np.zeros(nlev + 1, dtype=np.int64)
    nodes[nlev] = channels  # the host: one per channel
    total = 0
    for li, lv in enumerate(LEVELS):
        if lv in layouts:
            base[li], nodes[li] = total, layouts[lv].nodes
            total += layouts[lv].nodes
    base[nlev] = total
    if (total + channels) * max(num_keys, 1) > _DENSE_LIMIT or not s_level.size:
        return None
    p_level, p_node = _global_parents(layouts, ranks, base, nodes)
    s_level = np.ascontiguousarray(s_level, dtype=np.int64)
    s_node = np.ascontiguousarray(s_node, dtype=np.int64)
    s_key = np.ascontiguousarray(s_key, dtype=np.int64)
    in_tree = np.array([lv in layouts for lv in LEVELS] + [False])
    counts, reached, ok = _count_tree_kernel(
        s_level, s_node, s_key, num_keys, base, nodes, p_level, p_node, in_tree
    )
    if not ok:
        return None
    traffic = TreeTraffic()
    for li in range(nlev - 1, -1, -1):  # the order tree_reduce fills them in
        lv = LEVELS[li]
        if lv in layouts:
            traffic.send[lv] = counts[0, base[li] : base[li] + nodes[li]].copy()
    for li in range(nlev - 1, -1, -1):
        lv = LEVELS[li]
        if lv in layouts and reached[li]:
            traffic.recv[lv] = counts[1, base[li] : base[li] + nodes[li]].copy()
    traffic.host_recv = counts[1, total : total + channels].copy()
    return traffic


def _global_parents(layouts, ranks: int, base: np.ndarray, nodes: np.ndarray):
    """(parent level, parent node) of every node of the tree, by global id (level ``li``'s
    from ``base[li]``); kept per design (its layouts are fixed), not to be written."""
    return _PARENTS.get(layouts, lambda: _build_parents(layouts, ranks, base, nodes), ranks)


def _build_parents(layouts, ranks: int, base: np.ndarray, nodes: np.ndarray):
    total = int(base[len(LEVELS)])
    p_level = np.empty(total, dtype=np.int64)
    p_node = np.empty(total, dtype=np.int64)
    for li, lv in enumerate(LEVELS):
        if lv in layouts:
            pl, pn = parents(layouts, lv, ranks)
            p_level[base[li] : base[li] + nodes[li]] = pl
            p_node[base[li] : base[li] + nodes[li]] = pn
    return p_level, p_node


_PARENTS: IdentityCache[tuple] = IdentityCache(64)  # (layouts, ranks) -> (p_level, p_node)


@njit(cache=True)
def _count_tree_kernel(
    s_level, s_node, s_key, num_keys, base, nodes, p_level, p_node, in_tree
):  # pragma: no cover - compiled
    """Mark every (node, key) pair holding a partial sum, finest level first, each marking
    its parent's pair: a node sends one partial sum per marked pair; its parent receives it.
    Returns counts [sent, received] per global node (the host's after the tree's nodes),
    which levels received any, and False (nothing counted) if a level is not in the tree or a
    node or key is out of range."""
    nlev = in_tree.shape[0] - 1
    total = base[nlev]
    slots = total + nodes[nlev]
    seen = np.zeros((slots, num_keys), dtype=np.bool_)
    counts = np.zeros((2, slots), dtype=np.int64)
    reached = np.zeros(nlev + 1, dtype=np.bool_)
    for i in range(s_level.shape[0]):
        li, nd, k = s_level[i], s_node[i], s_key[i]
        if li < 0 or li >= nlev or not in_tree[li] or nd < 0 or nd >= nodes[li]:
            return counts, reached, False
        if k < 0 or k >= num_keys:
            return counts, reached, False
        seen[base[li] + nd, k] = True
    for li in range(nlev - 1, -1, -1):
        if not in_tree[li]:
            continue
        for g in range(base[li], base[li] + nodes[li]):
            pl = p_level[g]
            pg = base[pl] + p_node[g]
            for k in range(num_keys):
                if seen[g, k]:
                    counts[0, g] += 1
                    counts[1, pg] += 1
                    seen[pg, k] = True
                    reached[pl] = True
    return counts, reached, True


_DENSE_LIMIT = 1 << 24  # largest node x key grid marked in a dense table (16 MB of bools)


def _distinct_pairs(node: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (node, key) pairs in lexicographic order, as ``segment_ids`` orders them:
    marked in a dense node x key table when it is small (no sort), else by sorting."""
    if node.size == 0:
        return node[:0], key[:0]
    span = int(key.max()) + 1
    cells = (int(node.max()) + 1) * span
    if cells > _DENSE_LIMIT or min(int(node.min()), int(key.min())) < 0:
        _, first, _ = segment_ids(node, key)
        return node[first], key[first]
    seen = np.zeros(cells, dtype=bool)
    seen[node * span + key] = True
    pairs = np.flatnonzero(seen)
    return pairs // span, pairs % span


__all__ = ["HOST", "TreeTraffic", "parents", "tree_reduce"]
