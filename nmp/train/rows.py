"""One run's row of ``nmp train --compare`` against the failure-free baseline, and the AUC
change with its noise band: shared by the comparison (:mod:`nmp.train.compare`) and the
compressed rows (:mod:`nmp.train.alltoall.report`), which the comparison calls (no file cycle).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nmp.results import jsonable
from nmp.train.trainer import RunResult


def auc_change(res: Any, base: Any | None) -> tuple[float | None, float | None]:
    """AUC change against ``base`` and its noise: 1.96 x the standard error of the difference
    of two AUCs on the same held-out set (of any two results with ``metrics``: runs of either
    trainer), taken as independent (Hanley-McNeil SEs; ignoring the
    positive correlation of the two models' scores makes this band wider than a paired test's,
    so "inside the noise" is the cautious verdict)."""
    m, b = res.metrics, (base.metrics if base else None)
    if b is None or m["auc"] is None or b["auc"] is None:
        return None, None
    return m["auc"] - b["auc"], 1.96 * float(np.hypot(m["auc_se"], b["auc_se"]))


def result_row(res: RunResult, base: RunResult | None) -> dict[str, Any]:
    ex = res.extra
    change, noise = auc_change(res, base)
    se = res.metrics["auc_se"]
    row: dict[str, Any] = {
        "strategy": res.strategy,
        "overhead_pct": (
            100.0 * (res.ledger.total_ns / base.ledger.total_ns - 1.0) if base else 0.0
        ),
        "recovery_ns": float(ex.get("recovery_ns", 0.0)),
        "time_to_full_redundancy_ns": ex.get("time_to_full_redundancy_ns"),
        "memory_overhead_pct": 100.0 * float(ex.get("memory_overhead", 0.0)),
        "auc": res.metrics["auc"],
        "auc_ci95": None if se is None else 1.96 * se,
        "auc_teacher": res.metrics.get("auc_teacher"),  # the synthetic teacher's ceiling
        "eval_samples": res.metrics["samples"],
        "auc_change": change,
        "auc_change_noise95": noise,
        "auc_change_within_noise": (
            None if change is None or noise is None else bool(abs(change) <= noise)
        ),
        "logloss": res.metrics["logloss"],
        "accuracy": res.metrics["accuracy"],
        "final_state_sha256": res.final_state_sha256,
        "modeled_time_ns": res.ledger.total_ns,
        "modeled_energy_pj": res.ledger.total_energy_pj,
        "time_breakdown_ns": {k: v for k, v in res.ledger.t_ns.items() if v},
        "events": res.events,
        "details": {k: v for k, v in ex.items() if k not in ("recovery_ns", "memory_overhead")},
    }
    if base is not None:
        row["identical_to_failure_free"] = res.final_state_sha256 == base.final_state_sha256
    return jsonable(row)


__all__ = ["auc_change", "result_row"]
