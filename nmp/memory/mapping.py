"""Address mapping: byte address <-> (channel, rank, bankgroup, bank, row, column), vectorized.

A mapping name lists fields from MSB to LSB: ``Ro`` row, ``Ba`` bank, ``Bg`` bank group, ``Ra``
rank (pseudo channel on HBM), ``Co`` column, ``Ch`` channel. ``Bg`` may be left out: it then sits
just below ``Ba`` (Ramulator's convention, where "Ba" covers bank group + bank). Fields are
sliced from the LSB of ``addr >> log2(tx_bytes)``.

Channel interleaving is Ramulator's ``CacheLineInterleave`` (README §2): with
``channel_interleave_bits = k > 0`` the lowest ``k`` column bits stay below the channel bits,
so channels interleave on ``tx_bytes << k`` boundaries (64 B for HBM2's 32-B requests).

Provided mappings (any permutation of the tokens is accepted):

- ``RoBaRaCoCh`` (default, README §2): a 64-B-aligned stream stays in one bank for a whole page.
- ``RoBaRaCoBgCh``: bank-group interleaved: consecutive transactions rotate over bank groups
  (tCCD_S apart instead of tCCD_L), then columns.
- ``RoCoBaRaCh``: bank interleaved (Ramulator's RoCoBaRaCh): consecutive transactions rotate over
  ranks, bank groups and banks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nmp.errors import SpecError, TraceError
from nmp.memory.mapping_name import FIELDS, Mapping, parse_mapping
from nmp.units import log2_exact

if TYPE_CHECKING:
    import numpy as np

    from nmp.memory.spec import MemorySpec

__all__ = [
    "FIELDS",
    "Mapping",
    "address_segments",
    "decode_address",
    "encode_address",
    "parse_mapping",
]


def address_segments(spec: MemorySpec) -> list[tuple[str, int, int]]:
    """(field, nbits, shift within field) from the LSB up."""
    o = spec.org
    bits = {
        "channel": log2_exact(o.channels),
        "rank": log2_exact(o.ranks),
        "bankgroup": log2_exact(o.bankgroups),
        "bank": log2_exact(o.banks),
        "row": log2_exact(o.rows),
        "column": log2_exact(o.column_addrs),
    }
    order = list(reversed(parse_mapping(spec.mapping).msb_to_lsb))
    segs: list[tuple[str, int, int]] = []
    low = 0
    if o.channels > 1 and order[0] == "channel":
        low = min(spec.controller.channel_interleave_bits, bits["column"])
        if low:
            segs.append(("column", low, 0))
    for f in order:
        shift = low if f == "column" else 0
        segs.append((f, bits[f] - shift, shift))
    return segs


def decode_address(addrs: np.ndarray | int, spec: MemorySpec) -> dict[str, np.ndarray]:
    """Fields of byte addresses (numpy, vectorized). Raises TraceError beyond capacity."""
    import numpy as np  # (here: a spec's mapping is parsed without numpy)

    a = np.atleast_1d(np.asarray(addrs, dtype=np.uint64))
    if a.size and int(a.max()) >= spec.capacity_bytes:
        bad = int(a[np.argmax(a >= spec.capacity_bytes)])
        raise TraceError(
            f"address {bad:#x} beyond capacity {spec.capacity_bytes:#x} of '{spec.name}'"
        )
    x = a >> np.uint64(log2_exact(spec.org.tx_bytes))
    out = {f: np.zeros(a.shape, np.int64) for f in FIELDS}
    for f, nbits, shift in address_segments(spec):
        if nbits == 0:
            continue
        val = (x & np.uint64((1 << nbits) - 1)).astype(np.int64)
        out[f] |= val << shift
        x = x >> np.uint64(nbits)
    return out


def encode_address(
    spec: MemorySpec,
    *,
    channel=0,
    rank=0,
    bankgroup=0,
    bank=0,
    row=0,
    column=0,
) -> np.ndarray:
    """Byte addresses of the given fields (broadcast numpy arrays; column in tx units)."""
    import numpy as np

    vals = {
        "channel": channel,
        "rank": rank,
        "bankgroup": bankgroup,
        "bank": bank,
        "row": row,
        "column": column,
    }
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in vals.values()))
    fields = dict(zip(vals, arrays, strict=True))
    o = spec.org
    limits = {
        "channel": o.channels,
        "rank": o.ranks,
        "bankgroup": o.bankgroups,
        "bank": o.banks,
        "row": o.rows,
        "column": o.column_addrs,
    }
    for f, lim in limits.items():
        arr = fields[f]
        if arr.size and (arr.min() < 0 or arr.max() >= lim):
            raise SpecError(f"{f} out of range [0, {lim}) for '{spec.name}'")
    x = np.zeros(arrays[0].shape, np.uint64)
    pos = 0
    for f, nbits, shift in address_segments(spec):
        if nbits == 0:
            continue
        part = (fields[f].astype(np.uint64) >> np.uint64(shift)) & np.uint64((1 << nbits) - 1)
        x |= part << np.uint64(pos)
        pos += nbits
    return x << np.uint64(log2_exact(o.tx_bytes))
