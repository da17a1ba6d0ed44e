"""LFU: evict the entry with the fewest hits since it entered the cache; among equals the one
whose count changed longest ago (counts are not kept for evicted keys, the classic in-cache
LFU)."""

from nmp.cache.policy import HIT_COUNT, INSERT_ONE, Policy, register

LFU = register(
    Policy(
        name="lfu",
        description="least frequently used (in-cache counts, LRU among equal counts)",
        insert_rule=INSERT_ONE,
        hit_rule=HIT_COUNT,
    )
)
