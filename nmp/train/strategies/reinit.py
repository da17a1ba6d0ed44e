"""``none``: no protection of the tables; a failed node's rows are re-initialized."""

from __future__ import annotations

from typing import Any

import numpy as np

from nmp.train.failures import Failure
from nmp.train.strategies.base import Strategy, register


@register
class Reinit(Strategy):
    """No protection of the tables: the failed node's rows are re-initialized."""

    name = "none"
    is_baseline = False
    listing_order = 3

    @classmethod
    def restore_replacement(
        cls, ctx, role: str, rows: np.ndarray, rec: dict[str, Any]
    ) -> np.ndarray:
        from nmp.train.trainer import init_records

        return init_records(ctx.geo, ctx.width, ctx.cfg.seed + 7919 * int(rec["gen"]), rows)

    @classmethod
    def scale_expected(cls, md, dep) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _row, steady_fraction

        return [_row(cls.name, steady_fraction(md, cls), md.reinit_ns / md.m_ns, md.reinit_ns)]

    @classmethod
    def scale_scheduled(cls, md, dep, horizon_ns: float, failure_steps) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _row, steady_fraction

        # one run's failures: the replacement's fresh rows; no restart (nothing rolls back: as
        # in scale_expected and scale_draws; a runtime's regroup is scheduled()'s)
        reinits = md.reinit_ns * len(failure_steps)
        rec = md.reinit_ns if failure_steps else 0.0
        return [_row(cls.name, steady_fraction(md, cls), reinits / horizon_ns, rec)]

    @classmethod
    def scale_draws(cls, md, dep, draws) -> list[tuple]:
        from nmp.train.extrapolate import steady_fraction

        per = md.reinit_ns
        extra = draws.per_trial(np.full(draws.t.size, per))
        return [(cls.name, steady_fraction(md, cls), extra, per, None, draws.replica, {})]

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
