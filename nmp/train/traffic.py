"""Network traffic of a training step, per unit of work: what the scale model charges.

The distributed trainer (:mod:`nmp.train.dist`) counts every payload byte it sends, by kind.
Divided by the units of work that caused them, the counts are per-unit coefficients that carry
to any scale (as long as the row format, ``dim`` and optimizer state, is the same):

=============  ====================================================  ========================
kind           unit                                                  message layout
=============  ====================================================  ========================
lookup         one lookup a worker sends a server                    position + row (2 x 8 B)
pooled         one sparse partial sum (sample, table, server)        slot (4 B) + dim floats
row_grad       one row's gradient from one worker                    row (8 B) + dim floats
parity_delta   one updated row, to its parity server (ECRec)         stripe (8 B) + record
repair         one lost position a replacement rebuilds (ECRec)      k x (stripe 8 B + record)
=============  ====================================================  ========================

:func:`layout` gives the coefficients the message layout implies (the scale model's defaults);
:func:`counted` derives them from a distributed run's counts, and a test checks that the two
agree, so the model charges what the processes really send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("lookup", "pooled", "row_grad", "parity_delta", "repair")


@dataclass(frozen=True)
class TrafficProfile:
    """Bytes per unit of work, by kind (see the module docstring)."""

    lookup: float
    pooled: float
    row_grad: float
    parity_delta: float
    repair: float

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in KINDS}


def layout(dim: int, record_bytes: int, k: int) -> TrafficProfile:
    """The coefficients of the protocol's message layout."""
    return TrafficProfile(
        lookup=16.0,
        pooled=4.0 + 4.0 * dim,
        row_grad=8.0 + 4.0 * dim,
        parity_delta=8.0 + record_bytes,
        repair=k * (8.0 + record_bytes),
    )


def counted(traffic: dict[str, int], units: dict[str, int]) -> dict[str, float | None]:
    """Counted bytes per unit, by kind (None where the run did no such work)."""
    out: dict[str, float | None] = {}
    for kind in KINDS:
        n = units.get(kind, 0)
        out[kind] = traffic.get(kind, 0) / n if n else None
    return out


def step_units(ctx: Any, step: int) -> dict[str, int]:
    """The units of work of training step ``step`` of a distributed run's configuration: the
    lookups, the sparse partial sums, the (worker, row) gradients and the updated rows."""
    import numpy as np

    shard = ctx.shard
    b = ctx.batch(step)
    g = shard.global_rows(b.ids)
    units = {"lookup": int(g.size), "pooled": 0, "row_grad": 0}
    for sl in ctx.slices:
        gw = g[:, sl]
        node = shard.node_of_row[gw]
        t_n, b_n, _ = gw.shape
        slot = (np.arange(b_n)[None, :, None] * t_n + np.arange(t_n)[:, None, None]) * shard.nodes
        units["pooled"] += int(np.unique((slot + node).ravel()).size)
        units["row_grad"] += int(np.unique(gw).size)
    units["parity_delta"] = int(np.unique(g).size) * (1 if ctx.coded else 0)
    return units
