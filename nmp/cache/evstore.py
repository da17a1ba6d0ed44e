"""EVStore's whole design: groupScore in every layer and all three layers on
(Kurniawan et al., ASPLOS'23): L1 full precision (EVCache), L2 lower precision (EVMix), L3
substitute keys (EVProx).

When the user sizes only L1, L2 gets as many bytes as L1 and L3 a quarter of them. Chosen: the
paper splits its memory budget between the layers per experiment and the sources give no single
rule; equal L1/L2 bytes let L2 hold 2x (fp16) to 4x (int4, with its 8-byte scale) as many
dim-16 rows, and a quarter of L1's bytes in 16-byte key-to-key entries give L3 as many entries
as L1 has dim-16 fp32 rows.
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
