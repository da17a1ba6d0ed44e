"""A deliberately simple, exact sectored LRU cache in pure Python: the reference the compiled
cache model (nmp.gpu.cache) must agree with, request by request."""

from __future__ import annotations

from collections import OrderedDict

_HASH_MULT = 0x9E3779B97F4A7C15


def reference_set(line: int, sets: int, hashed: bool) -> int:
    """Written from the documented formula, independently of nmp.gpu.cache."""
    if hashed:
        return ((((line * _HASH_MULT) % 2**64) >> 32) * sets) >> 32
    return line % sets


class ReferenceSectoredLRU:
    """``sets`` sets of ``ways`` lines; each set an OrderedDict line -> valid-sector mask, least
    recently used first. Pinned lines live apart, count against their set's ways and never leave.
    """

    def __init__(self, sets: int, ways: int, *, hashed: bool, sectors_per_line: int = 4):
        self.sets = sets
        self.ways = ways
        self.hashed = hashed
        self.full = (1 << sectors_per_line) - 1
        self.lru = [OrderedDict() for _ in range(sets)]
        self.pinned = [set() for _ in range(sets)]

    def pin(self, lines, pin_ways: int) -> int:
        done = 0
        for line in lines:
            s = reference_set(line, self.sets, self.hashed)
            if len(self.pinned[s]) >= pin_ways or line in self.pinned[s]:
                continue
            self.pinned[s].add(line)
            done += 1
        return done

    def access(self, line: int, mask: int) -> int:
        """Returns the mask of requested sectors that hit."""
        s = reference_set(line, self.sets, self.hashed)
        if line in self.pinned[s]:
            return mask
        entries = self.lru[s]
        if line in entries:
            hit = entries[line] & mask
            entries[line] |= mask
            entries.move_to_end(line)
            return hit
        capacity = self.ways - len(self.pinned[s])
        if capacity <= 0:
            return 0
        if len(entries) >= capacity:
            entries.popitem(last=False)
        entries[line] = mask
        return 0
