"""What ``nmp train --extrapolate`` prints of :func:`nmp.train.extrapolate.monte_carlo`'s rows:
the setup in one sentence, the console table, and the closing note with each strategy's
verdict on the paper's conclusion.

Presenting the comparison is apart from computing it (:mod:`nmp.train.extrapolate`, which this
module reads; it cannot re-export these names, as that would make the two import each other).
"""

from __future__ import annotations

from typing import Any

from nmp.train.extrapolate import DeploymentSpec, _Model, _model, _strategies, row_labels
from nmp.train.schedule import COMMON


def describe(dep: DeploymentSpec, rows: list[dict[str, Any]]) -> str:
    """One sentence on the setup behind :func:`monte_carlo`'s ``rows`` (table title, report)."""
    r0 = rows[0]
    return (
        f"{dep.workload}, {r0['table_bytes'] / 2**30:.1f} GiB of records, {dep.servers} servers, "
        f"server MTBF {dep.server_mtbf_hours:g} h (system {r0['system_mtbf_h']:.1f} h), step "
        f"{r0['step_ms']:.3g} ms ({r0['step_source']}), full checkpoint "
        f"{r0['checkpoint_write_s']:.3g} s; {r0['trials']} seeded Monte-Carlo draws of "
        f"{dep.horizon_hours:g} h ({r0['failures_mean']:.2f} failures on average)"
    )


def print_extrapolation(rows: list[dict[str, Any]], dep: DeploymentSpec) -> None:
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=escape(f"Setup {dep.name}: {describe(dep, rows)}"), title_justify="left")
    cols = (
        "strategy",
        "overhead % (±95%)",
        "expected %",
        "no-failure %",
        "recovery",
        "to full redundancy",
        "memory +%",
        "notes",
    )
    for c in cols:
        t.add_column(c, justify="left" if c in ("strategy", "notes") else "right")

    def s(v):
        return "-" if v is None else f"{v:.3g} s"

    for r in rows:
        notes = []
        if "interval_s" in r:
            notes.append(f"every {r['interval_s'] / 60:.3g} min")
        if "pls_realized_mean" in r:
            notes.append(
                f"PLS {r['pls_realized_mean']:.2%} (bound {r['pls_bound']:.0%}), with partial "
                f"saves {r['pls_effective_mean']:.2%}; saves {r['partial_save_fraction']:.0%} "
                "of rows"
            )
        if "p_data_loss" in r:
            notes.append(f"P(2nd failure in rebuild) {r['p_data_loss']:.2%}")
        t.add_row(
            r["strategy"],
            f"{r['overhead_pct']:.3g} ±{r['overhead_ci95_pct']:.2g}",
            f"{r['overhead_expected_pct']:.3g}",
            f"{r['overhead_no_failure_pct']:.3g}",
            s(r["recovery_s"]),
            s(r["time_to_full_redundancy_s"]),
            f"{r['memory_overhead_pct']:.3g}",
            "; ".join(notes),
        )
    from nmp.report.console import make_console

    make_console().print(t)
    for line in closing_note(rows, dep):
        print(line)


def closing_note(rows: list[dict[str, Any]], dep: DeploymentSpec) -> list[str]:
    """Per strategy whose schedule adds phases to the common step: which, whether they are on
    the critical path, what they cost, and whether its overhead stays below the cheapest
    rolling-back (checkpointing) strategy's, with failures and without."""
    from nmp.train.strategies import REGISTRY

    md = _model(dep)
    by = {r["strategy"]: r for r in rows}
    rolling = set().union(*(row_labels(n, dep) for n, c in REGISTRY.items() if c.rolls_back))
    ckpt = [r for r in rows if r["strategy"] in rolling]
    out = []
    for name, cls in _strategies():
        added = [p for p in cls.schedule.step if not COMMON.has(p.name)]
        if not added or name not in by or not ckpt:
            continue
        fg = [p.name for p in added if not p.background]
        bg = [p.name for p in added if p.background]
        costs = ", ".join(f"{n} {md.phase_ns.get(n, 0.0) / 1e6:.3g} ms" for n in fg + bg)
        best_ff = min(ckpt, key=lambda r: r["overhead_no_failure_pct"])
        best = min(ckpt, key=lambda r: r["overhead_pct"])
        ff, tot = by[name]["overhead_no_failure_pct"], by[name]["overhead_pct"]
        out.append(
            f"{name}'s schedule adds {', '.join(fg) or 'nothing'} on the critical path"
            + (f" and {', '.join(bg)} in the background" if bg else "")
            + f" ({costs}; step {md.step_ns / 1e6:.3g} ms): failure-free {ff:.3g} % against "
            f"{best_ff['strategy']}'s {best_ff['overhead_no_failure_pct']:.3g} % ("
            + ("below" if ff < best_ff["overhead_no_failure_pct"] else "NOT below")
            + f"); with failures {tot:.3g} % against {best['strategy']}'s "
            f"{best['overhead_pct']:.3g} % ("
            + ("below" if tot < best["overhead_pct"] else "NOT below")
            + ")."
        )
        v = verdict(md, cls, ff, best_ff, tot, best)
        by[name].update(v)
        out.append(
            f"Schedule charged: {v['schedule']}. The paper's conclusion ({name}'s overhead "
            "below checkpointing's) "
            + ("HOLDS" if v["paper_conclusion_holds"] else "does NOT hold")
            + f" on setup '{dep.name}' with this schedule; with its added phases overlapped "
            f"(assumed, not run) its failure-free overhead would be "
            f"{v['overlapped_no_failure_pct']:.3g} %."
        )
    return out


def verdict(md: _Model, cls, ff: float, best_ff: dict, tot: float, best: dict) -> dict:
    """Which schedule the rows charge and whether the paper's conclusion (this strategy's
    overhead below checkpointing's, failure-free and with failures) holds with it; beside it
    the same step with the added phases overlapped (background), which the conclusion would
    need where it fails."""
    holds = ff < best_ff["overhead_no_failure_pct"] and tot < best["overhead_pct"]
    over = cls.schedule.overlapped(COMMON)
    ff_over = over.critical_path_ns(md.phase_ns) - COMMON.critical_path_ns(md.phase_ns)
    return {
        "schedule": cls.schedule.basis or "as declared",
        "paper_conclusion_holds": bool(holds),
        "overlapped_no_failure_pct": 100.0 * ff_over / md.step_ns,
    }
