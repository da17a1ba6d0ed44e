"""Every calibration case of the reference set through the CLI path, against Ramulator 2.1.

Bounds (issue 2): cycles within 5 %, row hits / misses / conflicts within 10 %. Counts can be
tiny (0-5 row hits on random traces), where 10 % is below one event: there an absolute slack of
2 events is allowed instead. The engine is in fact exact on all 56 cases; the bounds are the
issue's, so that the hidden hold-out set is judged the same way.
"""

from __future__ import annotations

import json

import pytest
from memref import dram_ref_dir, load_cases

from nmp.cli import main

CASES = load_cases()


def _within(got: int, want: int, rel: float, slack: int = 0) -> bool:
    return abs(got - want) <= max(rel * abs(want), slack)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_matches_ramulator2(case, dram_ref, capsys):
    trace = dram_ref_dir() / case["trace"]
    rc = main(["replay", str(trace), *case["memory_args"], "--json", "--no-drain"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    ref = case["ramulator2"]
    assert got["requests"] == ref["requests"]
    assert _within(got["cycles"], ref["cycles"], 0.05), (got["cycles"], ref["cycles"])
    for key in ("row_hits", "row_misses", "row_conflicts"):
        assert _within(got[key], ref[key], 0.10, slack=2), (key, got[key], ref[key])
    # Not required by the issue, but the engine follows README §4-§5 closely enough for these:
    assert _within(got["cmd_counts"]["ACT"], ref["cmd_counts"]["ACT"], 0.10, slack=2)
    assert _within(got["avg_read_latency_cycles"], ref["avg_read_latency"], 0.10)


def test_cases_present(dram_ref):
    assert len(CASES) == 56
