"""What every replay on one (frozen) memory spec shares: how its addresses decode (for the
numba engine's node ids and for the C engine), the engine parameters and the constraint
table."""

from __future__ import annotations

import functools

import numpy as np

from nmp.memory import native
from nmp.memory.engine_params import engine_params
from nmp.memory.mapping import FIELDS, address_segments
from nmp.memory.spec import MemorySpec
from nmp.memory.standards import build_table
from nmp.units import log2_exact


@functools.lru_cache(maxsize=32)
def _table_arrays(
    standard: str, timing: tuple[tuple[str, int], ...], bus_level: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    tab = build_table(standard, dict(timing), bus_level)
    scope = np.tile(tab.scope, (4, 1))
    tab_i = np.ascontiguousarray(np.stack([tab.start, tab.end, tab.sstart, tab.send, scope]))
    return tab_i, tab.nxt, tab.lat, tab.win


class _Plan:
    """What every replay on one (frozen) spec shares: decode segments, engine parameters and
    the constraint table."""

    def __init__(self, spec: MemorySpec) -> None:
        o = spec.org
        # bit range of each field in the transaction number; only the column may be split
        # (channel interleaving), and the engine needs no column
        pos = np.zeros(len(FIELDS), np.int64)
        mask = np.zeros(len(FIELDS), np.int64)
        low = 0
        for f, nbits, shift in address_segments(spec):
            if f != "column":
                assert shift == 0 and mask[FIELDS.index(f)] == 0, "one bit range per field"
                pos[FIELDS.index(f)] = low
                mask[FIELDS.index(f)] = (1 << nbits) - 1
            low += nbits
        self.spec = spec
        self.k = spec.requests_per_line
        self.decode = (
            self.k,
            np.uint64(o.tx_bytes),
            np.uint64(log2_exact(o.tx_bytes)),
            pos,
            mask,
            o.ranks,
            o.bankgroups,
            o.banks,
        )
        # the C engine decodes the lines itself (native.simulate): log2 of the transactions per
        # line, of the transaction size, then the fields' positions and masks
        self.native_decode = np.array(
            [log2_exact(self.k), log2_exact(o.tx_bytes), *pos[:5], *mask[:5]], np.int64
        )
        self.capacity = spec.capacity_bytes
        # one channel and one rank (a node's view): their ids are all 0
        self.single_rank = o.channels == 1 and o.ranks == 1
        self.tables = _table_arrays(
            spec.standard, tuple(sorted(spec.timing.items())), spec.bus_level
        )
        # why the C engine does not take this spec (the numba engine replays it), or None
        self.native_unsupported = native.unsupported(
            o.ranks, o.bankgroups, o.banks, self.tables[0], self.tables[3]
        )
        self._params: dict[tuple[bool, bool], np.ndarray] = {}

    def engine_params(self, drain: bool, jump: bool) -> np.ndarray:
        """The engines' configuration of a run (:data:`nmp.memory.engine_params.ENGINE_PARAMS`;
        shared between runs: copy it to change a field)."""
        key = (bool(drain), bool(jump))
        if key not in self._params:
            self._params[key] = _engine_params(self.spec, *key)
        return self._params[key]


_PLANS: dict[int, _Plan] = {}  # id(spec) -> plan of that spec (specs are frozen)


def plan_of(spec: MemorySpec) -> _Plan:
    """The plan of ``spec`` (kept per spec object: specs are frozen)."""
    p = _PLANS.get(id(spec))
    if p is not None and p.spec is spec:
        return p
    if len(_PLANS) > 64:
        _PLANS.clear()
    p = _PLANS[id(spec)] = _Plan(spec)
    return p


def _engine_params(spec: MemorySpec, drain: bool, jump: bool) -> np.ndarray:
    """The ``params`` of :func:`engine.simulate` for ``spec``."""
    o, c = spec.org, spec.controller
    return engine_params(
        channels=o.channels,
        ranks=o.ranks,
        bankgroups=o.bankgroups,
        banks=o.banks,
        read_queue=c.read_queue,
        write_queue=c.write_queue,
        frontend_ratio=c.frontend_ratio,
        nrefi=spec.timing["nREFI"],
        read_latency=spec.read_latency_cycles,
        dual_issue=int(c.dual_issue),
        closed_row=int(c.row_policy == "closed"),
        refresh_on=int(c.refresh == "all-bank"),
        drain=int(drain),
        skip_blocked=1,  # a PRE closing an active-buffer row is not eligible (README §4)
        jump=int(jump),
        wm_high=c.wr_high_watermark * c.write_queue,
        wm_low=c.wr_low_watermark * c.write_queue,
    )
