"""DRAM standards as data: timing-constraint rules generated from a preset's timing parameters.

A standard (``models/memory/standards/<name>.toml``) lists rules the way Ramulator 2 states
them: at a ``level`` (channel / rank or pseudo channel / bank group / bank), a command in
``following`` may issue on a node only ``latency`` cycles after the last command in
``preceding`` on the same node (``window = 4``: after the 4th-last, i.e. tFAW); ``sibling``
rules apply to the *other* nodes of that level (rank switching). Latencies are formulas
(``"nCWL + nBL + nWTRS"``) over the preset's parameters; multi-cycle commands (DDR5 ACT/RD/WR,
HBM ACT) shift them by +1 after and -1 before such a command (README §3).

:func:`build_table` turns a :class:`~nmp.memory.spec.MemorySpec` into the flat arrays the engine
uses; :func:`constraint_rows` gives the same table as readable rows.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from nmp.config import DRAM_STANDARDS, load_toml
from nmp.errors import SpecError

if TYPE_CHECKING:
    import numpy as np

COMMANDS = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab", "REFpb")
CMD = {name: i for i, name in enumerate(COMMANDS)}
NCMD = len(COMMANDS)
COLUMN_CMDS = frozenset({"RD", "WR", "RDA", "WRA"})
LEVEL_INDEX = {"channel": 0, "rank": 1, "pseudochannel": 1, "bankgroup": 2, "bank": 3}
LEVEL_NAMES = ("channel", "rank", "bankgroup", "bank")
# Lowest level a command's readiness is checked at (Ramulator's command scope; row/column are
# not nodes): all-bank commands stop at the rank, the others reach the bank.
SCOPE = (3, 3, 1, 3, 3, 3, 3, 1, 3)
MAX_WINDOW = 4

_TOKEN = re.compile(r"\s*([+-])?\s*([A-Za-z_][A-Za-z0-9_]*|\d+)\s*")


# Each dataclass here has a docstring: without one, ``dataclass`` writes its signature as the
# docstring, with inspect's work at every start (issue 43).
@dataclass(frozen=True)
class Rule:
    """One timing rule of a standard's TOML (see the module docstring)."""

    level: str
    preceding: tuple[str, ...]
    following: tuple[str, ...]
    latency: str
    window: int = 1
    sibling: bool = False
    adjust: bool = True


@dataclass(frozen=True)
class Standard:
    """A DRAM standard as its TOML states it: levels, multi-cycle commands, timing rules."""

    name: str
    levels: tuple[str, ...]
    rank_level_name: str
    # how tables and titles name the rank level in short ("rank"; "PC" on HBM)
    rank_level_short: str
    # each node of the rank level drives a data bus of its own (HBM's pseudo channels), not
    # one bus per channel: the standard's peak bandwidth counts them
    data_bus_per_rank: bool
    multi_cycle: dict[str, int]
    rules: tuple[Rule, ...]
    file: str
    # data transfers per memory clock (tCK): 2 on a double-data-rate bus; a spec's rate_mtps
    # must agree with its tck_ps by this factor (MemorySpec.validate, rule rate-matches-clock)
    transfers_per_clock: int = 2

    def parameters(self) -> set[str]:
        """Timing parameter names the rules use."""
        names: set[str] = set()
        for rule in self.rules:
            names.update(t for _, t in _TOKEN.findall(rule.latency) if not t.isdigit())
        return names


def evaluate(formula: str, timing: dict[str, int], *, where: str = "") -> int:
    """Value of a ``+``/``-`` formula over timing parameter names and integers."""
    pos, total = 0, 0
    text = formula.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or (pos > 0 and not m.group(1)):
            raise SpecError(f"bad latency formula '{formula}'", file=where or None)
        sign = -1 if m.group(1) == "-" else 1
        tok = m.group(2)
        if tok.isdigit():
            val = int(tok)
        elif tok in timing:
            val = int(timing[tok])
        else:
            raise SpecError(f"latency '{formula}' uses unknown parameter '{tok}'", key="timing")
        total += sign * val
        pos = m.end()
    return total


@functools.lru_cache(maxsize=16)
def load_standard(name: str) -> Standard:
    # a registered name only: "/tmp/x/evil" loaded that file (a folder any user may write
    # into) and listed its folder's files as the known standards
    registered = {n.lower(): n for n in DRAM_STANDARDS.names()}
    if not isinstance(name, str) or name.lower() not in registered:
        known = sorted(n.upper() for n in registered)
        raise SpecError(f"unknown DRAM standard {name!r} (known: {', '.join(known)})")
    path = DRAM_STANDARDS.get(registered[name.lower()])
    data = load_toml(path)
    rules = []
    for i, r in enumerate(data.get("rules", [])):
        key = f"rules[{i}]"
        if r.get("level") not in LEVEL_INDEX:
            raise SpecError(f"unknown level {r.get('level')!r}", file=str(path), key=key)
        for c in (*r["preceding"], *r["following"]):
            if c not in CMD:
                raise SpecError(f"unknown command {c!r}", file=str(path), key=key)
        rules.append(
            Rule(
                level=r["level"],
                preceding=tuple(r["preceding"]),
                following=tuple(r["following"]),
                latency=str(r["latency"]),
                window=int(r.get("window", 1)),
                sibling=bool(r.get("sibling", False)),
                adjust=bool(r.get("adjust", True)),
            )
        )
    return Standard(
        name=data["name"],
        levels=tuple(data["levels"]),
        rank_level_name=data.get("rank_level_name", "rank"),
        rank_level_short=data.get("rank_level_short", "rank"),
        data_bus_per_rank=bool(data.get("data_bus_per_rank", False)),
        multi_cycle={k: int(v) for k, v in data.get("multi_cycle", {}).items()},
        rules=tuple(rules),
        file=str(path),
        transfers_per_clock=int(data.get("transfers_per_clock", 2)),
    )


