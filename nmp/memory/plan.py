"""What every replay on one (frozen) memory spec shares: how its addresses decode (for the
numba engine's node ids and for the C engine), the engine parameters and the constraint
table."""

from __future__ import annotations

import functools

import numpy as np

from nmp.identity_cache import IdentityCache
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
        self._narrowed: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def engine_params(self, drain: bool, jump: bool) -> np.ndarray:
        """The engines' configuration of a run (:data:`nmp.memory.engine_params.ENGINE_PARAMS`;
        shared between runs: copy it to change a field)."""
        key = (bool(drain), bool(jump))
        if key not in self._params:
            self._params[key] = _engine_params(self.spec, *key)
        return self._params[key]

    def narrowed(
        self, addr: np.ndarray, drain: bool, bits: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(decode, params) of the C engine's run of the lines ``addr`` (uint64) with jumps:
        :attr:`native_decode` and :meth:`engine_params`, or, where every line lies in fewer
        bank groups or banks than the organization has, a narrower organization that gives
        the same run (:func:`narrow_fields`; ``bits``: the addresses' OR and AND where the
        caller has them). The same objects for the same narrowing."""
        params = self.engine_params(drain, True)
        fields = narrow_fields(self, addr, bits)
        if fields is None:
            return self.native_decode, params
        key = (*fields, bool(drain))
        hit = self._narrowed.get(key)
        if hit is None:
            decode, params = self.native_decode.copy(), params.copy()
            for f, (pos, mask) in zip(_NARROWED, (fields[:2], fields[2:]), strict=True):
                decode[2 + f], decode[7 + f] = pos, mask
                params[0][_NARROWED_COUNT[f]] = mask + 1
            hit = self._narrowed[key] = (decode, params)
        return hit


# The fields narrowed (bank group, bank: native_decode's order after ks and the tx shift)
# and the params field that counts each
_NARROWED = (2, 3)
_NARROWED_COUNT = {2: "bankgroups", 3: "banks"}


def narrow_fields(
    plan: _Plan, addr: np.ndarray, bits: tuple[int, int] | None = None
) -> tuple[int, int, int, int] | None:
    """(bank-group position, mask, bank position, mask) in a transaction number for a run
    of the lines ``addr`` (one transaction each) on fewer bank groups or banks per rank,
    or None where that would not be fewer. A bit of either field that is the same in every
    line is dropped from the field's low and high ends; what is left still tells every two
    lines' bank groups and banks apart, in the same order. Exact: a bank that no request
    targets is never opened and never picked; its lanes of the bank table only have their
    ready clocks raised, which nothing reads; the channel's and the ranks' constraints,
    refresh and the active cycles do not depend on the count of banks; and the same-bank-
    group and same-bank relations of the lines are kept. Only lines of one transaction
    (a line of several could carry into a field) and only bank groups and banks (ranks are
    refreshed whether used or not). ``bits``: the lines' OR and AND, where known."""
    if plan.k != 1 or addr.shape[0] == 0:
        return None
    decode = plan.native_decode
    shift = int(decode[1])
    if bits is None:
        bits = (int(np.bitwise_or.reduce(addr)), int(np.bitwise_and.reduce(addr)))
    varying = (bits[0] ^ bits[1]) >> shift
    out: list[int] = []
    narrow_per_rank = 1
    for f in _NARROWED:
        pos, mask = int(decode[2 + f]), int(decode[7 + f])
        v = (varying >> pos) & mask
        if v:
            lo = (v & -v).bit_length() - 1
            out += [pos + lo, (1 << (v.bit_length() - lo)) - 1]
        else:
            out += [pos, 0]
        narrow_per_rank *= out[-1] + 1
    org = plan.spec.org
    if narrow_per_rank >= org.bankgroups * org.banks:
        return None
    return out[0], out[1], out[2], out[3]


_PLANS: IdentityCache[_Plan] = IdentityCache(64)  # spec -> plan of that spec (specs are frozen)


def plan_of(spec: MemorySpec) -> _Plan:
    """The plan of ``spec`` (kept per spec object: specs are frozen)."""
    return _PLANS.get(spec, lambda: _Plan(spec))


def _engine_params(spec: MemorySpec, drain: bool, jump: bool) -> np.ndarray:
    """The ``params`` of :func:`engine.simulate` for ``spec``."""
    return engine_params(**param_values(spec, drain, jump))
