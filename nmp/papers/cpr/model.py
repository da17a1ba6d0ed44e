"""Model values for CPR's published claims (``claims.toml`` beside this file), under a setup.

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
from nmp.plugins import claim_model, reference
from nmp.train.extrapolate import DeploymentSpec, expected, row_labels
from nmp.train.setup import deployment_of


@functools.cache
def _expected(dep: DeploymentSpec) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in expected(dep)}


def _get(
    rows: dict[str, dict[str, Any]], strategy: str, dep: DeploymentSpec
) -> tuple[str, dict[str, Any]]:
    """``strategy``'s row; full recovery's at the checkpoint interval where it costs least
    (one row per interval at scale)."""
    own = {k: v for k, v in rows.items() if k in row_labels(strategy, dep)}
    if not own:
        raise NmpError(f"no strategy '{strategy}' at scale (known: {', '.join(rows)})")
    return min(own.items(), key=lambda kv: kv[1]["overhead_pct"])


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
    dep = deployment_of(setup, reference(overhead_pct))
    name, row = _get(_expected(dep), strategy, dep)
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
    dep = deployment_of(setup, reference(overhead_lower))
    rows = _expected(dep)
    (bn, b), (wn, w) = _get(rows, better, dep), _get(rows, worse, dep)
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
    :func:`_accuracy_on_par`). The trainer's tables are the kit's small
    ones whatever the deployment: setup keys are checked, and do not change this experiment."""
    deployment_of(setup, reference(accuracy_on_par))
    return _accuracy_on_par(quick=quick, steps=steps, seed=seed)


@functools.cache
def _small_compare(steps: int, seed: int) -> tuple:
    from nmp.train.compare import default_failures, run_compare
    from nmp.train.config import TrainConfig

    cfg = TrainConfig(steps=steps, seed=seed, max_tables=8, max_rows=1000, eval_batches=64)
    rows = run_compare(cfg, default_failures(cfg), ("checkpoint", "cpr-mfu", "cpr-ssu"))
    return tuple(rows)


def _accuracy_on_par(*, quick: bool, steps: int = 600, seed: int = 0) -> dict[str, Any]:
    """Whether CPR's AUC after a failure stays within the noise of full recovery's (the trainer
    on the synthetic teacher; the noise band is the 95 % interval of the AUC difference)."""
    rows = {r["strategy"]: r for r in _small_compare(steps if not quick else 200, seed)}
    full = rows["checkpoint"]
    ok, parts = True, []
    for name in ("cpr-mfu", "cpr-ssu"):
        d = rows[name]["auc"] - full["auc"]
        noise = math.hypot(rows[name]["auc_ci95"], full["auc_ci95"])  # = 1.96 x SE of d
        ok &= abs(d) <= noise
        parts.append(f"{name} {d:+.4f} (noise ±{noise:.4f})")
    return {"value": bool(ok), "detail": "AUC vs full recovery: " + ", ".join(parts)}
