"""Hot-row replication (TRiM): the profile's hottest rows are copied to every node of the finest
data level, and each lookup of a replicated row goes to a lightly loaded node. TRiM does not say
how a lookup picks its replica, so the choice is a switch (``arch.replica_choice``):

* ``"bag-blocks"``: per-node counts that even out the loads (water filling over the nodes' cold
  lookups), handed out in contiguous blocks of the batch's table-major order: the hot lookups
  of one bag of one table share a node, so a bag sends few partial sums up (a host that
  balances load and keeps bags together);
* ``"least-loaded"``: the lookups of replicated rows, in issue order, each to the node with the
  least load so far (its cold lookups counted in); consecutive hot lookups of a bag land on
  different nodes, so a bag's partial sums come from many nodes.
"""

from __future__ import annotations

import numpy as np

from nmp.arch.layout import node_capacity_slots
from nmp.arch.spec import LEVELS, REPLICA_CHOICES
from nmp.jit import njit


def water_fill(loads: np.ndarray, extra: int) -> np.ndarray:
    """Counts to add to ``loads`` so that ``extra`` items raise the minimum loads evenly."""
    if extra <= 0:
        return np.zeros_like(loads)
    srt = np.sort(loads)
    cum = np.cumsum(srt)
    k = np.arange(1, loads.size + 1)
    # level L with sum(max(0, L - loads)) = extra, found on the sorted prefix
    levels = (extra + cum) / k
    valid = np.append(levels[:-1] <= srt[1:], True)
    j = int(np.argmax(valid))
    level = levels[j]
    add = np.maximum(0.0, level - loads)
    out = np.floor(add).astype(np.int64)
    short = extra - int(out.sum())
    if short > 0:
        frac_order = np.argsort(-(add - out), kind="stable")[:short]
        out[frac_order] += 1
    return out


@njit(cache=True)
def _greedy_nodes(loads, count):  # pragma: no cover - compiled
    """Node of each of ``count`` items placed one by one on the least-loaded node."""
    out = np.empty(count, dtype=np.int64)
    for i in range(count):
        best = 0
        for k in range(1, loads.shape[0]):
            if loads[k] < loads[best]:
                best = k
        out[i] = best
        loads[best] += 1.0
    return out


def replicate_hot(spec, layouts, mem, flat, profile, level, node, slot, info, order=None):
    """Move the lookups of the ``spec.replicate_hot_rows`` hottest rows (in place in ``level``,
    ``node``, ``slot``) to their replicas; returns which lookups were moved."""
    repl = np.zeros(flat.n, dtype=bool)
    finest = spec.data_levels[-1]
    lay = layouts[finest]
    tabs, rows = profile.hottest(spec.replicate_hot_rows)
    hot_keys = np.unique(profile.first_rows[tabs] + rows)  # sorted global row ids
    if not hot_keys.size:
        return repl
    pos = np.minimum(np.searchsorted(hot_keys, flat.grow), hot_keys.size - 1)
    repl = hot_keys[pos] == flat.grow
    li = LEVELS.index(finest)
    cold = (level == li) & ~repl
    loads = np.bincount(node[cold], minlength=lay.nodes).astype(np.float64)
    idx = np.flatnonzero(repl)
    greedy = REPLICA_CHOICES.get(spec.replica_choice).greedy_in_issue_order
    if greedy and order is not None:
        idx = order[repl[order]]  # in issue order
        node[idx] = _greedy_nodes(loads.copy(), idx.size)
    else:
        node[idx] = np.repeat(np.arange(lay.nodes), water_fill(loads, int(idx.size)))
    level[idx] = li
    # replicas live at the top of every node's slots
    slot[idx] = node_capacity_slots(lay, mem, int(flat.row_bytes.max())) - 1 - pos[idx]
    info["replicated_lookups"] = int(idx.size)
    info["replicated_rows"] = int(hot_keys.size)
    return repl


__all__ = ["replicate_hot", "water_fill"]
