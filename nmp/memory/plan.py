"""What every replay on one (frozen) memory spec shares: how its addresses decode (for the
numba engine's node ids and for the C engine), the engine parameters and the constraint
table."""

from __future__ import annotations

import functools

import numpy as np

from nmp.memory.engine_args import (
    field_bits,
    native_decode,
    native_unsupported,
    param_values,
    tables,
)
from nmp.memory.engine_params import engine_params
from nmp.memory.spec import MemorySpec
from nmp.memory.standards import NCMD, TableLists
from nmp.units import log2_exact


@functools.lru_cache(maxsize=32)
def _table_arrays(table: TableLists) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    tab_i = np.array(table.tab_i, np.int64).reshape(5, 4, NCMD)
    nxt, lat, win = (np.array(v, np.int64) for v in (table.nxt, table.lat, table.win))
    return tab_i, nxt, lat, win


class _Plan:
    """What every replay on one (frozen) spec shares: decode segments, engine parameters and
    the constraint table."""

    def __init__(self, spec: MemorySpec) -> None:
        o = spec.org
        pos_l, mask_l = field_bits(spec)
        pos, mask = np.array(pos_l, np.int64), np.array(mask_l, np.int64)
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
        self.native_decode = np.array(native_decode(spec), np.int64)
        self.capacity = spec.capacity_bytes
        # one channel and one rank (a node's view): their ids are all 0
        self.single_rank = o.channels == 1 and o.ranks == 1
        self.tables = _table_arrays(tables(spec))
        # why the C engine does not take this spec (the numba engine replays it), or None
        self.native_unsupported = native_unsupported(spec)
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
    return engine_params(**param_values(spec, drain, jump))
