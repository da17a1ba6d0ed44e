"""Subarray-level parallelism in a bank unit (Kim et al., ISCA'12), the readings of
``arch.bank.salp``: SALP-1 hides one subarray's precharge behind the next one's activation;
SALP-2 keeps two subarrays activated at once; MASA keeps several subarrays' rows open. SALP-2
and MASA replay a bank's activated subarrays as the banks of a virtual bank group (the slots of
:func:`subarray_slots`); SALP-1 replays the bank itself with :func:`precharge_hidden`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nmp.arch.salp_readings import SALP_TRACKED_SUBARRAYS  # (the readings' own module)
from nmp.identity_cache import IdentityCache
from nmp.jit import njit

_HIDDEN: IdentityCache = IdentityCache(64)  # view -> the view with tRP hidden: specs are frozen


def precharge_hidden(view):
    """SALP-1 (Kim et al., ISCA'12): the precharge of one subarray overlaps the activation of
    the next, so consecutive rows of a bank (in different subarrays, as random rows almost
    always are among 256) are a row cycle of tRAS apart instead of tRAS + tRP. Modeled on the
    bank's own view with tRP taken off the critical path (one cycle)."""
    return _HIDDEN.get(view, lambda: _without_precharge(view))


def _without_precharge(view):
    t = dict(view.timing)
    t["nRP"] = 1
    t["nRC"] = t["nRAS"] + 1
    return dataclasses.replace(view, timing=t)


# A slot's key is (1 + the position of its last use) * SALP_TRACKED_SUBARRAYS + the slot (its
# id breaks the ties of never-used slots, whose last use is 0): the least recently used slot
# has the least key. Slots past a bank's ``salp`` are disabled: no row (rows are >= 0) and a
# key no slot in use reaches. Every slot is visited on every item (a loop of known length, no
# branch on which slot matches): the hits to a held row (40 % of a ReCross bank unit's lookups,
# most to the last row) made the early exits mispredict, 47 ns a lookup against 17 (issue 43).
_NO_ROW = -2
_NEVER = np.iinfo(np.int64).max


@njit(cache=True)
def take_slot(held, key, row, position):  # pragma: no cover - compiled
    """The activated-subarray slot of the next item of a node whose slots hold the rows
    ``held`` (-1: empty), used last as ``key`` tells (see above): a row already held keeps its
    slot (its row stays open), a new row takes the least recently used one (the first empty
    one while there is one). Updates ``held`` and ``key``; a node's first item starts from
    cleared slots (:func:`clear_slots`). One rule for :func:`subarray_slots` and the
    lowering's emission pass."""
    slots = SALP_TRACKED_SUBARRAYS
    hit = slots
    least = _NEVER
    for s in range(slots):
        hit = min(hit, s if held[s] == row else slots)
        least = min(least, key[s])
    pick = hit if hit < slots else least % slots
    held[pick] = row
    key[pick] = (position + 1) * slots + pick
    return pick


@njit(cache=True)
def clear_slots(held, key, salp):  # pragma: no cover - compiled
    """A node's ``salp`` slots before its first item: no row held, none used; the others of
    ``held`` and ``key`` (each SALP_TRACKED_SUBARRAYS long) disabled."""
    if salp > SALP_TRACKED_SUBARRAYS:
        raise ValueError("more activated subarrays than SALP_TRACKED_SUBARRAYS")
    for s in range(SALP_TRACKED_SUBARRAYS):
        held[s] = -1 if s < salp else _NO_ROW
        key[s] = s if s < salp else _NEVER


@njit(cache=True)
def subarray_slots(node, row, salp):  # pragma: no cover - compiled
    """Activated-subarray slot of each item (in stream order, grouped by node), by
    :func:`take_slot`. With 256 subarrays per bank, distinct rows almost never share a
    subarray, so each of the ``salp`` activations in flight is its own slot."""
    out = np.zeros(node.shape[0], dtype=np.int64)
    held = np.empty(SALP_TRACKED_SUBARRAYS, dtype=np.int64)
    key = np.empty(SALP_TRACKED_SUBARRAYS, dtype=np.int64)
    prev = -1
    for i in range(node.shape[0]):
        if node[i] != prev:
            clear_slots(held, key, salp)
            prev = node[i]
        out[i] = take_slot(held, key, row[i], i)
    return out


__all__ = [
    "SALP_TRACKED_SUBARRAYS",
    "clear_slots",
    "precharge_hidden",
    "subarray_slots",
    "take_slot",
]
