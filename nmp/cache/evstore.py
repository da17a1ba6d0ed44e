"""EVStore's whole design: groupScore in every layer and all three layers on
(Kurniawan et al., ASPLOS'23): L1 full precision (EVCache), L2 lower precision (EVMix), L3
substitute keys (EVProx).

When the user sizes only L1, L2 gets as many bytes as L1 and L3 a quarter of them. Chosen: the
paper splits its memory budget between the layers per experiment and the sources give no single
rule; equal L1/L2 bytes let L2 hold 2x (fp16) to 4x (int4, with its 8-byte scale) as many
dim-16 rows, and a quarter of L1's bytes in 16-byte key-to-key entries give L3 as many entries
as L1 has dim-16 fp32 rows. Swept at a fixed total by ``nmp evaluate papers/evstore-split``
(docs/studies.md): L2's share sets EVStore's lead over LRU at the same bytes (users' requests:
LRU's average latency is 10.1 % above EVStore's, 6.8 % at half the L2 bytes, 13.0 % at twice,
0.5 % below it without L2), and L3's quarter costs more rows than its substitutes serve.
"""

from nmp.cache.policy import HIT_GROUP_MAX, INSERT_GROUP_HITS, Policy, register

EVSTORE = register(
    Policy(
        name="evstore",
        description="groupScore with L1 fp32 + L2 low precision + L3 substitute keys",
        insert_rule=INSERT_GROUP_HITS,
        hit_rule=HIT_GROUP_MAX,
        l2_per_l1=1.0,
        l3_per_l1=0.25,
    )
)
