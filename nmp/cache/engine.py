"""The cache simulator: layers L1 -> L2 -> L3 on a stream of inference requests (numba).

Layers (capacities in entries; :mod:`nmp.cache.serve` converts bytes to entries):

* **L1** holds full-precision rows. A missed key is read from the backend and inserted here.
* **L2** holds low-precision rows (:mod:`nmp.cache.quant`): L1's victims are demoted into it
  (exclusive layers: a key is in L1 or L2, never both). A hit in L2 stays in L2: going back to
  full precision would need the backend.
* **L3** holds key -> substitute-key entries (:mod:`nmp.cache.neighbors`). It serves a key that
  missed L1 and L2 with the vector of its substitute *if that substitute is in L1 or L2 now*.
  A missed key that has a substitute within the distance bound gets an L3 entry.

A request is processed in two passes, as EVStore does: first every lookup is classified against
the state before the request (so the request's hit count ``h`` is known), then the state is
updated (hits touched with ``h``, misses inserted). Output per lookup: 0 miss, 1 L1 hit, 2 L2 hit,
3 L3 hit whose substitute was in L1, 4 L3 hit whose substitute was in L2.

Each layer is a set of priority buckets (:mod:`nmp.cache.policy`): doubly linked lists of slots,
oldest at the head; the victim is the head of the lowest non-empty bucket. Every operation is
O(1) except the search for the lowest non-empty bucket, which only moves upwards between inserts.
"""

from __future__ import annotations

import numpy as np

from nmp.cache.policy import (
    HIT_COUNT,
    HIT_GROUP_MAX,
    INSERT_GROUP_HITS,
    INSERT_ONE,
)
from nmp.jit import njit

MISS, L1_HIT, L2_HIT, L3_VIA_L1, L3_VIA_L2 = 0, 1, 2, 3, 4


@njit(cache=True, inline="always")
def _unlink(lay, s, prev, nxt, prio, head, tail):
    p = prio[lay, s]
    a = prev[lay, s]
    b = nxt[lay, s]
    if a >= 0:
        nxt[lay, a] = b
    else:
        head[lay, p] = b
    if b >= 0:
        prev[lay, b] = a
    else:
        tail[lay, p] = a


@njit(cache=True, inline="always")
def _append(lay, s, p, prev, nxt, prio, head, tail, minb):
    prio[lay, s] = p
    t = tail[lay, p]
    prev[lay, s] = t
    nxt[lay, s] = -1
    if t >= 0:
        nxt[lay, t] = s
    else:
        head[lay, p] = s
    tail[lay, p] = s
    if p < minb[lay]:
        minb[lay] = p


@njit(cache=True, inline="always")
def _touch(lay, s, h, hit_rule, nb, prev, nxt, prio, head, tail, minb):
    p = prio[lay, s]
    if hit_rule == HIT_COUNT:
        q = min(p + 1, nb - 1)
    elif hit_rule == HIT_GROUP_MAX:
        q = min(h, nb - 1)
        if q <= p:
            return
    else:
        q = p
    _unlink(lay, s, prev, nxt, prio, head, tail)
    _append(lay, s, q, prev, nxt, prio, head, tail, minb)


@njit(cache=True, inline="always")
def _insert(lay, key, p, cap, count, pos, skey, prev, nxt, prio, head, tail, minb, nb):
    """Insert ``key`` with priority ``p`` into layer ``lay``; returns (victim key, its priority)
    or (-1, 0) when there was room."""
    victim = -1
    vprio = 0
    if count[lay] < cap:
        s = count[lay]
        count[lay] += 1
    else:
        b = minb[lay]
        while head[lay, b] < 0:
            b += 1
        minb[lay] = b
        s = head[lay, b]
        victim = skey[lay, s]
        vprio = prio[lay, s]
        _unlink(lay, s, prev, nxt, prio, head, tail)
        pos[victim, lay] = -1
    skey[lay, s] = key
    pos[key, lay] = s
    _append(lay, s, min(p, nb - 1), prev, nxt, prio, head, tail, minb)
    return victim, vprio


