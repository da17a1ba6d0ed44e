"""Replacement policies behind one interface, and their registry.

Every layer of the cache (:mod:`nmp.cache.engine`) keeps its entries in priority buckets: a
doubly linked list per priority value, oldest entry at the head. The victim is the head of the
lowest non-empty bucket. A policy is fully described by two rules, which the engine applies
without knowing the policy's name:

* ``insert_rule``: the priority a new entry starts with;
* ``hit_rule``: how a hit changes an entry's priority (and whether it moves to its bucket's tail).

With one bucket this is LRU; with the hit count as priority it is LFU (ties broken by recency
of the last count change); with EVStore's group score it is groupScore. Each policy module calls
:func:`register` once; the CLI's choices, the docs and the tests derive from :func:`names`
(:data:`CACHE_POLICIES`).
"""

from __future__ import annotations

from dataclasses import dataclass

from nmp.registry import Registry

# Priority rules understood by the engine (numba sees the integers).
INSERT_ZERO = 0  # every entry has priority 0 (one bucket)
INSERT_ONE = 1  # a new entry has been used once
INSERT_GROUP_HITS = 2  # a new entry starts at the number of hits of its request (EVStore)

HIT_MOVE_TO_TAIL = 0  # priority unchanged, entry becomes the most recent of its bucket (LRU)
HIT_COUNT = 1  # priority += 1 (LFU)
HIT_GROUP_MAX = 2  # priority = max(priority, hits of the request); moves only if it rises


@dataclass(frozen=True)
class Policy:
    """A replacement policy: its rules, and the layers it enables by default."""

    name: str
    description: str
    insert_rule: int
    hit_rule: int
    # Layer defaults for a policy that is a whole cache design (EVStore): L2 and L3 capacity as a
    # multiple of L1's when the user gives none. 0: the layer is off unless sized explicitly.
    l2_per_l1: float = 0.0
    l3_per_l1: float = 0.0


#: The cache policies by name; each module registers its policy when imported.
CACHE_POLICIES: Registry[Policy] = Registry(
    "cache policy", package="nmp.cache", marker=r"^\w+ = register\("
)
register = CACHE_POLICIES.register
names = CACHE_POLICIES.names
get = CACHE_POLICIES.get
