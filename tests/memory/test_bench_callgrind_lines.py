"""benchmarks/callgrind_lines.py: a callgrind file's instructions by the C function (or macro)
whose source holds each line, inlined code included (issue 43, the twenty-third look)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from callgrind_lines import by_function, definitions, line_costs  # type: ignore[import-not-found]  # noqa: E402

# the engine's shape: one compiled function (tick) whose lines lie in two sources, a call
# whose inclusive cost must not count as the caller's, relative and repeated positions
CALLGRIND = """\
version: 1
positions: line
events: Ir Bcm
ob=(1) /lib/engine.so
fl=(1) /src/engine.c
fn=(1) tick
10 5 0
fi=(2) /src/channel.h
+2 7 1
* 3 0
-1 11 0
fe=(1)
0 13 0
cfn=(2) helper
calls=4 20
12 1000 0
12 2 0
fn=(2)
20 17 0
totals: 1058 1
"""

ENGINE_C = """\
#define TWICE(x) \\
    ((x) + \\
     (x))
static int helper(int a)
{
    return a;
}
FORCE_INLINE void tick(int64_t clk,
                       int a)
{
    int b = TWICE(a);
    helper(b);
}
TICK_OF(tick_hbm, HBM(4, 16, 4))
"""

CHANNEL_H = """\
/* a header */
FORCE_INLINE void pick(int a)
{
    a++;
    a--;
}
"""


def test_self_costs_by_line_follow_files_positions_and_calls() -> None:
    costs = line_costs(CALLGRIND)
    assert costs == {
        ("/src/engine.c", 10): 5,
        ("/src/channel.h", 12): 10,  # +2, then * (the same line)
        ("/src/channel.h", 11): 11,  # -1
        ("/src/engine.c", 0): 13,  # fe= back to the compressed name (1)
        ("/src/engine.c", 12): 2,  # the line after calls= is the call's cost: not counted
        ("/src/engine.c", 20): 17,  # fn= keeps the file
    }
    assert line_costs(CALLGRIND, event="Bcm")[("/src/channel.h", 12)] == 1


def test_an_event_not_recorded_and_a_file_without_events_are_errors() -> None:
    with pytest.raises(ValueError, match="no event 'Dr'"):
        line_costs(CALLGRIND, event="Dr")
    with pytest.raises(ValueError, match="no 'events:' line"):
        line_costs("fn=(1) f\n1 2\n")


def test_definitions_name_functions_macros_and_top_level_invocations() -> None:
    assert definitions(ENGINE_C) == [
        (1, "#define TWICE"),
        (4, "(top level)"),
        (4, "helper"),
        (8, "tick"),
        (14, "TICK_OF(tick_hbm)"),
    ]


def test_costs_go_to_the_function_whose_body_holds_the_line() -> None:
    sources = {"/src/engine.c": ENGINE_C, "/src/channel.h": CHANNEL_H}
    costs = {
        ("/src/engine.c", 2): 1,  # inside the macro
        ("/src/engine.c", 6): 2,  # helper's body
        ("/src/engine.c", 9): 3,  # tick's second line of parameters
        ("/src/engine.c", 12): 4,
        ("/src/engine.c", 14): 5,
        ("/src/engine.c", 0): 6,
        ("/src/channel.h", 1): 7,  # above every definition
        ("/src/channel.h", 5): 8,
        ("/elsewhere/libc.S", 3): 9,  # no source to read
    }
    got = by_function(costs, read=sources.get)
    assert got == {
        "engine.c:#define TWICE": 1,
        "engine.c:helper": 2,
        "engine.c:tick": 7,
        "engine.c:TICK_OF(tick_hbm)": 5,
        "engine.c:(no line)": 6,
        "channel.h:(top)": 7,
        "channel.h:pick": 8,
        "libc.S:?": 9,
    }
