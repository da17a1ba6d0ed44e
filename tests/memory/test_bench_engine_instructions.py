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


def test_by_function_needs_line_information(tmp_path: Path, capsys) -> None:
    """--by-function on a library built without -g (every cost on line 0) says how to build
    one, instead of a table with one row; with lines, the rows per command."""
    from engine_instructions import print_functions  # type: ignore[import-not-found]

    src = tmp_path / "engine.c"
    src.write_text("static int tick(int a)\n{\n    return a;\n}\n")
    out = tmp_path / "callgrind.out"
    out.write_text(f"events: Ir\nfl=(1) ???\nfn=(1) tick\n0 90\nfi=(2) {src}\n3 10\n")
    print_functions(out, commands=10, top=5)
    assert "build the library with -g" in capsys.readouterr().out
    out.write_text(f"events: Ir\nfl=(1) {src}\nfn=(1) tick\n3 60\n0 40\n")
    print_functions(out, commands=10, top=5)
    shown = capsys.readouterr().out
    assert "6.0   60.0 %  engine.c:tick" in shown
    assert "4.0   40.0 %  engine.c:(no line)" in shown
