"""The h200 SM's resource limits, from the stated resources to the figures that rest on them.

Occupancy (nmp/gpu/kernel.py, the CUDA occupancy calculator): a warp of ``regs`` registers
per thread takes ``ceil(regs x 32 / reg_alloc_unit) x reg_alloc_unit`` registers; an SM holds
the fewest whole blocks its register file, warp slots and block slots allow:

    blocks = min(registers // regs_per_warp // warps_per_block,
                 max_warps // warps_per_block, max_blocks)

with h200's 65,536 registers, 64 warps (2,048 threads, cc 9.0), 32 blocks and 8-warp blocks.

The L1 (nmp/gpu/model.py: one LRU cache per SM, ``size_bytes / (ways x line_bytes)`` sets,
lines mapped by ``line % sets``): a warp that reads the same rows twice finds them all in the
second pass exactly when they fit in the L1's lines (every set at most ``ways`` lines), and none
when every set holds one line more than its ways (a cyclic LRU sweep).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nmp.gpu import load_gpu
from nmp.gpu.kernel import kernel_config
from nmp.gpu.model import embedding_stage
from nmp.workload import LookupBatch, TableLookups

REGISTERS = 65_536  # per SM [h200]
MAX_WARPS = 2048 // 32  # 2,048 threads per SM, cc 9.0
MAX_BLOCKS = 32  # cc 9.0
WARPS_PER_BLOCK = 32 * 8 // 32  # block (32, 8)


def blocks_per_sm(regs: int, *, registers=REGISTERS, max_warps=MAX_WARPS, unit=256) -> int:
    per_warp = math.ceil(regs * 32 / unit) * unit
    return min(registers // per_warp // WARPS_PER_BLOCK, max_warps // WARPS_PER_BLOCK, MAX_BLOCKS)


def test_the_h200_sm_states_its_cc_9_0_limits():
    sm = load_gpu("h200").sm
    assert (sm.registers, sm.max_warps, sm.max_blocks, sm.reg_alloc_unit) == (
        REGISTERS,
        MAX_WARPS,
        MAX_BLOCKS,
        256,
    )


@pytest.mark.parametrize(
    "variant,regs,blocks,limited_by",
    [
        # 40 registers: 1,280 per warp, 51 warps of registers: 6 blocks (ncu: 48 warps)
        ("baseline", 40, 6, "registers"),
        # --maxrregcount 32: 1,024 per warp, 64 warps of registers = the 64 warp slots
        ("occupancy", 32, 8, "registers"),
    ],
)
def test_occupancy_is_the_fewest_blocks_the_sms_limits_allow(variant, regs, blocks, limited_by):
    cfg = kernel_config(load_gpu("h200", {"variant": variant}))
    assert cfg.regs_per_thread == regs
    assert blocks_per_sm(regs) == blocks
    assert (cfg.blocks_per_sm, cfg.limited_by) == (blocks, limited_by)
    assert cfg.resident_warps_per_sm == blocks * WARPS_PER_BLOCK
    assert cfg.occupancy == pytest.approx(blocks * WARPS_PER_BLOCK / MAX_WARPS, rel=1e-12)


def test_each_limit_binds_when_it_is_the_smallest():
    """The overrides ``nmp run --set arch.sm.<key>=...`` applies: halving the warp slots or the
    register file halves the occupancy variant's blocks; the block slots bind below 8."""
    for over, blocks, limited_by in [
        ({"sm.max_warps": 32}, 4, "warps"),
        ({"sm.registers": 32_768}, 4, "registers"),
        ({"sm.max_blocks": 3}, 3, "blocks"),
    ]:
        cfg = kernel_config(load_gpu("h200", {"variant": "occupancy", **over}))
        assert (cfg.blocks_per_sm, cfg.limited_by) == (blocks, limited_by), over
        warps = over.get("sm.max_warps", MAX_WARPS)
        assert cfg.occupancy == pytest.approx(blocks * WARPS_PER_BLOCK / warps, rel=1e-12)
    regs = {"sm.registers": 32_768}
    assert blocks_per_sm(32, registers=32_768) == 4
    assert kernel_config(load_gpu("h200", regs)).blocks_per_sm == blocks_per_sm(
        40, registers=32_768
    )


# -- the L1 ---------------------------------------------------------------------------------

L1_BYTES = 256 * 1024 - 8 * 1024  # 256 KB L1/shared per SM less the 8 KB shared carve-out [wp]
LINE = 128
WAYS = 4
SETS = L1_BYTES // (WAYS * LINE)  # 496
ROW_SECTORS = LINE // 32  # a 128-B row (dim 32, fp32): one line, four sectors
# Each lookup also loads its index: a broadcast 32-B sector of four int64 indices, the first of
# which misses (index_stream.py), so 1 sector and 3/4 of a hit per lookup.
INDEX_HITS = 3 / 4


def twice_over(rows: int) -> float:
    """L1 sector hit rate of one warp reading rows 0..rows-1 twice (exact simulation)."""
    gpu = load_gpu("h200", {"sim.line_sample": 1})
    idx = np.concatenate([np.arange(rows), np.arange(rows)]).astype(np.int64)
    batch = LookupBatch((TableLookups(idx, np.array([0, idx.size]), None, 1 << 20, 32),))
    return embedding_stage(gpu, batch).breakdown["l1_hit_rate"]


def test_the_h200_l1_is_the_combined_array_less_the_shared_carve_out():
    l1 = load_gpu("h200").l1
    assert (l1.size_bytes, l1.ways, l1.line_bytes) == (L1_BYTES, WAYS, LINE)
    assert l1.sets == SETS == 496


def test_rows_that_fit_the_l1_hit_on_their_second_pass_and_one_more_per_set_never_do():
    # Per lookup: 4 row sectors + 1 index sector; the second pass's rows hit when they fit.
    fit = (ROW_SECTORS / 2 + INDEX_HITS) / (ROW_SECTORS + 1)  # 0.55
    thrash = INDEX_HITS / (ROW_SECTORS + 1)  # 0.15
    assert twice_over(WAYS * SETS) == pytest.approx(fit, rel=1e-3)  # 1,984 lines: full
    assert twice_over((WAYS + 1) * SETS) == pytest.approx(thrash, rel=1e-3)  # 2,480: none
