"""The trainer's step costs are the architecture's own timings (nmp/train/hwcost.py,
``ArchBackend``), and the scale model's step is built from them (nmp/train/extrapolate.py):

    gather           = gather_reduce(the batch's lookups, the capped tables).t_ns on the design
    coded update     = parity_update(the touched rows) on the design with the store's k and r
    plain update     = 2 x the read of the touched records (read old, write new)
    scale gather     = the gather of one batch / servers (each server gathers its share)
    scale dense      = 6 flops x MLP weights x batch / (workers x host_flops)

Each side is recomputed here on its own instance of the design, not through the backend.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from nmp.arch.point import load_arch
from nmp.train.config import TrainConfig
from nmp.train.data import NUM_DENSE, Batch
from nmp.train.hwcost import ArchBackend
from nmp.workload.spec import TableSpec

ROWS = (4096, 4096, 4096)
DIM, BATCH, POOL = 16, 64, 4
K, R = 4, 1
RECORD_BYTES = DIM * 4


@pytest.fixture(scope="module")
def setup():
    cfg = TrainConfig(nodes=5, arch="recnmp", seed=0)
    geo = SimpleNamespace(table_rows=ROWS, dim=DIM, batch=BATCH, pooling=POOL)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, ROWS[0], (len(ROWS), BATCH, POOL), dtype=np.int64)
    batch = Batch(dense=np.zeros((BATCH, NUM_DENSE), np.float32), ids=ids, label=np.zeros(0))
    rows = np.unique(ids[0].reshape(-1))
    coded = ArchBackend(cfg, geo, SimpleNamespace(k=K, r=R, record_bytes=RECORD_BYTES))
    plain = ArchBackend(cfg, geo, SimpleNamespace(k=5, r=0, record_bytes=RECORD_BYTES))
    return cfg, batch, rows, coded, plain


def test_a_gather_is_the_architectures_gather_reduce_of_the_batch(setup):
    cfg, batch, _, coded, _ = setup
    arch = load_arch("recnmp", None, data_seed=cfg.seed)
    tables = [TableSpec(rows=n, dim=DIM) for n in ROWS]
    _, res = arch.gather_reduce(coded.lookup_batch(batch), tables, functional=False)
    assert res.t_ns > 0
    assert coded.gather(batch) == pytest.approx((res.t_ns, res.total_energy_pj), rel=1e-12)


def test_a_coded_update_is_the_parity_update_of_the_touched_rows(setup):
    cfg, _, rows, coded, _ = setup
    arch = load_arch(
        "recnmp", None, {"parity.k": K, "parity.r": R, "parity.code": "xor"}, data_seed=cfg.seed
    )
    arch.bind([TableSpec(rows=sum(ROWS), dim=DIM)])
    res = arch.parity_update(rows, np.zeros((len(rows), DIM), np.float32))
    assert res.t_ns > 0
    assert coded.update(rows) == pytest.approx((res.t_ns, res.total_energy_pj), rel=1e-12)


def test_a_plain_update_reads_the_old_record_and_writes_the_new(setup):
    _, _, rows, _, plain = setup
    read_ns, read_pj = plain.read_records(rows[:, None])
    assert read_ns > 0
    assert plain.update(rows) == pytest.approx((2 * read_ns, 2 * read_pj), rel=1e-12)


def test_the_scale_steps_gather_and_dense_are_the_backends_over_servers_and_workers():
    from nmp.train.extrapolate import _mlp_weights, step_costs
    from nmp.train.setup import load_setup
    from nmp.workload import generate_batch, load_workload

    dep = load_setup("ecrec")[0]
    # The artifact's 197 M-row table only sets sizes; a 64-sample batch keeps the gather short.
    dep = replace(dep, batch=64)
    c = step_costs(dep)
    spec = replace(load_workload(dep.workload), batch=64)
    lb = generate_batch(spec, seed=dep.seed)
    ids = np.stack([t.indices.reshape(64, -1) for t in lb.tables])
    geo = SimpleNamespace(
        table_rows=tuple(t.rows for t in spec.tables), pooling=1, dim=dep.dim, batch=64
    )
    cfg = TrainConfig(workload=dep.workload, nodes=dep.servers, arch=dep.arch, seed=dep.seed)
    store = SimpleNamespace(record_bytes=c.record_bytes, k=dep.servers, r=0)
    batch = Batch(dense=np.zeros((64, NUM_DENSE), np.float32), ids=ids, label=np.zeros(0))
    gather_ns = ArchBackend(cfg, geo, store).gather(batch)[0]
    assert c.gather_ns == pytest.approx(gather_ns / dep.servers, rel=1e-12)
    mlp = _mlp_weights(1 if dep.one_bag else len(spec.tables), dep.dim, dep.bottom, dep.top)
    dense_ns = 6.0 * mlp * 64 / (dep.workers * dep.host_flops) * 1e9
    assert c.step_ns - c.gather_ns - c.upd_plain_ns == pytest.approx(dense_ns, rel=1e-9)
