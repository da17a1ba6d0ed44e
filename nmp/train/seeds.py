"""``nmp train --compare --seeds N``: the comparison over several seeds, with intervals.

One seed's AUC change is one draw: the teacher, the data, the initialization and the failure's
effect all move with the seed. Each strategy's AUC change against the failure-free run of the
*same* seed is a paired difference; over ``N`` seeds its mean gets a Student-t 95 % interval, and
the change is "inside the noise" when that interval contains 0. Overheads get the same interval.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.train.config import TrainConfig
from nmp.train.failures import Failure

# Student-t 0.975 quantiles for 1..30 degrees of freedom (any statistics table; e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, table 1.3.6.7.2); above 30 the normal 1.96 is within 2 %.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def mean_ci95(values: list[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its Student-t 95 % interval (None for one value)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return float(x.mean()), None
    t = _T975[x.size - 2] if x.size - 1 <= len(_T975) else 1.96
    return float(x.mean()), float(t * x.std(ddof=1) / np.sqrt(x.size))


MAX_SEEDS = 1000  # chosen: a paired CI needs tens; 1000 comparisons is hours already


def run_seeds(
    cfg: TrainConfig, failures: list[Failure], seeds: int, on_step=None
) -> list[dict[str, Any]]:
    from nmp.train.compare import run_compare

    if not 1 <= seeds <= MAX_SEEDS:  # each seed is a full comparison: 10^9 ran silently
        raise NmpError(f"--seeds must be in 1..{MAX_SEEDS:,}, got {seeds:,}")
    per_seed = [
        run_compare(replace(cfg, seed=cfg.seed + i), failures, on_step=on_step)
        for i in range(seeds)
    ]
    out = []
    for j, first in enumerate(per_seed[0]):
        runs = [rows[j] for rows in per_seed]
        aucs = [r["auc"] for r in runs]
        if any(a is None for a in aucs):
            raise NmpError("AUC undefined on a seed (held-out labels of one class)")
        auc, auc_ci = mean_ci95(aucs)
        ov, ov_ci = mean_ci95([r["overhead_pct"] for r in runs])
        changes = [r["auc_change"] for r in runs if r["auc_change"] is not None]
        row = {
            "strategy": first["strategy"],
            "seeds": seeds,
            "eval_samples": first["eval_samples"],
            "overhead_pct": ov,
            "overhead_ci95_pct": ov_ci,
            "recovery_ns": float(np.mean([r["recovery_ns"] for r in runs])),
            "time_to_full_redundancy_ns": _mean_or_none(
                [r["time_to_full_redundancy_ns"] for r in runs]
            ),
            "memory_overhead_pct": float(np.mean([r["memory_overhead_pct"] for r in runs])),
            "auc": auc,
            "auc_ci95": auc_ci,
            "auc_teacher": _mean_or_none([r.get("auc_teacher") for r in runs]),
            "auc_change": None,
            "auc_change_ci95": None,
            "auc_change_within_noise": None,
            "identical_to_failure_free_all": all(r.get("identical_to_failure_free") for r in runs),
        }
        if changes:
            ch, ch_ci = mean_ci95(changes)
            row.update(
                auc_change=ch,
                auc_change_ci95=ch_ci,
                auc_change_within_noise=None if ch_ci is None else bool(abs(ch) <= ch_ci),
            )
        out.append(row)
    return out


class _Plateau(Exception):
    pass


def plateau_steps(cfg: TrainConfig, every: int, min_gain: float) -> tuple[int, list[float]]:
    """The stated training criterion: train the failure-free run, evaluating every ``every``
    steps, and stop at the first evaluation whose held-out AUC gained less than ``min_gain``
    over the previous one (or at ``cfg.steps``). Returns (steps, the AUC curve)."""
    from nmp.train.strategies import baseline_name
    from nmp.train.trainer import run

    if every < 1 or not min_gain > 0:
        raise NmpError("plateau: train.plateau_every must be >= 1 and plateau_gain > 0")
    curve: list[float] = []

    def check(strategy: str, step: int, trainer) -> None:
        if step % every:
            return
        auc = trainer.evaluate()["auc"]
        if auc is None:
            raise NmpError("plateau criterion: AUC undefined (held-out labels of one class)")
        if curve and auc - curve[-1] < min_gain:
            curve.append(auc)
            raise _Plateau(step)
        curve.append(auc)

    try:
        run(cfg, baseline_name(), [], on_step=check)
    except _Plateau as stop:
        return int(stop.args[0]), curve
    return cfg.steps, curve


def _mean_or_none(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def print_seed_table(rows: list[dict[str, Any]], title: str) -> None:
    from rich.table import Table

    from nmp.report.console import make_console
    from nmp.train.compare import _fmt_time

    def pm(v, ci, fmt):
        return format(v, fmt) + ("" if ci is None else f" ±{format(ci, fmt.lstrip('+'))}")

    t = Table(title=title, title_justify="left")
    for c in (
        "strategy",
        "overhead % ±95%",
        "recovery",
        "to full redundancy",
        "memory +%",
        "AUC ±95%",
        "AUC change ±95% (paired)",
        "= failure-free",
    ):
        t.add_column(c, justify="left" if c == "strategy" else "right")
    for r in rows:
        change = "-"
        if r["auc_change"] is not None:
            change = pm(r["auc_change"], r["auc_change_ci95"], "+.4f")
            if r["auc_change_within_noise"] is not None:
                change += " noise" if r["auc_change_within_noise"] else " REAL"
        t.add_row(
            r["strategy"],
            pm(r["overhead_pct"], r["overhead_ci95_pct"], ".1f"),
            _fmt_time(r["recovery_ns"]),
            _fmt_time(r["time_to_full_redundancy_ns"]),
            f"{r['memory_overhead_pct']:.1f}",
            pm(r["auc"], r["auc_ci95"], ".4f"),
            change,
            "yes" if r["identical_to_failure_free_all"] else "no",
        )
    make_console().print(t)
