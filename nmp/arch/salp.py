"""Subarray-level parallelism in a bank unit (Kim et al., ISCA'12), the readings of
``arch.bank.salp``: SALP-1 hides one subarray's precharge behind the next one's activation;
SALP-2 keeps two subarrays activated at once; MASA keeps several subarrays' rows open. SALP-2
and MASA replay a bank's activated subarrays as the banks of a virtual bank group (the slots of
:func:`subarray_slots`); SALP-1 replays the bank itself with :func:`precharge_hidden`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

SALP_TRACKED_SUBARRAYS = 8  # open subarrays tracked per bank (beyond this tCCD_L binds anyway)


_HIDDEN: dict[tuple, tuple] = {}  # id(view) -> (view, view with tRP hidden): specs are frozen


def precharge_hidden(view):
    """SALP-1 (Kim et al., ISCA'12): the precharge of one subarray overlaps the activation of
    the next, so consecutive rows of a bank (in different subarrays, as random rows almost
    always are among 256) are a row cycle of tRAS apart instead of tRAS + tRP. Modeled on the
    bank's own view with tRP taken off the critical path (one cycle)."""
    key = ("salp1", id(view))
    hit = _HIDDEN.get(key)
    if hit is not None and hit[0] is view:
        return hit[1]
    t = dict(view.timing)
    t["nRP"] = 1
    t["nRC"] = t["nRAS"] + 1
    out = dataclasses.replace(view, timing=t)
    _HIDDEN[key] = (view, out)
    return out


@njit(cache=True)
def take_slot(held, used, row, position):  # pragma: no cover - compiled
    """The activated-subarray slot of the next item of a node whose ``salp`` slots hold the rows
    ``held`` (-1: empty) last used at ``used`` (1 + position; 0: never): a row already held
    keeps its slot (its row stays open), a new row takes the least recently used one. Updates
    ``held`` and ``used``; a node's first item starts from cleared slots (:func:`clear_slots`).
    One rule for :func:`subarray_slots` and the lowering's emission pass."""
    pick = -1
    for s in range(held.shape[0]):
        if held[s] == row:
            pick = s
    if pick < 0:
        pick = 0
        for s in range(1, held.shape[0]):
            if used[s] < used[pick]:
                pick = s
        held[pick] = row
    used[pick] = position + 1
    return pick


@njit(cache=True)
def clear_slots(held, used):  # pragma: no cover - compiled
    """A node's slots before its first item: no row held, none used."""
    held[:] = -1
    used[:] = 0


@njit(cache=True)
def subarray_slots(node, row, salp):  # pragma: no cover - compiled
    """Activated-subarray slot of each item (in stream order, grouped by node), by
    :func:`take_slot`. With 256 subarrays per bank, distinct rows almost never share a
    subarray, so each of the ``salp`` activations in flight is its own slot."""
    out = np.zeros(node.shape[0], dtype=np.int64)
    held = np.full(salp, -1, dtype=np.int64)
    used = np.zeros(salp, dtype=np.int64)
    prev = -1
    for i in range(node.shape[0]):
        if node[i] != prev:
            clear_slots(held, used)
            prev = node[i]
        out[i] = take_slot(held, used, row[i], i)
    return out


__all__ = [
    "SALP_TRACKED_SUBARRAYS",
    "clear_slots",
    "precharge_hidden",
    "subarray_slots",
    "take_slot",
]
