"""Model values for the published claims of ECRec and CPR (``nmp validate``).

Each function computes its value from the model on the paper's setup
(``workloads/train/<paper>.toml``); none reads the published figure. The setups' closed-form
expectations are cheap once the hardware model has timed a step (cached per setup), so every
claim but the accuracy one is quick.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from nmp.plugins import claim_model


@functools.cache
def _expected(setup: str) -> dict[str, dict[str, Any]]:
    from nmp.train.extrapolate import expected
    from nmp.train.setup import load_setup

    return {r["strategy"]: r for r in expected(load_setup(setup)[0])}


@functools.cache
def _recovery_parts(setup: str) -> dict[str, float]:
    from nmp.train.extrapolate import _model
    from nmp.train.setup import load_setup

    md = _model(load_setup(setup)[0])
    return {
        "load_s": md.load_ns / 1e9,
        "restart_s": md.restart_ns / 1e9,
        "rebuild_s": md.rebuild_ns / 1e9,
    }


def _checkpoints(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in rows.items() if k.startswith("checkpoint")}


@claim_model
def overhead_reduction_pct(*, quick: bool, setup: str = "ecrec") -> dict[str, Any]:
    """How much of checkpointing's failure-free training overhead ECRec removes (%), against
    the checkpoint interval where checkpointing costs most ("up to")."""
    rows = _expected(setup)
    name, ck = max(_checkpoints(rows).items(), key=lambda kv: kv[1]["overhead_no_failure_pct"])
    ec = rows["ecrec"]["overhead_no_failure_pct"]
    ck_pct = ck["overhead_no_failure_pct"]
    return {
        "value": 100.0 * (1.0 - ec / ck_pct),
        "detail": f"setup {setup}, no failure: ecrec {ec:.3g} % vs {name} {ck_pct:.3g} %",
    }


@claim_model
def recovery_speedup(*, quick: bool, setup: str = "ecrec") -> dict[str, Any]:
    """Checkpointing's recovery (load every shard, restart, re-execute the work since the last
    save: the ``recovery_s`` of its rows) over ECRec's rebuild of the lost shard, at the
    checkpoint interval where the ratio is largest ("up to")."""
    rows = _expected(setup)
    p = _recovery_parts(setup)
    name, ck = max(_checkpoints(rows).items(), key=lambda kv: kv[1]["recovery_s"])
    return {
        "value": ck["recovery_s"] / p["rebuild_s"],
        "detail": f"setup {setup}: {name} recovery {ck['recovery_s']:.3g} s (load "
        f"{p['load_s']:.3g} s + restart {p['restart_s']:.3g} s + re-execution) vs ECRec "
        f"rebuild {p['rebuild_s']:.3g} s",
    }


@claim_model
def overhead_lower(*, quick: bool, setup: str, better: str, worse: str) -> dict[str, Any]:
    """Whether ``better``'s expected overhead (with failures) is below ``worse``'s (the lowest
    of the checkpoint intervals when ``worse`` is ``checkpoint``)."""
    rows = _expected(setup)

    def get(name):
        if name == "checkpoint":
            return min(v["overhead_pct"] for v in _checkpoints(rows).values())
        return rows[name]["overhead_pct"]

    b, w = get(better), get(worse)
    return {
        "value": bool(b < w),
        "detail": f"setup {setup}: {better} {b:.3g} % vs {worse} {w:.3g} %",
    }


@claim_model
def ecrec_never_pauses(*, quick: bool, setup: str = "ecrec") -> dict[str, Any]:
    rows = _expected(setup)
    pause = rows["ecrec"]["recovery_s"]
    ck = min(v["recovery_s"] for v in _checkpoints(rows).values())
    return {
        "value": bool(pause == 0.0 < ck),
        "detail": f"ecrec pause {pause} s, checkpoint {ck:.3g} s",
    }


@claim_model
def overhead_pct(*, quick: bool, setup: str, strategy: str) -> dict[str, Any]:
    """Expected training-time overhead (%) of ``strategy`` on the setup, failures included."""
    rows = _expected(setup)
    if strategy == "checkpoint":
        name, row = min(_checkpoints(rows).items(), key=lambda kv: kv[1]["overhead_pct"])
    else:
        name, row = strategy, rows[strategy]
    return {"value": row["overhead_pct"], "detail": f"setup {setup}: {name}"}


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
