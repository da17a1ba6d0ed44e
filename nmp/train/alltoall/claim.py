"""SC'24's accuracy claim for ``nmp validate``: compressed training's AUC within noise."""

from __future__ import annotations

from typing import Literal

from nmp.plugins import claim_model
from nmp.train.alltoall.report import compression_summary


@claim_model
def accuracy_claim(
    *,
    quick: bool,
    workload: str,
    codec: str,
    eb: float,
    eb_schedule: Literal["constant", "decay"],
    steps: int,
) -> dict:
    """SC'24 claim model: is compressed training's AUC change within the noise of the
    held-out set (Hanley-McNeil, 95 %)? ``quick`` runs a third of the steps."""
    from dataclasses import replace

    from nmp.train.config import TrainConfig
    from nmp.train.rows import auc_change
    from nmp.train.trainer import run

    n = max(30, steps // 3) if quick else steps
    cfg = TrainConfig(workload=workload, steps=n)
    base = run(cfg, "none", [])
    res = run(replace(cfg, compress=codec, eb=eb, eb_schedule=eb_schedule), "none", [])
    change, noise = auc_change(res, base)
    ratio = compression_summary(res)["compression_ratio"]
    return {
        "value": bool(change is not None and noise is not None and abs(change) <= noise),
        "detail": (
            f"{workload}, {n} steps, {cfg.nodes} nodes, {codec} eb {eb} ({eb_schedule}): AUC "
            f"{res.metrics['auc']:.4f} vs {base.metrics['auc']:.4f}, change {change:+.4f} "
            f"(noise ±{noise:.4f}), ratio {ratio:.2f} in training"
        ),
    }
