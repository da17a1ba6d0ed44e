"""A plain-Python reference of the cache layers (dicts and min(), no linked lists), written from
the documented rules of nmp.cache.engine / nmp.cache.policy, for exact comparison."""

from __future__ import annotations

import itertools

from nmp.cache.policy import HIT_COUNT, HIT_GROUP_MAX, INSERT_GROUP_HITS, INSERT_ONE


class Layer:
    def __init__(self, cap: int, nb: int):
        self.cap, self.nb = cap, nb
        self.entries: dict[int, list[int]] = {}  # key -> [priority, stamp]

    def victim(self) -> int:
        return min(self.entries, key=lambda k: tuple(self.entries[k]))


def simulate_reference(keys, req_off, subst, caps, insert_rule, hit_rule, nb):
    clock = itertools.count()
    layers = [Layer(c, nb) for c in caps]

    def put(layer, key, prio):
        layer.entries[key] = [min(prio, nb - 1), next(clock)]

    def touch(layer, key, h):
        p = layer.entries[key][0]
        if hit_rule == HIT_COUNT:
            put(layer, key, p + 1)
        elif hit_rule == HIT_GROUP_MAX:
            if min(h, nb - 1) > p:
                put(layer, key, h)
        else:
            put(layer, key, p)

    def insert(layer, key, prio):
        out = None
        if len(layer.entries) >= layer.cap:
            v = layer.victim()
            out = (v, layer.entries.pop(v)[0])
        put(layer, key, prio)
        return out

    codes, used = [], []
    l1, l2, l3 = layers
    for r in range(len(req_off) - 1):
        ks = list(keys[req_off[r] : req_off[r + 1]])
        cs, us = [], []
        for k in ks:
            if k in l1.entries:
                c, u = 1, -1
            elif k in l2.entries:
                c, u = 2, -1
            elif k in l3.entries and subst[k] in l1.entries:
                c, u = 3, subst[k]
            elif k in l3.entries and subst[k] in l2.entries:
                c, u = 4, subst[k]
            else:
                c, u = 0, -1
            cs.append(c)
            us.append(u)
        h = sum(c > 0 for c in cs)
        start = h if insert_rule == INSERT_GROUP_HITS else (1 if insert_rule == INSERT_ONE else 0)
        for k, c in zip(ks, cs, strict=True):
            if k in l1.entries:
                touch(l1, k, h)
            elif k in l2.entries:
                touch(l2, k, h)
            elif c >= 3:
                if k in l3.entries:
                    touch(l3, k, h)
            else:
                if l1.cap > 0:
                    out = insert(l1, k, start)
                    if out is not None and l2.cap > 0:
                        insert(l2, out[0], out[1])
                if l3.cap > 0 and subst[k] >= 0:
                    if k in l3.entries:
                        touch(l3, k, h)
                    else:
                        insert(l3, k, start)
        codes += cs
        used += us
    return codes, used
