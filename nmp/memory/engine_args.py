"""The engine's inputs that depend on the memory spec alone, as plain Python values (no numpy):
the address decoding, the configuration by field name, the constraint table, and whether the C
engine takes the spec. :mod:`nmp.memory.plan` keeps them as arrays for every replay;
:mod:`nmp.memory.text_replay` (``nmp replay``, which starts without numpy) passes them to C as
they are."""

from __future__ import annotations

from nmp.memory.mapping import FIELDS, address_segments
from nmp.memory.native_lib import unsupported_rules
from nmp.memory.spec import MemorySpec
from nmp.memory.standards import TableLists, table_lists
from nmp.units import log2_exact


def field_bits(spec: MemorySpec) -> tuple[list[int], list[int]]:
    """(position, mask) of each of :data:`~nmp.memory.mapping.FIELDS` in a transaction number
    (address >> log2 of the transaction size); the column, which the engine needs not, 0."""
    pos = [0] * len(FIELDS)
    mask = [0] * len(FIELDS)
    low = 0
    # only the column may be split (channel interleaving)
    for f, nbits, shift in address_segments(spec):
        if f != "column":
            assert shift == 0 and mask[FIELDS.index(f)] == 0, "one bit range per field"
            pos[FIELDS.index(f)] = low
            mask[FIELDS.index(f)] = (1 << nbits) - 1
        low += nbits
    return pos, mask


def native_decode(spec: MemorySpec) -> list[int]:
    """The C engine's decoding (it decodes the lines itself): log2 of the transactions per
    line, of the transaction size, then the positions and masks of channel .. row."""
    pos, mask = field_bits(spec)
    tx = spec.org.tx_bytes
    return [log2_exact(spec.requests_per_line), log2_exact(tx), *pos[:5], *mask[:5]]


def param_values(spec: MemorySpec, drain: bool, jump: bool) -> dict[str, float]:
    """The engines' configuration of a run on ``spec``, by field name
    (:data:`nmp.memory.engine_fields.FIELD_NAMES`: :func:`nmp.memory.engine_params.
    engine_params` makes the numpy record of it, :mod:`nmp.memory.text_replay` the C struct)."""
    o, c = spec.org, spec.controller
    return {
        "channels": o.channels,
        "ranks": o.ranks,
        "bankgroups": o.bankgroups,
        "banks": o.banks,
        "read_queue": c.read_queue,
        "write_queue": c.write_queue,
        "frontend_ratio": c.frontend_ratio,
        "nrefi": spec.timing["nREFI"],
        "read_latency": spec.read_latency_cycles,
        "dual_issue": int(c.dual_issue),
        "closed_row": int(c.closes_rows),
        "refresh_on": int(c.refreshes),
        "drain": int(drain),
        "skip_blocked": 1,  # a PRE closing an active-buffer row is not eligible (README §4)
        "jump": int(jump),
        "hold_hit_rows": int(c.hold_hit_rows),
        "wm_high": c.wr_high_watermark * c.write_queue,
        "wm_low": c.wr_low_watermark * c.write_queue,
    }


def tables(spec: MemorySpec) -> TableLists:
    """The constraint table of ``spec`` (cached per standard, timing and bus level)."""
    return table_lists(spec.standard, tuple(sorted(spec.timing.items())), spec.bus_level)


def native_unsupported(spec: MemorySpec) -> str | None:
    """Why the C engine does not take ``spec`` (the numba engine replays it), or None."""
    o = spec.org
    t = tables(spec)
    return unsupported_rules(o.ranks, o.bankgroups, o.banks, list(t.tab_i), list(t.win))
