"""Execute a placement: each GPU pools its tables' lookups from its HBM shard and from the host
shard (unified memory), and the two partial sums of a bag add up to the bag's output.

The result must equal ``torch.nn.EmbeddingBag(mode="sum")`` on the unsharded table: that is
what :func:`check_placement` asserts (exactly, up to float32 summation order; the tolerance is
the float32 rounding of a reordered sum).
"""

from __future__ import annotations

import numpy as np

from nmp.errors import NmpError
from nmp.shard.placement import Placement, shard_lookups
from nmp.workload import LookupBatch, TableLookups


def table_values(num_rows: int, dim: int, seed: int, table: int) -> np.ndarray:
    """Deterministic float32 contents of one table (rows x dim)."""
    return np.random.default_rng([seed, table]).standard_normal((num_rows, dim), dtype=np.float32)


def _bag(values: np.ndarray, lk: TableLookups, keep: np.ndarray, local: np.ndarray):
    # torch: loaded on use (start-up time)
    import torch

    if values.shape[0] == 0:
        return torch.zeros((lk.batch, lk.dim), dtype=torch.float32)
    sub = shard_lookups(lk, keep, local, values.shape[0])
    w = None if sub.weights is None else torch.from_numpy(sub.weights)
    bag = torch.nn.EmbeddingBag.from_pretrained(
        torch.from_numpy(values), mode="sum", include_last_offset=True
    )
    return bag(
        torch.from_numpy(sub.indices), torch.from_numpy(sub.offsets), per_sample_weights=w
    ).detach()


def execute(placement: Placement, batch: LookupBatch, values: list[np.ndarray]) -> list[np.ndarray]:
    """Pooled outputs (batch x dim per table) computed from the placed shards."""
    out = []
    for t, (tp, lk) in enumerate(zip(placement.tables, batch.tables, strict=True)):
        full = values[t]
        hbm_shard = full if tp.hbm_rows is None else full[tp.hbm_rows]
        host_shard = full[tp.host_rows()]
        hit, local = tp.route(lk.indices)
        pooled = _bag(hbm_shard, lk, hit, local) + _bag(host_shard, lk, ~hit, local)
        out.append(pooled.numpy())
    return out


def reference(batch: LookupBatch, values: list[np.ndarray]) -> list[np.ndarray]:
    """``torch.nn.EmbeddingBag`` on the unsharded tables."""
    return [
        _bag(values[t], lk, np.ones(lk.num_lookups, dtype=bool), lk.indices).numpy()
        for t, lk in enumerate(batch.tables)
    ]


def check_placement(placement: Placement, batch: LookupBatch, seed: int = 0) -> float:
    """Run both and return the largest absolute difference; raise if it exceeds float32
    rounding of the reordered sums."""
    values = [table_values(lk.num_rows, lk.dim, seed, t) for t, lk in enumerate(batch.tables)]
    got, want = execute(placement, batch, values), reference(batch, values)
    worst = 0.0
    for t, (a, b) in enumerate(zip(got, want, strict=True)):
        diff = float(np.abs(a - b).max()) if a.size else 0.0
        scale = float(np.abs(b).max()) if b.size else 0.0
        longest = int(batch.tables[t].lengths.max()) if batch.batch else 0
        if diff > 1e-6 * max(scale, 1.0) * max(longest, 1):
            raise NmpError(f"sharded execution differs from EmbeddingBag on table {t} by {diff}")
        worst = max(worst, diff)
    return worst
