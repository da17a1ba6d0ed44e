"""Model values for CPR's published claims (``nmp/validate/claims/cpr.toml``), under a setup.

Setup keys (``setup``; None = the kit's defaults):

* ``train.deployment``: the deployment the closed form runs on: ``"default"`` (the kit's own
  :class:`~nmp.train.extrapolate.DeploymentSpec`, what ``nmp train --extrapolate`` runs without
  ``--setup``) or a file of ``workloads/train/`` (``"cpr"``: CPR's workload with a chosen
  emulated cluster);
* ``train.<field>``: any field of :class:`~nmp.train.extrapolate.DeploymentSpec` over it.

Each value is the closed-form expectation of :func:`nmp.train.extrapolate.expected`; CPR's
partial saves are modeled row by row (:mod:`nmp.train.partial_save`), so CPR-MFU and CPR-SSU
differ in what they write and in the updates a failure loses (``pls_effective``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.errors import NmpError
from nmp.plugins import claim_model
from nmp.train.claims import cpr_accuracy_on_par, deployment_of
from nmp.train.extrapolate import DeploymentSpec, expected
from nmp.train.strategies.checkpointing import FullCheckpoint


@functools.cache
def _expected(dep: DeploymentSpec) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in expected(dep)}


def _checkpoint(rows: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Full recovery at the checkpoint interval where it costs least."""
    ck = {k: v for k, v in rows.items() if k.startswith("checkpoint")}
    if not ck:
        raise NmpError("the deployment has no checkpoint strategy row")
    return min(ck.items(), key=lambda kv: kv[1]["overhead_pct"])


def _get(rows: dict[str, dict[str, Any]], strategy: str) -> tuple[str, dict[str, Any]]:
    if strategy == FullCheckpoint.name:  # its best interval's row (several at scale)
        return _checkpoint(rows)
    if strategy not in rows:
        raise NmpError(f"no strategy '{strategy}' at scale (known: {', '.join(rows)})")
    return strategy, rows[strategy]


def _describe(dep: DeploymentSpec) -> str:
    return (
        f"deployment {dep.name} ({dep.workload}, {dep.servers} servers, server MTBF "
        f"{dep.server_mtbf_hours:g} h, {dep.storage_gbps:g} GB/s storage each, restart "
        f"{dep.restart_s:g} s)"
    )


@claim_model
def overhead_pct(
    *, quick: bool, strategy: str, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Expected training-time overhead (%) of ``strategy``, failures included; for a CPR
    strategy the detail gives its partial saves' effective portion of lost samples."""
    dep = deployment_of(setup, "nmp.train.cpr_claims:overhead_pct")
    name, row = _get(_expected(dep), strategy)
    extra = ""
    if "pls_effective" in row:
        extra = (
            f"; PLS with partial saves {100 * row['pls_effective']:.2f} % "
            f"(bound {100 * dep.cpr_pls:g} %)"
        )
    return {
        "value": row["overhead_pct"],
        "detail": f"{_describe(dep)}: {name} {row['overhead_pct']:.3g} % "
        f"({row['overhead_no_failure_pct']:.3g} % without failures){extra}",
    }


@claim_model
def overhead_lower(
    *, quick: bool, better: str, worse: str, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Whether ``better``'s expected overhead is below ``worse``'s; ``margin`` is the relative
    lead (worse / better - 1)."""
    dep = deployment_of(setup, "nmp.train.cpr_claims:overhead_lower")
    rows = _expected(dep)
    (bn, b), (wn, w) = _get(rows, better), _get(rows, worse)
    bv, wv = b["overhead_pct"], w["overhead_pct"]
    return {
        "value": bool(bv < wv),
        "margin": wv / bv - 1.0 if bv > 0 else math.inf,
        "detail": f"{_describe(dep)}: {bn} {bv:.3g} % vs {wn} {wv:.3g} %",
    }


@claim_model
def accuracy_on_par(
    *, quick: bool, steps: int = 600, seed: int = 0, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """CPR's AUC after a failure against full recovery's on the CPU-sized trainer (see
    :func:`nmp.train.claims.cpr_accuracy_on_par`). The trainer's tables are the kit's small
    ones whatever the deployment: setup keys are checked, and do not change this experiment."""
    deployment_of(setup, "nmp.train.cpr_claims:accuracy_on_par")
    return cpr_accuracy_on_par(quick=quick, steps=steps, seed=seed)