@njit(cache=True)
def simulate_kernel(keys, req_off, subst, n_keys, caps, insert_rule, hit_rule, nb):
    """Run the layers over ``keys`` (compact ids < n_keys) grouped into requests by ``req_off``.

    ``subst[k]`` is k's substitute key or -1; ``caps`` the entries of L1, L2, L3; ``nb`` the
    number of priority buckets. Returns (code per lookup int8, substitute used per lookup,
    entries held per layer at the end).
    """
    n = keys.shape[0]
    codes = np.zeros(n, dtype=np.int8)
    used = np.full(n, -1, dtype=np.int64)
    cmax = max(1, caps[0], caps[1], caps[2])
    pos = np.full((n_keys, 3), -1, dtype=np.int64)  # key-major: one cache line per key
    skey = np.zeros((3, cmax), dtype=np.int64)
    prev = np.zeros((3, cmax), dtype=np.int64)
    nxt = np.zeros((3, cmax), dtype=np.int64)
    prio = np.zeros((3, cmax), dtype=np.int64)
    head = np.full((3, nb), -1, dtype=np.int64)
    tail = np.full((3, nb), -1, dtype=np.int64)
    minb = np.full(3, nb - 1, dtype=np.int64)
    count = np.zeros(3, dtype=np.int64)
    for r in range(req_off.shape[0] - 1):
        lo = req_off[r]
        hi = req_off[r + 1]
        h = 0
        for i in range(lo, hi):  # pass 1: classify against the state before the request
            k = keys[i]
            if pos[k, 0] >= 0:
                codes[i] = L1_HIT
            elif pos[k, 1] >= 0:
                codes[i] = L2_HIT
            elif pos[k, 2] >= 0:
                s = subst[k]
                if pos[s, 0] >= 0:
                    codes[i] = L3_VIA_L1
                    used[i] = s
                elif pos[s, 1] >= 0:
                    codes[i] = L3_VIA_L2
                    used[i] = s
            if codes[i] != MISS:
                h += 1
        for i in range(lo, hi):  # pass 2: update
            k = keys[i]
            if pos[k, 0] >= 0:
                _touch(0, pos[k, 0], h, hit_rule, nb, prev, nxt, prio, head, tail, minb)
            elif pos[k, 1] >= 0:
                _touch(1, pos[k, 1], h, hit_rule, nb, prev, nxt, prio, head, tail, minb)
            elif codes[i] >= L3_VIA_L1:  # served by a substitute: no backend read
                if pos[k, 2] >= 0:  # (an earlier miss of this request may have evicted it)
                    _touch(2, pos[k, 2], h, hit_rule, nb, prev, nxt, prio, head, tail, minb)
            else:  # a miss: read from the backend into L1
                if insert_rule == INSERT_GROUP_HITS:
                    p = h
                elif insert_rule == INSERT_ONE:
                    p = 1
                else:
                    p = 0
                if caps[0] > 0:
                    v, vp = _insert(
                        0, k, p, caps[0], count, pos, skey, prev, nxt, prio, head, tail, minb, nb
                    )
                    if v >= 0 and caps[1] > 0:  # L1's victim is demoted into L2
                        _insert(
                            1,
                            v,
                            vp,
                            caps[1],
                            count,
                            pos,
                            skey,
                            prev,
                            nxt,
                            prio,
                            head,
                            tail,
                            minb,
                            nb,
                        )
                if caps[2] > 0 and subst[k] >= 0:
                    if pos[k, 2] >= 0:
                        _touch(2, pos[k, 2], h, hit_rule, nb, prev, nxt, prio, head, tail, minb)
                    else:
                        _insert(
                            2,
                            k,
                            p,
                            caps[2],
                            count,
                            pos,
                            skey,
                            prev,
                            nxt,
                            prio,
                            head,
                            tail,
                            minb,
                            nb,
                        )
    return codes, used, count


def simulate(
    keys: np.ndarray,
    req_off: np.ndarray,
    subst: np.ndarray,
    caps: tuple[int, int, int],
    insert_rule: int,
    hit_rule: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked wrapper of :func:`simulate_kernel`; keys must be compact ids (0..n_keys-1)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    req_off = np.ascontiguousarray(req_off, dtype=np.int64)
    n_keys = int(subst.shape[0])
    if keys.size and (keys.min() < 0 or keys.max() >= n_keys):
        raise ValueError("keys must be compact ids below len(subst)")
    longest = int(np.diff(req_off).max()) if req_off.size > 1 else 0
    # Buckets: group scores reach the longest request; LFU counts are capped at 4096 (counts
    # above it tie, which only matters for keys hit thousands of times: never victims anyway).
    nb = (
        max(2, longest + 2) if hit_rule == HIT_GROUP_MAX else (4098 if hit_rule == HIT_COUNT else 2)
    )
    return simulate_kernel(
        keys,
        req_off,
        np.ascontiguousarray(subst, dtype=np.int64),
        n_keys,
        # a layer never holds more entries than there are keys: the same results, and memory
        # for the keys, not for a capacity that may be terabytes
        np.asarray([min(int(c), n_keys) for c in caps], dtype=np.int64),
        int(insert_rule),
        int(hit_rule),
        nb,
    )
