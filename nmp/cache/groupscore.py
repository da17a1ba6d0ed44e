"""EVStore's groupScore (Kurniawan et al., ASPLOS'23, "EVCache"; PAPERS.md).

An inference request looks up one group of keys (one per table for Criteo). A request is fast
only if *every* key hits, so a key's worth is how close its group came to a perfect hit: the
request first counts its hits h (over all layers), then every key it touched gets score
``max(old score, h)`` (a missed key enters with score h). The victim is the key of the lowest
score, oldest first among equals. Keys that keep appearing in nearly-perfect groups stay; a key
of a group that mostly misses goes first. (The public EVStore code also flushes part of the
perfect-score keys when they fill 95 % of the cache; that refinement is not modeled.)
"""

from nmp.cache.policy import HIT_GROUP_MAX, INSERT_GROUP_HITS, Policy, register

GROUPSCORE = register(
    Policy(
        name="groupscore",
        description="EVStore's group score: max(old, hits of the request), lowest evicted",
        insert_rule=INSERT_GROUP_HITS,
        hit_rule=HIT_GROUP_MAX,
    )
)
