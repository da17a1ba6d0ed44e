"""``none``: no protection of the tables; a failed node's rows are re-initialized."""

from __future__ import annotations

from typing import Any

from nmp.train.failures import Failure
from nmp.train.strategies.base import Strategy, register


@register
class Reinit(Strategy):
    """No protection of the tables: the failed node's rows are re-initialized."""

    name = "none"
    is_baseline = False
    scale_model = "reinit"

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        from nmp.train.trainer import init_records

        self._dense_failure(f.node)
        store = self.store
        store.fail_node(f.node)
        rows = store.rows_on_node(f.node)
        seed = self.cfg.seed + 7919 * (len(self.events) + 1)
        store.restore_rows(rows, init_records(self.t.geo, store.width, seed, rows))
        w_ns, w_pj = self.cost.write_rows_cost(len(rows))
        self.ledger.add("reinit", w_ns, w_pj)
        self.recovery_ns += w_ns
        self.redundancy_ns.append(None)
        self._event(f, reinitialized_rows=int(len(rows)))

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["time_to_full_redundancy_ns"] = None  # the lost state is never restored
        return out
