"""Address-mapping names: ``RoBaRaCoCh`` and its permutations parsed into the fields they order
(MSB first). See :mod:`nmp.memory.mapping` for the mapping itself; this module needs no memory
spec, so the spec can check its ``mapping`` key without importing the mapping (no file cycle).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from nmp.errors import SpecError

FIELDS = ("channel", "rank", "bankgroup", "bank", "row", "column")
_TOKENS = {
    "Ro": "row",
    "Ba": "bank",
    "Bg": "bankgroup",
    "Ra": "rank",
    "Co": "column",
    "Ch": "channel",
}


@dataclass(frozen=True)
class Mapping:
    """An address mapping: its canonical name and its fields, most significant first."""

    name: str
    msb_to_lsb: tuple[str, ...]


@functools.lru_cache(maxsize=32)
def parse_mapping(name: str) -> Mapping:
    text = name.strip()
    tokens = []
    pos = 0
    while pos < len(text):
        tok = text[pos : pos + 2]
        canon = next((k for k in _TOKENS if k.lower() == tok.lower()), None)
        if canon is None:
            raise SpecError(
                f"unknown address mapping '{name}': expected tokens Ro, Ba, Bg, Ra, Co, Ch "
                "(MSB first), e.g. RoBaRaCoCh"
            )
        tokens.append(canon)
        pos += 2
    fields = [_TOKENS[t] for t in tokens]
    if "bankgroup" not in fields and "bank" in fields:
        fields.insert(fields.index("bank") + 1, "bankgroup")
    if sorted(fields) != sorted(FIELDS):
        raise SpecError(f"address mapping '{name}' must name each of Ro, Ba, Ra, Co, Ch once")
    return Mapping("".join(tokens), tuple(fields))
