"""The constraint tables generated from each standard's rules and a preset's timing parameters
equal the tables Ramulator 2.1 enforces, as README §3 of the reference data lists them."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from memref import dram_ref_dir

from nmp.memory import constraint_rows, internal_view, load_memory

SECTIONS = {"ddr4-3200aa": "DDR4-3200", "ddr5-4800an": "DDR5-4800", "hbm2-2000": "HBM2 2 Gbps"}
LEVELS = {"Channel": "channel", "Rank": "rank", "PseudoChannel": "rank", "BankGroup": "bankgroup",
          "Bank": "bank"}  # fmt: skip


def readme_rows(title: str) -> Counter:
    text = (dram_ref_dir() / "README.md").read_text()
    start = text.index(f"#### {title}")
    nxt = text.find("####", start + 5)
    end = min(x for x in (nxt, text.index("Notes on the names", start)) if x > 0)
    rows: Counter = Counter()
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] not in LEVELS:
            continue
        level, pre, fol, dist, note = cells
        window = int(m.group(1)) if (m := re.search(r"window=(\d+)", note)) else 1
        sibling = "sibling" in note
        for p in pre.split(", "):
            for f in fol.split(", "):
                rows[(LEVELS[level], p, f, int(dist), window, sibling)] += 1
    assert rows, f"no table found under {title}"
    return rows


@pytest.mark.parametrize("preset", sorted(SECTIONS))
def test_generated_table_equals_readme(preset, dram_ref):
    spec = load_memory(preset)
    mine = Counter(constraint_rows(spec.standard, spec.timing))
    ref = readme_rows(SECTIONS[preset])
    assert mine == ref, {"missing": ref - mine, "extra": mine - ref}


def test_timing_change_moves_only_its_rules():
    base = load_memory("ddr4-3200aa")
    slower = load_memory("ddr4-3200aa", overrides={"timing.nRCD": 30})
    diff = Counter(constraint_rows("DDR4", slower.timing)) - Counter(
        constraint_rows("DDR4", base.timing)
    )
    assert {(r[0], r[1], r[2], r[3]) for r in diff} == {
        ("bank", "ACT", f, 30) for f in ("RD", "WR", "RDA", "WRA")
    }


def test_internal_views_drop_shared_bus_rules():
    spec = load_memory("ddr4-3200aa", ranks=2)
    full = constraint_rows(spec.standard, spec.timing, "channel")
    rank = constraint_rows(spec.standard, spec.timing, internal_view(spec, "rank").bus_level)
    bg = constraint_rows(spec.standard, spec.timing, "bankgroup")
    bank = constraint_rows(spec.standard, spec.timing, "bank")
    assert any(r[0] == "channel" and r[1] == "RD" and r[2] == "RD" for r in full)
    assert not any(r[0] == "channel" and r[1] == "RD" and r[2] == "RD" for r in rank)
    assert not any(r[5] for r in rank)  # no rank-switch rules
    assert any(r[0] == "rank" and r[1] == "RD" and r[2] == "RD" for r in rank)
    assert not any(r[0] == "rank" and r[1] == "RD" and r[2] == "RD" for r in bg)
    assert ("bank", "RD", "RD", 8, 1, False) in bank  # tCCD_L now per bank
    assert ("rank", "ACT", "ACT", 34, 4, False) in bank  # tFAW stays per rank


@pytest.mark.parametrize(
    ("preset", "short", "peak_gbps"),
    [
        # one 64-bit bus per channel: 3200 MT/s x 8 B
        ("ddr4-3200aa", "rank", 25.6),
        # one 64-bit bus per pseudo channel, 8 channels x 2: 16 x 2000 MT/s x 8 B
        ("hbm2-2000", "PC", 256.0),
    ],
)
def test_the_standard_says_where_the_data_buses_are(preset, short, peak_gbps) -> None:
    """The peak bandwidth and the rank level's short name come from the standard's file (they
    were the prefix "HBM" of its name)."""
    from nmp.memory.standards import load_standard

    spec = load_memory(preset)
    std = load_standard(spec.standard)
    assert std.rank_level_short == short
    assert std.data_bus_per_rank == (short == "PC")
    assert spec.peak_bandwidth_gbps == pytest.approx(peak_gbps)
