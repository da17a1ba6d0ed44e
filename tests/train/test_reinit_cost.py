"""The ``none`` strategy's recovery cost recomputed from its stated mechanism
(nmp/train/strategies/reinit.py, nmp/train/cost.py): the failed node's rows are re-initialized,
each written once at the store's cost per record write (the running mean per updated row), so

    reinit time   = rows on the failed node x ns per updated row
    reinit energy = rows on the failed node x pJ per updated row

and nothing of it is restored later. A 10-step tiny run with two failures (about a second).
"""

from __future__ import annotations

import pytest

from nmp.train.failures import Failure
from nmp.train.trainer import run
from tests.train.conftest import tiny


def test_reinit_writes_each_row_of_the_failed_shard_once():
    failures = [Failure(3, 1), Failure(6, 3)]
    res = run(tiny(steps=10), "none", failures)
    store, cost = res.trainer.store, res.trainer.cost
    shards = [len(store.rows_on_node(n)) for n in range(res.trainer.cfg.nodes)]
    # The shards partition the table rows, about equally: a failed node holds ~1/nodes of them.
    assert sum(shards) == store.total_rows
    assert max(shards) - min(shards) <= 0.1 * store.total_rows / len(shards)
    lost = shards[1] + shards[3]
    assert [e["reinitialized_rows"] for e in res.events if "reinitialized_rows" in e] == [
        shards[1],
        shards[3],
    ]
    assert cost.ns_per_update > 0 and cost.pj_per_update > 0
    assert res.ledger.t_ns["reinit"] == pytest.approx(lost * cost.ns_per_update, rel=1e-12)
    assert res.ledger.energy_pj["reinit"] == pytest.approx(lost * cost.pj_per_update, rel=1e-12)
    assert res.extra["recovery_ns"] == pytest.approx(res.ledger.t_ns["reinit"], rel=1e-12)


def test_one_failure_reinit_is_one_shard_at_the_write_cost():
    res = run(tiny(steps=6), "none", [Failure(2, 0)])
    rows = len(res.trainer.store.rows_on_node(0))
    assert rows > 0
    assert res.ledger.t_ns["reinit"] == pytest.approx(
        rows * res.trainer.cost.ns_per_update, rel=1e-12
    )
