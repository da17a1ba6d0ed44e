"""LRU: evict the entry used least recently (one priority bucket, a hit moves to its tail)."""

from nmp.cache.policy import HIT_MOVE_TO_TAIL, INSERT_ZERO, Policy, register

LRU = register(
    Policy(
        name="lru",
        description="least recently used",
        insert_rule=INSERT_ZERO,
        hit_rule=HIT_MOVE_TO_TAIL,
    )
)
