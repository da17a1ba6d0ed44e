"""``nmp train --compare``: every strategy on one seed and one failure schedule, as a table.

Rows: ``failure-free`` (no failures, no protection: the baseline of the overheads and of the
AUC change) and one per strategy. Columns: training-time overhead (modeled time over the
failure-free run's), recovery time (modeled time training stood still), time to full redundancy
(from the failure until the lost state is protected again), memory overhead of the protection,
held-out AUC and its change, and the SHA-256 of the final embedding records and MLP weights.
"""

from __future__ import annotations

from typing import Any

from nmp.train.config import TrainConfig
from nmp.train.failures import Failure
from nmp.train.rows import result_row
from nmp.train.strategies import strategy_names
from nmp.train.trainer import run


def default_failures(cfg: TrainConfig) -> list[Failure]:
    """One failure of node 1 two thirds into the run (late enough that lost state matters)."""
    return [Failure(step=(2 * cfg.steps) // 3, node=1 % cfg.nodes)]


def run_compare(
    cfg: TrainConfig,
    failures: list[Failure],
    strategies: tuple[str, ...] | None = None,
    on_step=None,
) -> list[dict[str, Any]]:
    from dataclasses import replace

    from nmp.train.alltoall.report import compressed_row
    from nmp.train.strategies import REGISTRY, baseline_name

    strategies = strategy_names() if strategies is None else strategies
    plain = replace(cfg, compress="none")  # train.compress adds its own ECRec row below
    base = run(plain, baseline_name(), [], on_step=on_step)
    rows = [result_row(base, None)]
    rows[0]["identical_to_failure_free"] = True
    for name in strategies:
        rows.append(result_row(run(plain, name, failures, on_step=on_step), base))
    # train.compress adds a row for the strategy that keeps parity: its deltas stay exact
    coded = next((n for n in strategies if REGISTRY.get(n).uses_parity), None)
    if coded is not None and (row := compressed_row(cfg, coded, failures, base)):
        rows.append(row)
    return rows


def _fmt_time(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns >= 1e9:
        return f"{ns / 1e9:.3g} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} us"
    return f"{ns:.3g} ns"


def _fmt_auc(r: dict[str, Any]) -> str:
    if r["auc"] is None:
        return "undefined"
    return f"{r['auc']:.4f} ±{r['auc_ci95']:.4f}"


def _fmt_change(r: dict[str, Any]) -> str:
    if r["auc_change"] is None:
        return "-"
    verdict = "noise" if r["auc_change_within_noise"] else "REAL"
    return f"{r['auc_change']:+.4f} (±{r['auc_change_noise95']:.4f}: {verdict})"


def _fmt_work(r: dict[str, Any]) -> str:
    """The real work of the protection, modeled / measured here: one checkpoint write, or
    ECRec's whole rebuild (decode + commit of every range)."""
    d = r["details"]
    if "checkpoint_write_modeled_ns" in d:
        return (
            f"write {_fmt_time(d['checkpoint_write_modeled_ns'])} / "
            f"{_fmt_time(d['checkpoint_write_measured_s_mean'] * 1e9)}"
        )
    wall = d.get("measured_wall_s", {})
    if "rebuild_decode" in wall:
        measured = (wall["rebuild_decode"] + wall.get("rebuild_commit", 0.0)) * 1e9
        return f"rebuild {_fmt_time(r['time_breakdown_ns'].get('rebuild'))} / {_fmt_time(measured)}"
    return "-"


def print_table(rows: list[dict[str, Any]], title: str) -> None:
    from rich.table import Table

    from nmp.report.console import make_console

    table = Table(title=title, title_justify="left")
    cols = (
        "strategy",
        "overhead %",
        "recovery",
        "to full redundancy",
        "memory +%",
        "AUC ±95%",
        "AUC change (noise ±95%)",
        "work: modeled / measured",
        "= failure-free",
        "state sha256",
    )
    for c in cols:
        table.add_column(c, justify="left" if c in ("strategy", "state sha256") else "right")
    for r in rows:
        table.add_row(
            r["strategy"],
            f"{r['overhead_pct']:.1f}",
            _fmt_time(r["recovery_ns"]),
            _fmt_time(r["time_to_full_redundancy_ns"]),
            f"{r['memory_overhead_pct']:.1f}",
            _fmt_auc(r),
            _fmt_change(r),
            _fmt_work(r),
            "yes" if r.get("identical_to_failure_free") else "no",
            r["final_state_sha256"][:12],
        )
    make_console().print(table)
