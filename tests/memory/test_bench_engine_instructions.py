"""benchmarks/engine_instructions.py's reading of callgrind's output: the events asked for
(instructions, the branch and cache models' counts) by name, from its 'events' and 'totals'
lines, whatever their order (issue 43, the twenty-second look)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from engine_instructions import SIMULATIONS, _events  # type: ignore[import-not-found]  # noqa: E402


def test_the_events_are_read_by_name(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    out.write_text(
        "version: 1\ncreator: callgrind-3.19.0\nevents: Ir Dr Dw D1mr D1mw DLmr Bc Bcm\n"
        "fn=(1) run\n0 5 1 1 0 0 0 1 0\ntotals: 1000 300 200 7 5 1 90 4\n"
    )
    assert _events(out) == {
        "Ir": 1000, "Dr": 300, "Dw": 200, "D1mr": 7, "D1mw": 5, "DLmr": 1, "Bc": 90, "Bcm": 4
    }  # fmt: skip


def test_a_file_without_totals_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    out.write_text("events: Ir\nfn=(1) run\n0 5\n")
    with pytest.raises(SystemExit, match="no events and totals"):
        _events(out)


def test_each_simulation_names_callgrind_flags_and_events() -> None:
    assert SIMULATIONS["branch"][0] == "--branch-sim=yes"
    assert set(SIMULATIONS["branch"][1]) == {"Bcm", "Bim"}
    assert SIMULATIONS["cache"][0] == "--cache-sim=yes"
    assert {"D1mr", "D1mw"} <= set(SIMULATIONS["cache"][1])
