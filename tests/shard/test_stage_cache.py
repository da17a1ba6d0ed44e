"""The GPU stages a placement's cost keeps by content (nmp/shard/cost.py, ``stage_ns``): a kept
time is the GPU model's own for those inputs, and any input the model reads (a row id, a bag's
bounds, a weight, a table's size, the element bytes, the GPU) makes another entry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import nmp.shard.cost as cost
from nmp.gpu import load_gpu
from nmp.gpu.model import embedding_stage
from nmp.shard.placement import Placement, TablePlacement
from nmp.shard.topology import load_topology
from nmp.workload import LookupBatch, TableLookups

ROWS, DIM = 50_000, 32


def _lookups(seed: int = 0, n: int = 2048, bags: int = 64) -> TableLookups:
    idx = np.random.default_rng(seed).integers(0, ROWS, n, dtype=np.int64)
    return TableLookups(idx, np.linspace(0, n, bags + 1).astype(np.int64), None, ROWS, DIM)


@pytest.fixture
def empty_cache(monkeypatch):
    kept = cost.KeyedCache(64)
    monkeypatch.setattr(cost, "_STAGE_NS", kept)
    return kept


def test_a_kept_stage_is_the_models_time(empty_cache):
    gpu = load_gpu("a100-80gb")
    subs = [_lookups(1), _lookups(2)]
    want = embedding_stage(gpu, LookupBatch(tuple(subs)), elem_bytes=[4, 2]).t_ns
    first = cost.stage_ns(gpu, repr(gpu), subs, [4, 2])
    assert len(empty_cache) == 1
    again = cost.stage_ns(gpu, repr(gpu), [_lookups(1), _lookups(2)], [4, 2])
    assert first == again == want
    assert len(empty_cache) == 1  # the same content, new arrays: one entry


def _variants(lk: TableLookups) -> dict[str, tuple[TableLookups, int]]:
    moved = lk.indices.copy()
    moved[7] = (moved[7] + 1) % ROWS
    offsets = lk.offsets.copy()
    offsets[1] += 1
    weights = np.ones(lk.indices.size, dtype=np.float32)
    return {
        "one row id": (dataclasses.replace(lk, indices=moved), 4),
        "a bag's bounds": (dataclasses.replace(lk, offsets=offsets), 4),
        "weights": (dataclasses.replace(lk, weights=weights), 4),
        "the table's rows": (dataclasses.replace(lk, num_rows=ROWS * 2), 4),
        "the dimension": (dataclasses.replace(lk, dim=DIM * 2), 4),
        "the element bytes": (lk, 2),
        "the indices' type": (dataclasses.replace(lk, indices=lk.indices.astype(np.int32)), 4),
    }


def test_every_input_the_model_reads_is_in_the_key():
    gpu = load_gpu("a100-80gb")
    lk = _lookups(3)
    base = cost._stage_key(repr(gpu), [lk], [4])
    keys = {name: cost._stage_key(repr(gpu), [v], [eb]) for name, (v, eb) in _variants(lk).items()}
    keys["the GPU"] = cost._stage_key(repr(load_gpu("h200")), [lk], [4])
    keys["the GPU's variant"] = cost._stage_key(
        repr(load_gpu("a100-80gb", {"variant": "combined"})), [lk], [4]
    )
    assert base not in keys.values()
    assert len(set(keys.values())) == len(keys)


def test_a_placements_cost_is_the_same_kept_or_not(empty_cache):
    """Two tables on two GPUs, half of each table's rows in HBM: the cost evaluated twice
    (the second from the kept stages) equals the one priced afresh."""
    topo = load_topology("a100x8-pcie4", {"gpus": 2})
    batch = LookupBatch((_lookups(4), _lookups(5)))
    hot = np.arange(ROWS // 2, dtype=np.int64)
    placement = Placement("test", 2, (TablePlacement(0, ROWS, hot), TablePlacement(1, ROWS, hot)))
    fresh = cost.evaluate(placement, topo, [batch], [4, 4])
    assert len(empty_cache) == 2
    kept = cost.evaluate(placement, topo, [batch], [4, 4])
    assert len(empty_cache) == 2
    assert kept.step_ns == fresh.step_ns and np.array_equal(kept.hbm_ns, fresh.hbm_ns)
    assert fresh.hbm_ns.min() > 0
