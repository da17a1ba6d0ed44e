"""``nmp evaluate papers/cpr-partial-save``: CPR's partial-save parameters swept at scale.

The rows MFU writes (``cpr_fraction``), the sample SSU marks rows with (``cpr_ssu_sample``)
and the workload's skew (Zipf exponent) are chosen values with leverage on CPR's cost and on
the updates a failure loses (:mod:`nmp.train.partial_save`): each is swept here on one
deployment (``params.setup``), the others held. Writes ``report.md``, ``results.csv``,
``results.jsonl`` and ``tradeoff.png`` (portion of lost samples against the rows a partial save
writes, per policy).
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

from nmp.compress.study import write_jsonl, write_table
from nmp.errors import NmpError
from nmp.fileio import atomic_write_bytes, atomic_write_text
from nmp.plugins import study_runner
from nmp.train.extrapolate import _model, expected
from nmp.train.partial_save import at_scale, workload_rates
from nmp.train.setup import load_setup

DEFAULTS: dict[str, Any] = {
    "setup": "cpr",
    "fractions": [0.01, 0.03, 0.1, 0.3, 1.0],
    "samples": [0.0001, 0.001, 0.01, 0.05, 0.5],
    "alphas": [0.9, 1.05, 1.2],
}


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise NmpError(f"params.{unknown[0]}: unknown (known: {', '.join(DEFAULTS)})")
    p = {**DEFAULTS, **params}
    for key, lo, hi in (("fractions", 0.0, 1.0), ("samples", 0.0, 1.0), ("alphas", 0.0, 10.0)):
        v = p[key]
        if not isinstance(v, list) or not v:
            raise NmpError(f"params.{key}: a non-empty list, got {v!r}")
        if any(isinstance(x, bool) or not isinstance(x, int | float) for x in v):
            raise NmpError(f"params.{key}: numbers, got {v!r}")
        if any(not lo < x <= hi for x in v):
            raise NmpError(f"params.{key}: each in ({lo:g}, {hi:g}], got {v!r}")
    p["deployment"] = load_setup(str(p["setup"]))[0]
    return p


def study_rows(p: dict[str, Any]) -> list[dict[str, Any]]:
    dep = p["deployment"]
    out = []

    def add(sweep, value, name, row):
        out.append(
            {
                "sweep": sweep,
                "value": value,
                "strategy": name,
                "overhead_pct": row["overhead_pct"],
                "overhead_no_failure_pct": row["overhead_no_failure_pct"],
                "partial_save_fraction": row["partial_save_fraction"],
                "pls_effective": row["pls_effective"],
                "pls_bound": dep.cpr_pls,
            }
        )

    for f in p["fractions"]:
        rows = {r["strategy"]: r for r in expected(replace(dep, cpr_fraction=float(f)))}
        add("cpr_fraction", f, "cpr-mfu", rows["cpr-mfu"])
    for s in p["samples"]:
        rows = {r["strategy"]: r for r in expected(replace(dep, cpr_ssu_sample=float(s)))}
        add("cpr_ssu_sample", s, "cpr-ssu", rows["cpr-ssu"])
    md = _model(dep)
    steps = md.cpr_tau_ns / md.step_ns
    for a in p["alphas"]:
        rates = workload_rates(dep.workload, dep.table_rows, dep.batch, alpha=float(a))
        for name, policy in (("cpr-mfu", "top-frequency"), ("cpr-ssu", "sampled-inputs")):
            ps = at_scale(
                policy, rates, steps, dep.cpr_full_every, dep.cpr_fraction, dep.cpr_ssu_sample
            )
            out.append(
                {
                    "sweep": "zipf_alpha",
                    "value": a,
                    "strategy": name,
                    "overhead_pct": None,  # the save cost at this skew: see the fraction column
                    "overhead_no_failure_pct": None,
                    "partial_save_fraction": ps.save_fraction(rates.rows),
                    "pls_effective": ps.staleness_ratio * dep.cpr_pls,
                    "pls_bound": dep.cpr_pls,
                }
            )
    return out


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    # matplotlib: loaded on use (start-up time)
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib: loaded on use (start-up time)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for sweep, name in (("cpr_fraction", "cpr-mfu"), ("cpr_ssu_sample", "cpr-ssu")):
        pts = sorted(
            (r["partial_save_fraction"], 100 * r["pls_effective"])
            for r in rows
            if r["sweep"] == sweep
        )
        ax.plot(*zip(*pts, strict=True), marker="o", label=f"{name} (sweeping {sweep})")
    ax.axhline(100 * rows[0]["pls_bound"], color="k", lw=0.8, ls="--", label="PLS bound")
    ax.set_xscale("log")
    ax.set(xlabel="rows written per partial save (share)", ylabel="portion of lost samples (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """CPR's partial-save parameters (MFU fraction, SSU sample, skew) swept at scale."""
    p = check_params(params)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = study_rows(p)
    write_table(out_dir / "results.csv", rows)
    write_jsonl(out_dir / "results.jsonl", rows)
    _plot(rows, out_dir / "tradeoff.png")
    dep = p["deployment"]

    def cell(v):
        return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)

    cols = list(rows[0])
    lines = [
        f"# CPR's partial saves at scale: deployment {dep.name}",
        "",
        f"{dep.workload}, {dep.servers} servers, save every τ = 2 · PLS · N · M (PLS bound "
        f"{dep.cpr_pls:g}), every {dep.cpr_full_every}th save full. MFU writes the "
        "`cpr_fraction` rows most used since their last save, SSU every row a `cpr_ssu_sample` "
        "of the inputs touched (nmp/train/partial_save.py). `pls_effective`: the portion of "
        "lost samples once partial saves leave rows stale (the accuracy cost); "
        "`partial_save_fraction`: rows a partial save writes (the cost). Each sweep holds the "
        f"others at the deployment's values (cpr_fraction {dep.cpr_fraction:g}, cpr_ssu_sample "
        f"{dep.cpr_ssu_sample:g}, the workload's Zipf exponent).",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
        *["| " + " | ".join(cell(r[c]) for c in cols) + " |" for r in rows],
        "",
        "![trade-off](tradeoff.png)",
        "",
    ]
    atomic_write_text(out_dir / "report.md", "\n".join(lines))
    return rows