def constraint_rows(
    standard: str, timing: dict[str, int], bus_level: str = "channel"
) -> list[tuple[str, str, str, int, int, bool]]:
    """The enforced table, one row per (level, preceding, following) command pair:
    ``(level, preceding, following, latency, window, sibling)``, multi-cycle adjusted and
    filtered for ``bus_level`` (see :func:`nmp.memory.spec.internal_view`)."""
    std = load_standard(standard)
    drop_above = LEVEL_NAMES.index(bus_level)
    rows = []
    for rule in std.rules:
        base = evaluate(rule.latency, timing, where=std.file)
        level = LEVEL_INDEX[rule.level]
        for pre in rule.preceding:
            for fol in rule.following:
                lat = base
                if rule.adjust:
                    lat += std.multi_cycle.get(pre, 1) - 1
                    lat -= std.multi_cycle.get(fol, 1) - 1
                lvl = level
                column_pair = pre in COLUMN_CMDS and fol in COLUMN_CMDS
                # Data paths private below bus_level: shared-bus rules above it go away.
                if drop_above >= 1 and ((lvl == 0 and column_pair) or (lvl == 1 and rule.sibling)):
                    continue
                if drop_above >= 2 and lvl == 1 and column_pair:
                    continue
                if drop_above >= 3 and lvl == 2 and column_pair:
                    lvl = 3
                rows.append((LEVEL_NAMES[lvl], pre, fol, lat, rule.window, rule.sibling))
    return rows


@dataclass(frozen=True)
class ConstraintTable:
    """Flat arrays for the engine. Rules of (level L, preceding command p) are
    ``[start[L, p], end[L, p])`` in ``nxt/lat/win``; sibling rules in ``sstart/send``."""

    start: np.ndarray
    end: np.ndarray
    sstart: np.ndarray
    send: np.ndarray
    nxt: np.ndarray
    lat: np.ndarray
    win: np.ndarray
    scope: np.ndarray


class TableLists(NamedTuple):
    """The engine's constraint table as plain lists (no numpy: ``nmp replay``'s path):
    ``tab_i`` flat, of shape (5, 4, NCMD): start, end, sibling start, sibling end, and the
    command scope repeated per level; ``nxt/lat/win`` one entry per rule."""

    tab_i: tuple[int, ...]
    nxt: tuple[int, ...]
    lat: tuple[int, ...]
    win: tuple[int, ...]


def _table_rules(
    standard: str, timing: dict[str, int], bus_level: str
) -> tuple[list[list[list[int]]], list[int], list[int], list[int]]:
    """([start, end, sstart, send] each [level][command], nxt, lat, win) of :func:`build_table`."""
    rows = constraint_rows(standard, timing, bus_level)
    # Same pair twice (e.g. HBM2 nBL and nCCDS rows): keep the larger distance.
    merged: dict[tuple[int, int, int, int, bool], int] = {}
    for level, pre, fol, lat, win, sib in rows:
        key = (LEVEL_NAMES.index(level), CMD[pre], CMD[fol], win, sib)
        merged[key] = max(merged.get(key, -(10**9)), lat)
    bounds = [[[0] * NCMD for _ in range(4)] for _ in range(4)]  # start, end, sstart, send
    nxt: list[int] = []
    lat_l: list[int] = []
    win_l: list[int] = []
    ordered = sorted(merged.items())
    for lvl in range(4):
        for p in range(NCMD):
            for sib in (False, True):
                s_arr, e_arr = bounds[2 * sib], bounds[2 * sib + 1]
                s_arr[lvl][p] = len(nxt)
                for (lv, pc, fc, win, sb), val in ordered:
                    if lv == lvl and pc == p and sb == sib:
                        nxt.append(fc)
                        lat_l.append(val)
                        win_l.append(win)
                e_arr[lvl][p] = len(nxt)
    if any(w > MAX_WINDOW for w in win_l):
        raise SpecError(f"window above {MAX_WINDOW} is not supported")
    return bounds, nxt, lat_l, win_l


@functools.lru_cache(maxsize=32)
def table_lists(
    standard: str, timing: tuple[tuple[str, int], ...], bus_level: str = "channel"
) -> TableLists:
    """:func:`build_table` as the engine's flat lists (``timing`` as sorted items)."""
    bounds, nxt, lat, win = _table_rules(standard, dict(timing), bus_level)
    tab_i = [v for table in bounds for level in table for v in level]
    tab_i += list(SCOPE) * 4
    return TableLists(tuple(tab_i), tuple(nxt), tuple(lat), tuple(win))


def build_table(
    standard: str, timing: dict[str, int], bus_level: str = "channel"
) -> ConstraintTable:
    import numpy as np  # (here: nmp replay's path builds the table without numpy)

    bounds, nxt, lat, win = _table_rules(standard, timing, bus_level)
    start, end, sstart, send = (np.array(b, np.int64).reshape(4, NCMD) for b in bounds)
    return ConstraintTable(
        start=start,
        end=end,
        sstart=sstart,
        send=send,
        nxt=np.array(nxt, np.int64),
        lat=np.array(lat, np.int64),
        win=np.array(win, np.int64),
        scope=np.array(SCOPE, np.int64),
    )
