"""Model values for the published claims of ECRec and CPR (``nmp validate``).

Each function computes its value from the model under ``setup``: the paper's (its claims file's
``[setup]``, ``train.deployment`` naming a file of ``workloads/train/``) or, with None, the kit's
default deployment; none reads the published figure. The setups' closed-form
expectations are cheap once the hardware model has timed a step (cached per setup), so every
claim but the accuracy one is quick.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

from nmp.claim_setup import resolve_setup
from nmp.plugins import claim_model
from nmp.train.extrapolate import DeploymentSpec, _model, expected
from nmp.train.setup import load_setup
from nmp.train.strategies.checkpointing import FullCheckpoint


@functools.cache
def setup_defaults() -> dict[str, Any]:
    """The setup keys a training claim takes: ``train.deployment`` (``"default"``: the kit's own
    :class:`~nmp.train.extrapolate.DeploymentSpec`, what ``nmp train --extrapolate`` runs
    without ``--setup``; or a file of ``workloads/train/``) and ``train.<field>`` for any field
    of the deployment over it."""
    fields = {f.name: f.default for f in dataclasses.fields(DeploymentSpec) if f.name != "name"}
    return {"train.deployment": "default", **{f"train.{k}": v for k, v in fields.items()}}


def deployment_of(setup: Mapping[str, Any] | None, fn: str) -> DeploymentSpec:
    """The deployment a claim's setup names (None: the kit's default deployment): its base
    (``train.deployment``) with the given fields over it."""
    defaults = setup_defaults()
    given = dict(setup or {})
    for key, value in list(given.items()):  # TOML has no tuples
        if isinstance(value, list) and isinstance(defaults.get(key), tuple):
            given[key] = tuple(value)
    v = resolve_setup(given if setup is not None else None, defaults, model=fn)
    name = v.pop("train.deployment")
    base = DeploymentSpec() if name == "default" else load_setup(name)[0]
    over = {k.removeprefix("train."): v[k] for k in given if k != "train.deployment"}
    dep = dataclasses.replace(base, **over)
    dep.validate()
    return dep


@functools.cache
def _expected(dep: DeploymentSpec) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in expected(dep)}


@functools.cache
def _recovery_parts(dep: DeploymentSpec) -> dict[str, float]:
    md = _model(dep)
    return {
        "load_s": md.load_ns / 1e9,
        "restart_s": md.restart_ns / 1e9,
        "rebuild_s": md.rebuild_ns / 1e9,
    }


def _checkpoints(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in rows.items() if k.startswith("checkpoint")}


def _where(dep: DeploymentSpec) -> str:
    return f"deployment {dep.name} ({dep.servers} servers, {dep.workers} workers)"


@claim_model
def overhead_reduction_pct(
    *, quick: bool, setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """How much of checkpointing's failure-free training overhead ECRec removes (%), against
    the checkpoint interval where checkpointing costs most ("up to")."""
    dep = deployment_of(setup, "nmp.train.claims:overhead_reduction_pct")
    rows = _expected(dep)
    name, ck = max(_checkpoints(rows).items(), key=lambda kv: kv[1]["overhead_no_failure_pct"])
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
    dep = deployment_of(setup, "nmp.train.claims:recovery_speedup")
    rows = _expected(dep)
    p = _recovery_parts(dep)
    name, ck = max(_checkpoints(rows).items(), key=lambda kv: kv[1]["recovery_s"])
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
    dep = deployment_of(setup, "nmp.train.claims:overhead_lower")
    rows = _expected(dep)

    def get(name):
        if name == FullCheckpoint.name:  # its best interval's row (several at scale)
            return min(v["overhead_pct"] for v in _checkpoints(rows).values())
        return rows[name]["overhead_pct"]

    b, w = get(better), get(worse)
    return {
        "value": bool(b < w),
        "margin": w / b - 1.0 if b > 0 else math.inf,
        "detail": f"{_where(dep)}: {better} {b:.3g} % vs {worse} {w:.3g} %",
    }


@claim_model
def ecrec_never_pauses(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict[str, Any]:
    dep = deployment_of(setup, "nmp.train.claims:ecrec_never_pauses")
    rows = _expected(dep)
    pause = rows["ecrec"]["recovery_s"]
    ck = min(v["recovery_s"] for v in _checkpoints(rows).values())
    return {
        "value": bool(pause == 0.0 < ck),
        "detail": f"{_where(dep)}: ecrec pause {pause} s, checkpoint {ck:.3g} s",
    }


@functools.cache
def _small_compare(steps: int, seed: int) -> tuple:
    from nmp.train.compare import default_failures, run_compare
    from nmp.train.config import TrainConfig

    cfg = TrainConfig(steps=steps, seed=seed, max_tables=8, max_rows=1000, eval_batches=64)
    rows = run_compare(cfg, default_failures(cfg), ("checkpoint", "cpr-mfu", "cpr-ssu"))
    return tuple(rows)


@claim_model
def cpr_accuracy_on_par(*, quick: bool, steps: int = 600, seed: int = 0) -> dict[str, Any]:
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
