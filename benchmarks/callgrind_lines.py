"""A callgrind file's instructions by the source function they lie in, inlined code included.

The engine's evaluation is one function to the compiler (``tick_hbm``: ``chan_tick`` with every
step inlined), so callgrind's own per-function table gives one row for all of it, and
``callgrind_annotate`` gives single lines, each a few per cent at most (docs/performance.md,
the twenty-third look). Here each line's self cost (the library built with ``-g``) goes to the
C function whose body holds the line in its source file: ``pick_buffer``, ``issue_rules``,
``le_bits32``, ... Lines the compiler left without a source line (line 0: spills, moves,
the jumps between blocks) are a row of their own.

Read as callgrind_annotate reads the format (``positions: line``): ``fl=``, ``fi=`` and ``fe=``
set the source file of the cost lines after them (``fn=`` does not), a position may be
relative (``+n``, ``-n``) or the last one (``*``), and the cost line after ``calls=`` is the
call's inclusive cost, not the caller's own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# a C function's definition: at column 0, a name followed by its parameters (FORCE_INLINE void
# pick_buffer(..., UNUSED static void free_sim(...), TICK_OF's expansion does not count)
_DEFINITION = re.compile(r"^(?:[A-Za-z_][\w]*[\s\*]+)+([A-Za-z_]\w*)\s*\(")
_MACRO = re.compile(r"^#\s*define\s+([A-Za-z_]\w*)")
_INVOCATION = re.compile(r"^([A-Z_][A-Z0-9_]*)\(\s*([A-Za-z_]\w*)")
_NOT_A_DEFINITION = ("#", "/", " ", "\t", "}", "typedef", "return", "if ", "for ", "while ")


def line_costs(text: str, event: str = "Ir") -> Counter[tuple[str, int]]:
    """The self cost of ``event`` per (source file, line) in callgrind's file ``text``."""
    names: dict[tuple[str, str], str] = {}
    index = None
    costs: Counter[tuple[str, int]] = Counter()
    file, line, after_calls = "?", 0, False

    def name(kind: str, spec: str) -> str:
        # "(id) name" defines a compressed name, "(id)" refers to one
        m = re.fullmatch(r"\((\d+)\)(?: (.*))?", spec)
        if m is None:
            return spec
        if m.group(2) is not None:
            names[kind, m.group(1)] = m.group(2)
        return names.get((kind, m.group(1)), "?")

    for raw in text.splitlines():
        if not raw or raw.startswith("#"):
            continue
        head = raw[0]
        if head.isdigit() or head in "+-*":
            pos, *values = raw.split()
            line = line if pos == "*" else line + int(pos) if head in "+-" else int(pos)
            if after_calls:
                after_calls = False
            elif index is not None and index < len(values):
                costs[file, line] += int(values[index])
            continue
        key, _, value = raw.partition("=")
        if key in ("fl", "fi", "fe"):
            file = name("fl", value)
        elif key in ("cfi", "cfl", "jfi"):
            name("fl", value)
        elif key in ("fn", "cfn", "jfn"):
            name("fn", value)
        elif key in ("ob", "cob"):
            name("ob", value)
        elif key == "calls":
            after_calls = True
        elif raw.startswith("events:"):
            events = raw.split()[1:]
            if event not in events:
                raise ValueError(f"callgrind file has no event {event!r} (events: {events})")
            index = events.index(event)
    if index is None:
        raise ValueError("not a callgrind file: no 'events:' line")
    return costs


def definitions(source: str) -> list[tuple[int, str]]:
    """The (first line, name) of each C function and macro defined in ``source``, in order: a
    macro's lines as ``#define NAME`` (the lines after it, to the next definition, as ``(top
    level)``), a function defined by a macro at the top level as ``MACRO(name)`` (engine.c's
    ``TICK_OF(tick_hbm, ...)``)."""
    found: list[tuple[int, str]] = []
    in_macro = False
    for number, text in enumerate(source.splitlines(), 1):
        macro = None if in_macro else _MACRO.match(text)
        if macro is not None:
            found.append((number, f"#define {macro.group(1)}"))
        if in_macro or macro is not None:
            # a macro's line: its last has no continuation
            in_macro = text.rstrip().endswith("\\")
            if not in_macro:
                found.append((number + 1, "(top level)"))
            continue
        invocation = _INVOCATION.match(text)
        if invocation is not None:
            found.append((number, f"{invocation.group(1)}({invocation.group(2)})"))
            continue
        if text.startswith(_NOT_A_DEFINITION):
            continue
        m = _DEFINITION.match(text)
        if m is not None:
            found.append((number, m.group(1)))
    return found


def by_function(
    costs: Counter[tuple[str, int]], read: Callable[[str], str | None] | None = None
) -> Counter[str]:
    """``costs`` summed per ``file:function`` (the last definition at or above the line; line
    0 as ``file:(no line)``, a line above every definition as ``file:(top)``). ``read`` gives
    a file's source or None (default: read it from disk where it exists)."""
    read = read or _read_source
    starts: dict[str, list[tuple[int, str]] | None] = {}
    out: Counter[str] = Counter()
    for (file, line), cost in costs.items():
        if file not in starts:
            source = read(file)
            starts[file] = None if source is None else definitions(source)
        short = Path(file).name
        defs = starts[file]
        if line == 0:
            out[f"{short}:(no line)"] += cost
        elif defs is None:
            out[f"{short}:?"] += cost
        else:
            fn = "(top)"
            for first, name in defs:
                if first > line:
                    break
                fn = name
            out[f"{short}:{fn}"] += cost
    return out


def _read_source(file: str) -> str | None:
    path = Path(file)
    try:
        return path.read_text(errors="replace") if path.is_file() else None
    except OSError:
        return None
