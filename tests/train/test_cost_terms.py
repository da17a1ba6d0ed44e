"""Each term of the training cost model (nmp/train/cost.py, behind ``nmp train --compare``)
recomputed by hand from its stated formula, on a stand-in hardware backend whose prices are
round numbers (the backends themselves are the architecture's, tested in tests/arch):

    dense step        = 6 flops x MLP weights x batch / host_flops
    degraded decode   = rows x k shard reads x (ns, pJ) per lookup
    rebuild of stripes = the backend's read of every data record of the stripes
                        + one record write per stripe at (ns, pJ) per updated row
    storage           = bytes / storage_gbps   (GB/s = bytes per ns)
    write rows        = rows x (ns, pJ) per updated row
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from nmp.train.config import TrainConfig
from nmp.train.cost import CostLedger, CostModel
from nmp.train.trainer import Geometry

# The stand-in backend's prices.
NS_PER_LOOKUP, PJ_PER_LOOKUP = 2.0, 5.0
NS_PER_UPDATE, PJ_PER_UPDATE = 30.0, 70.0
NS_PER_RECORD_READ, PJ_PER_RECORD_READ = 3.0, 11.0

# Three tables of 10 rows, dim 8, batch 32: bottom MLP 13 -> 16 -> 8, top MLP over the
# interaction (8 + the 4 x 3 / 2 pairs of the 3 + 1 feature vectors = 14) -> 16 -> 1.
GEO = Geometry(
    table_rows=(10, 10, 10), dim=8, batch=32, pooling=2, alpha=1.05, bottom=(16, 8), top=(16, 1)
)
WEIGHTS = 13 * 16 + 16 * 8 + 14 * 16 + 16 * 1  # = 576
K = 4
RECORD_BYTES = 64


class StubBackend:
    name = "stub"

    def __init__(self) -> None:
        self.read_calls: list[np.ndarray] = []

    def gather(self, batch):
        n = batch.ids.size
        return n * NS_PER_LOOKUP, n * PJ_PER_LOOKUP

    def update(self, rows):
        return len(rows) * NS_PER_UPDATE, len(rows) * PJ_PER_UPDATE

    def read_records(self, rows):
        self.read_calls.append(np.array(rows))
        return rows.size * NS_PER_RECORD_READ, rows.size * PJ_PER_RECORD_READ


@pytest.fixture
def model(monkeypatch):
    """``model(**cfg)`` -> a calibrated CostModel on the stub backend (k = 4, 30 rows)."""
    import nmp.train.hwcost as hwcost

    def make(**kw):
        backend = StubBackend()
        monkeypatch.setattr(hwcost, "make_backend", lambda cfg, geo, store: backend)
        store = SimpleNamespace(
            k=K, total_rows=GEO.total_rows, record_bytes=RECORD_BYTES, counters={"decoded_rows": 0}
        )
        cm = CostModel(TrainConfig(**kw), GEO, store)
        assert cm.backend is backend
        # One timed step: 96 lookups and 12 updated rows set the running means.
        cm.calibrate(SimpleNamespace(ids=np.zeros((32, 3))), np.arange(12))
        assert cm.ns_per_lookup == NS_PER_LOOKUP and cm.pj_per_lookup == PJ_PER_LOOKUP
        assert cm.ns_per_update == NS_PER_UPDATE and cm.pj_per_update == PJ_PER_UPDATE
        return cm

    return make


def test_the_mlp_weight_count_is_the_models():
    from nmp.train.data import NUM_DENSE
    from nmp.train.model import DenseDLRM

    net = DenseDLRM(NUM_DENSE, 3, GEO.dim, GEO.bottom, GEO.top)
    weights = sum(p.numel() for n, p in net.named_parameters() if n.endswith("weight"))
    assert NUM_DENSE == 13 and weights == WEIGHTS == 576


def test_a_dense_step_is_six_flops_per_weight_per_sample(model):
    # Default host: 1 TFLOP/s. 6 x 576 x 32 / 1e12 s = 110.592 ns.
    assert model().dense_ns_per_step == pytest.approx(110.592, rel=1e-12)
    assert model(host_flops=2.0e12).dense_ns_per_step == pytest.approx(55.296, rel=1e-12)
    assert model().dense_ns_per_step == pytest.approx(
        6.0 * WEIGHTS * GEO.batch / 1.0e12 * 1e9, rel=1e-12
    )


def test_a_steps_ledger_carries_the_dense_time(model):
    cm = model()
    ledger = CostLedger()
    batch = SimpleNamespace(ids=np.zeros((32, 3)))
    cm.charge_step(ledger, 1, batch, np.arange(12))
    assert ledger.t_ns["dense"] == pytest.approx(110.592, rel=1e-12)
    assert ledger.t_ns["gather"] == 96 * NS_PER_LOOKUP
    assert ledger.t_ns["update"] == 12 * NS_PER_UPDATE


def test_the_baseline_step_is_the_step_the_trainer_charges(model):
    """``baseline_step_ns`` (a failure-free step, which converts the checkpoint interval's MTBF
    and ECRec's rebuild budget from steps to time) is the critical path charge_step charges a
    step of the geometry's lookups and the mean rows: gather, dense, optimizer in series."""
    cm = model()
    ledger = CostLedger()
    batch = SimpleNamespace(ids=np.zeros((32, 3, 2)))  # batch x tables x pooling = 192 lookups
    cm.charge_step(ledger, 1, batch, np.arange(12))  # 12 rows: the calibrated mean
    assert cm.baseline_step_ns() == pytest.approx(ledger.step_ns[-1], rel=1e-12)
    assert cm.baseline_step_ns() == pytest.approx(
        192 * NS_PER_LOOKUP + 12 * NS_PER_UPDATE + 110.592, rel=1e-12
    )


def test_a_degraded_read_reads_k_shards_per_lost_row(model):
    cm = model()
    t, e = cm.decode_cost(10)
    assert (t, e) == (10 * K * NS_PER_LOOKUP, 10 * K * PJ_PER_LOOKUP) == (80.0, 200.0)


def test_a_degraded_read_is_in_series_with_the_step(model):
    # Two identical steps, the second after 5 rows were decoded: it takes 5 x 4 x 2 ns longer.
    cm = model()
    ledger = CostLedger()
    batch = SimpleNamespace(ids=np.zeros((32, 3)))
    cm.charge_step(ledger, 1, batch, np.arange(12))
    cm.store.counters["decoded_rows"] += 5
    cm.charge_step(ledger, 2, batch, np.arange(12))
    assert ledger.step_ns[1] - ledger.step_ns[0] == pytest.approx(40.0, rel=1e-12)
    assert ledger.t_ns["degraded_decode"] == 40.0
    assert ledger.energy_pj["degraded_decode"] == 5 * K * PJ_PER_LOOKUP


def test_a_rebuild_reads_every_data_record_of_its_stripes_and_writes_one(model):
    # Stripes 0, 2 and 7 of 4 rows each (rows 28-31 of stripe 7: 30 and 31 are padding past
    # the 30 rows, read as the last row): 12 record reads + 3 record writes.
    cm = model()
    t, e = cm.rebuild_cost(node=1, stripes=np.array([0, 2, 7]))
    (rows,) = cm.backend.read_calls
    assert rows.tolist() == [[0, 1, 2, 3], [8, 9, 10, 11], [28, 29, 29, 29]]
    assert t == pytest.approx(12 * NS_PER_RECORD_READ + 3 * NS_PER_UPDATE, rel=1e-12)
    assert e == pytest.approx(12 * PJ_PER_RECORD_READ + 3 * PJ_PER_UPDATE, rel=1e-12)
    assert (t, e) == (126.0, 342.0)


def test_storage_moves_bytes_at_storage_gbps(model):
    # GB/s = bytes per ns: 4 GB at the default 2 GB/s (one NVMe SSD) take 2 s.
    assert model().storage_ns(4e9) == pytest.approx(2e9, rel=1e-12)
    assert model(storage_gbps=8.0).storage_ns(4e9) == pytest.approx(5e8, rel=1e-12)


def test_writing_rows_back_costs_an_update_each(model):
    cm = model()
    assert cm.write_rows_cost(100) == (100 * NS_PER_UPDATE, 100 * PJ_PER_UPDATE)
    assert cm.write_rows_cost(100) == (3000.0, 7000.0)
    # Copying bytes between nodes: a record's worth of bytes costs one update.
    assert cm.copy_bytes_cost(10 * RECORD_BYTES) == (300.0, 700.0)
