"""A near-memory unit reads a lookup's lines under one activation (``arch.units_hold_rows``).

Ramulator 2's FR-FCFS, which the host's controller follows, protects only the active buffer's
rows: a younger lookup's PRE, ready while the open row's queued hits wait for the column path,
closes the row, and the hits open it again. A unit's lookup instruction names the lines it
reads (TRiM's nRD, RecNMP's vector size), so its controller holds the row for them
(``controller.hold_hit_rows``, set by :func:`nmp.arch.lowering.unit_view`).
"""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import run_design_point
from nmp.arch.lowering import unit_view
from nmp.arch.replay import replay_stream
from nmp.memory import encode_address, load_memory

MEM = load_memory("ddr5-4800-40", channels=1, ranks=2)
LOOKUPS = 4000
LINES = 4  # a 256-byte row of 64-byte lines


def _acts_per_lookup(level: str, banks: int, bankgroups: int, hold: bool) -> float:
    """Random rows of 4 lines each, lookup after lookup, on one unit's view."""
    rng = np.random.default_rng(3)
    view = unit_view(MEM, level, 32, hold_rows=hold)
    bank, bg = rng.integers(0, banks, LOOKUPS), rng.integers(0, bankgroups, LOOKUPS)
    row, col0 = rng.integers(0, 65536, LOOKUPS), rng.integers(0, 64 // LINES, LOOKUPS) * LINES
    item, within = np.repeat(np.arange(LOOKUPS), LINES), np.tile(np.arange(LINES), LOOKUPS)
    addr = encode_address(
        view, bankgroup=bg[item], bank=bank[item], row=row[item], column=col0[item] + within
    )
    return replay_stream(addr, view).cmd_counts["ACT"] / LOOKUPS


@pytest.mark.parametrize(("level", "banks", "bankgroups"), [("bankgroup", 4, 1), ("rank", 4, 8)])
def test_a_unit_opens_one_row_per_lookup(level, banks, bankgroups) -> None:
    """A bank-group unit (TRiM-G's: 4 banks) and a rank unit (RecNMP's: 32 banks) open each
    lookup's row once (1.01-1.03: refresh closes rows that still have lines to read). Without
    holding rows the same streams open 1.4-1.5 rows per lookup."""
    held = _acts_per_lookup(level, banks, bankgroups, hold=True)
    unheld = _acts_per_lookup(level, banks, bankgroups, hold=False)
    assert held < 1.04
    assert unheld > 1.3


def test_trim_g_reads_three_of_four_lines_as_hits() -> None:
    """TRiM-G on dlrm-benchmark (uniform rows of 4 lines): 0.75 of a bank-group unit's lines
    hit, one activation per lookup; the activation window binds at 1 ACT per lookup. With the
    host's FR-FCFS (``arch.units_hold_rows = false``) 0.63 hit: 1.48 activations per lookup and
    407 M lookups/s instead of 593 M (DDR5-4800, 1 channel, 2 ranks)."""
    shared = {"memory.preset": "ddr5-4800-40", "memory.channels": 1, "memory.ranks": 2}
    rates = {}
    for hold in (True, False):
        point = run_design_point(
            "trim-g", "dlrm-benchmark", overrides={"arch": {**shared, "units_hold_rows": hold}}
        )
        rates[hold] = point.to_json()["breakdown"]["levels"]["bankgroup"]["row_hit_rate"]
    assert rates[True] == pytest.approx(0.75, abs=0.01)
    assert rates[False] < 0.66
