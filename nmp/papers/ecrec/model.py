"""Model values for ECRec's published claims (``claims.toml`` beside this file).

Each function computes its value from the model under ``setup``: the paper's (its claims file's
``[setup]``, ``train.deployment`` naming a file of ``workloads/train/``) or, with None, the kit's
default deployment; none reads the published figure. The setups' closed-form
expectations are cheap once the hardware model has timed a step (cached per setup), so every
claim but the accuracy one is quick.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.plugins import claim_model, reference
from nmp.train.extrapolate import DeploymentSpec, expected, recovery_parts_s, row_labels
from nmp.train.setup import deployment_of
from nmp.train.strategies.checkpointing import FullCheckpoint


@functools.cache
def _expected(dep: DeploymentSpec) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in expected(dep)}


@functools.cache
def _recovery_parts(dep: DeploymentSpec) -> dict[str, float]:
    return recovery_parts_s(dep)


def _rows_of(
    rows: dict[str, dict[str, Any]], strategy: str, dep: DeploymentSpec
) -> dict[str, dict[str, Any]]:
    """``strategy``'s rows by label (checkpointing: one per checkpoint interval)."""
    return {k: v for k, v in rows.items() if k in row_labels(strategy, dep)}


def _checkpoints(rows: dict[str, dict[str, Any]], dep: DeploymentSpec) -> dict[str, dict[str, Any]]:
    return _rows_of(rows, FullCheckpoint.name, dep)


def _where(dep: DeploymentSpec) -> str:
    return f"deployment {dep.name} ({dep.servers} servers, {dep.workers} workers)"


@claim_model
def overhead_reduction_pct(
    *, quick: bool, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """How much of checkpointing's failure-free training overhead ECRec removes (%), against
    the checkpoint interval where checkpointing costs most ("up to")."""
    dep = deployment_of(setup, reference(overhead_reduction_pct))
    rows = _expected(dep)
    name, ck = max(_checkpoints(rows, dep).items(), key=lambda kv: kv[1]["overhead_no_failure_pct"])
    ec = rows["ecrec"]["overhead_no_failure_pct"]
    ck_pct = ck["overhead_no_failure_pct"]
    return {
        "value": 100.0 * (1.0 - ec / ck_pct),
        "detail": f"{_where(dep)}, no failure: ecrec {ec:.3g} % vs {name} {ck_pct:.3g} %",
    }


@claim_model
def recovery_speedup(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Checkpointing's recovery (load every shard, restart, re-execute the work since the last
    save: the ``recovery_s`` of its rows) over ECRec's rebuild of the lost shard, at the
    checkpoint interval where the ratio is largest ("up to")."""
    dep = deployment_of(setup, reference(recovery_speedup))
    rows = _expected(dep)
    p = _recovery_parts(dep)
    name, ck = max(_checkpoints(rows, dep).items(), key=lambda kv: kv[1]["recovery_s"])
    return {
        "value": ck["recovery_s"] / p["rebuild_s"],
        "detail": f"{_where(dep)}: {name} recovery {ck['recovery_s']:.3g} s (load "
        f"{p['load_s']:.3g} s + restart {p['restart_s']:.3g} s + re-execution) vs ECRec "
        f"rebuild {p['rebuild_s']:.3g} s",
    }


@claim_model
def overhead_lower(
    *, quick: bool, better: str, worse: str, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Whether ``better``'s expected overhead (with failures) is below ``worse``'s (the lowest
    of the checkpoint intervals when ``worse`` is ``checkpoint``); ``margin`` is the relative
    lead (worse / better - 1)."""
    dep = deployment_of(setup, reference(overhead_lower))
    rows = _expected(dep)

    def get(name):  # checkpointing: its best interval's row (several at scale)
        return min(v["overhead_pct"] for v in _rows_of(rows, name, dep).values())

    b, w = get(better), get(worse)
    return {
        "value": bool(b < w),
        "margin": w / b - 1.0 if b > 0 else math.inf,
        "detail": f"{_where(dep)}: {better} {b:.3g} % vs {worse} {w:.3g} %",
    }


@claim_model
def ecrec_never_pauses(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """ECRec's recovery pauses no training, where restoring a checkpoint does."""
    dep = deployment_of(setup, reference(ecrec_never_pauses))
    rows = _expected(dep)
    pause = rows["ecrec"]["recovery_s"]
    ck = min(v["recovery_s"] for v in _checkpoints(rows, dep).values())
    return {
        "value": bool(pause == 0.0 < ck),
        "detail": f"{_where(dep)}: ecrec pause {pause} s, checkpoint {ck:.3g} s",
    }
