"""A deliberately simple, exact sectored LRU cache in pure Python: the reference the compiled
cache model (nmp.gpu.cache) must agree with, request by request, persisting lines included."""

from __future__ import annotations

from collections import OrderedDict

_HASH_MULT = 0x9E3779B97F4A7C15


def reference_set(line: int, sets: int, hashed: bool) -> int:
    """Written from the documented formula, independently of nmp.gpu.cache."""
    if hashed:
        return ((((line * _HASH_MULT) % 2**64) >> 32) * sets) >> 32
    return line % sets


class ReferenceSectoredLRU:
    """``sets`` sets of ``ways`` lines; each set an OrderedDict line -> [valid-sector mask,
    persisting], least recently used first, written from the rules in nmp.gpu.cache's docstring:
    at most ``carve`` persisting lines per set; a persisting miss evicts the LRU normal line
    while under ``carve``, else the LRU persisting line; a normal miss evicts only normal lines
    (bypassing when every way persists); a persisting hit promotes (demoting the LRU persisting
    line at ``carve``)."""

    def __init__(self, sets: int, ways: int, *, hashed: bool, sectors_per_line: int = 4):
        self.sets = sets
        self.ways = ways
        self.hashed = hashed
        self.full = (1 << sectors_per_line) - 1
        self.lru = [OrderedDict() for _ in range(sets)]

    def persisting(self, s: int) -> list[int]:
        return [line for line, (_, p) in self.lru[s].items() if p]

    def access(self, line: int, mask: int, persist: bool = False, carve: int = 0) -> int:
        """Returns the mask of requested sectors that hit."""
        persist = persist and carve > 0
        s = reference_set(line, self.sets, self.hashed)
        entries = self.lru[s]
        pers = self.persisting(s)
        if line in entries:
            valid, p = entries[line]
            if persist and not p:
                if len(pers) >= carve:
                    entries[pers[0]][1] = False
                p = True
            entries[line] = [valid | mask, p]
            entries.move_to_end(line)
            return valid & mask
        if persist and len(pers) >= carve:
            del entries[pers[0]]
        elif len(entries) >= self.ways:
            normal = [x for x, (_, p) in entries.items() if not p]
            if not normal:
                return 0
            del entries[normal[0]]
        entries[line] = [mask, persist]
        return 0
