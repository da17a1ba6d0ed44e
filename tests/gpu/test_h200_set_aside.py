"""The H200's L2 set-aside for pinning, by the model's stated rule (nmp/gpu/model.py): the
set-aside is ``floor(set_aside_fraction x ways)`` ways of every set (``cudaLimitPersistingL2
CacheSize``, the same share of every set), and lines the pre-kernel prefetches with
``evict_last`` persist up to that many a set; a set-aside of no ways persists nothing.

models/gpu/h200.toml: 60 MiB L2 (62,914,560 B), 16 ways of 128-B lines (30,720 sets), one pool
("home"), set_aside_fraction 0.625 (cudaDevAttrMaxPersistingL2CacheSize 39,321,600 B).
"""

from __future__ import annotations

import functools
import math

import pytest

from nmp.gpu import load_gpu, run_design_point

L2_BYTES = 62_914_560
WAYS = 16
LINE = 128
SETS = L2_BYTES // (WAYS * LINE)  # 30,720
MAX_PERSISTING_BYTES = 39_321_600  # cudaDevAttrMaxPersistingL2CacheSize on the H200
ROW_BYTES = 128 * 4  # gpu-micro24: dim 128, float32
# One table of 1M rows, batch 2048 x pooling 150, uniform: ~265K distinct rows (~1.06M lines),
# over three times what the set-aside holds, ~34 lines a set: every set fills its share.
OVERFULL = {"num_tables": 1, "rows": 1_000_000, "batch": 2048, "reuse": "random"}
PIN_ALL = 400_000  # pinning.rows: more than the kernel touches


@functools.cache
def _point(variant: str, fraction: float | None = None, rows: int = PIN_ALL):
    arch = {"variant": variant, "pinning.rows": rows}
    if fraction is not None:
        arch["pinning.set_aside_fraction"] = fraction
    return run_design_point("h200", "gpu-micro24", overrides={"arch": arch, "workload": OVERFULL})


def test_the_preset_is_what_the_figures_assume():
    g = load_gpu("h200")
    assert (g.l2.size_bytes, g.l2.ways, g.l2.line_bytes, g.l2.sets) == (L2_BYTES, WAYS, LINE, SETS)
    assert g.l2.caches == 1


def test_the_set_aside_is_floor_fraction_ways_of_every_set():
    g = load_gpu("h200")
    carve = math.floor(g.pinning.set_aside_fraction * WAYS)
    assert carve == 10
    pin = _point("pinning").breakdown["pinning"]
    assert pin["set_aside_ways"] == carve
    assert pin["set_aside_bytes"] == carve * SETS * LINE == MAX_PERSISTING_BYTES


def test_the_pinned_rows_kept_are_what_the_set_aside_holds():
    pin = _point("pinning").breakdown["pinning"]
    # the pre-kernel prefetches every row the kernel touches, far more lines than fit...
    assert pin["lines"] == pin["rows"] * (ROW_BYTES // LINE)
    assert pin["lines"] > 3 * 10 * SETS
    # ...and exactly the set-aside's lines persist: 10 ways x 30,720 sets, 76,800 rows of 512 B
    assert pin["lines_persisting"] == 10 * SETS
    assert pin["lines_persisting"] * LINE // ROW_BYTES == MAX_PERSISTING_BYTES // ROW_BYTES
    # the prefetch fetches every line whether or not it persists (line sampling: an estimate)
    assert pin["bytes"] == pytest.approx(pin["lines"] * LINE, rel=0.01)


@pytest.mark.parametrize(("fraction", "ways"), [(0.0625, 1), (0.25, 4), (0.65, 10)])
def test_the_lines_kept_follow_the_set_asides_ways(fraction, ways):
    pin = _point("pinning", fraction).breakdown["pinning"]
    assert pin["set_aside_ways"] == ways
    assert pin["lines_persisting"] == ways * SETS


def test_no_set_aside_pins_nothing():
    none = _point("pinning", 0.0)
    pin = none.breakdown["pinning"]
    assert pin["set_aside_ways"] == 0 and pin["set_aside_bytes"] == 0
    assert pin["lines_persisting"] == 0
    # below one way (0.06 x 16 = 0.96) the floor leaves no set-aside: the same L2 as none
    tiny = _point("pinning", 0.06)
    assert tiny.breakdown["pinning"]["lines_persisting"] == 0
    assert tiny.breakdown["l2_hit_rate"] == none.breakdown["l2_hit_rate"]
    assert tiny.latency_ns == none.latency_ns
    # the baseline kernel (no pre-kernel, nothing persisting): nothing pinned either
    base = _point("baseline").breakdown["pinning"]
    assert base["set_aside_bytes"] == 0 and base["lines_persisting"] == 0


def test_a_pinned_variant_without_rows_is_the_baseline():
    # pinning with nothing to pin: the L2 behaves as the baseline's (same hits, same time)
    empty = _point("pinning", rows=0)
    base = _point("baseline")
    assert empty.breakdown["pinning"]["lines_persisting"] == 0
    assert empty.breakdown["l2_hit_rate"] == base.breakdown["l2_hit_rate"]
    assert empty.latency_ns == pytest.approx(base.latency_ns, rel=1e-12)
