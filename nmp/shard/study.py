"""The RecShard study: every sharder over GPU count x HBM per GPU (x profile window, x the
tier-overlap switch), on one workload and topology; report, CSV, JSONL and plots.

``nmp evaluate papers/recshard-capacity`` calls :func:`run_study` with the TOML's ``[params]``.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.fileio import atomic_write_bytes, atomic_write_text
from nmp.plugins import study_runner
from nmp.shard.run import HELD_OUT

DEFAULTS: dict[str, Any] = {
    "workload": "criteo-terabyte",
    "topology": "a100x8-pcie4",
    "gpus": [4, 8, 16],
    "hbm_gib": [0.25, 1.0, 4.0],
    "sharders": [],  # empty: every registered sharder
    "profile_batches": [8],
    "eval_batches": 2,
    "overlap": [False],
    "profile_policy": [],  # "held-out" and/or "served" (nmp.shard.run.PROFILE_POLICIES)
    "held_out": [True],  # the older spelling of the same axis: used when profile_policy is empty
    # for sharders that use row statistics (nmp.shard.stats.UNSEEN_ESTIMATORS)
    "unseen": ["zero"],
    "seed": 0,
    "time_limit_s": 60.0,
    "workload_overrides": {},
}
FLAT = ("workload", "topology", "eval_batches", "seed", "time_limit_s")
COLUMNS = (
    "sharder",
    "gpus",
    "hbm_gib_per_gpu",
    "profile_batches",
    "overlap",
    "held_out",
    "profile_policy",
    "step_ms",
    "speedup_vs_best_baseline",
    "load_balance",
    "slow_accesses_per_batch",
    "slow_access_fraction",
    "hbm_gib_used",
    "solve_s",
    "mip_gap",
)


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise NmpError(
            f"unknown study parameter(s) {', '.join(unknown)} (known: {', '.join(DEFAULTS)})",
        )
    p = {**DEFAULTS, **params}
    axes = ("gpus", "hbm_gib", "sharders", "profile_batches", "overlap", "held_out", "unseen")
    for key in (*axes, "profile_policy"):
        if not isinstance(p[key], list):
            raise NmpError(f"params.{key} must be a list, got {p[key]!r}")
        if not p[key] and key not in ("sharders", "profile_policy"):  # an empty axis: no points
            raise NmpError(f"params.{key} must not be empty")
    from nmp.shard.run import PROFILE_POLICIES

    if any(v not in PROFILE_POLICIES for v in p["profile_policy"]):
        raise NmpError(
            f"params.profile_policy must hold {' or '.join(PROFILE_POLICIES)}, "
            f"got {p['profile_policy']!r}"
        )
    if not p["profile_policy"]:
        p["profile_policy"] = ["held-out" if h else "served" for h in p["held_out"]]
    for key in ("gpus", "profile_batches"):
        if any(not isinstance(v, int) or v < 1 for v in p[key]):
            raise NmpError(f"params.{key} must hold integers >= 1, got {p[key]!r}")
    if any(not isinstance(v, int | float) or v < 0 for v in p["hbm_gib"]):
        raise NmpError(f"params.hbm_gib must hold numbers >= 0, got {p['hbm_gib']!r}")
    # numpy: loaded on use (start-up time)
    from nmp.shard.unseen import UNSEEN_ESTIMATORS

    for u in p["unseen"]:
        if u not in UNSEEN_ESTIMATORS:
            raise NmpError(f"params.unseen: {UNSEEN_ESTIMATORS.unknown_message(u)}")
    if not isinstance(p["workload_overrides"], dict):
        raise NmpError("params.workload_overrides must be a table")
    return p


def study_rows(params: dict[str, Any]) -> list[dict[str, Any]]:
    # numpy: loaded on use (start-up time)
    from nmp.shard.registry import get_sharder, sharder_names
    from nmp.shard.run import run_shard
    from nmp.shard.unseen import DEFAULT_UNSEEN

    p = check_params(params)
    names = p["sharders"] or sharder_names()
    known = sharder_names()
    for n in names:
        if n not in known:
            raise NmpError(f"params.sharders: unknown sharder '{n}' (known: {', '.join(known)})")
    rows = []
    points = itertools.product(
        p["gpus"], p["hbm_gib"], p["profile_batches"], p["profile_policy"], p["overlap"]
    )
    for gpus, hbm, prof, policy, overlap in points:
        group = []
        for name in names:
            variants = p["unseen"] if get_sharder(name).uses_row_stats else [DEFAULT_UNSEEN]
            for unseen in variants:
                r = run_shard(
                    workload=p["workload"],
                    sharder=name,
                    topology=p["topology"],
                    workload_overrides=p["workload_overrides"],
                    topology_overrides={"gpus": gpus, "hbm_gib": float(hbm)},
                    profile_batches=prof,
                    eval_batches=p["eval_batches"],
                    seed=p["seed"],
                    overlap=bool(overlap),
                    time_limit_s=p["time_limit_s"],
                    profile_policy=policy,
                    unseen=unseen,
                )
                r["label"] = name if unseen == DEFAULT_UNSEEN else f"{name}+{unseen}"
                r["stats"] = get_sharder(name).uses_row_stats
                group.append(r)
        base = [r["step_ms"] for r in group if not r["stats"]]
        best = min(base) if base else float("nan")
        for r in group:
            rows.append(
                {
                    "sharder": r["label"],
                    "gpus": gpus,
                    "hbm_gib_per_gpu": float(hbm),
                    "profile_batches": prof,
                    "overlap": bool(overlap),
                    "held_out": policy == HELD_OUT,
                    "profile_policy": policy,
                    "step_ms": r["step_ms"],
                    "speedup_vs_best_baseline": best / r["step_ms"],
                    "load_balance": r["load_balance"],
                    "slow_accesses_per_batch": r["slow_accesses_per_batch"],
                    "slow_access_fraction": r["slow_access_fraction"],
                    "hbm_gib_used": r["hbm_bytes"] / 2**30,
                    "solve_s": r["solve_s"],
                    "mip_gap": r["solver"].get("mip_gap", 0.0),
                    "tables_gib": r["tables_gib"],
                }
            )
    return rows


def _plot(rows, out_dir: Path, metric: str, ylabel: str, log: bool) -> str:
    # matplotlib: loaded on use (start-up time)
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib: loaded on use (start-up time)
    import matplotlib.pyplot as plt

    gpus = sorted({r["gpus"] for r in rows})
    prof = min(r["profile_batches"] for r in rows)
    policy = rows[0]["profile_policy"]
    fig, axes = plt.subplots(1, len(gpus), figsize=(4.2 * len(gpus), 3.4), squeeze=False)
    for ax, g in zip(axes[0], gpus, strict=True):
        for name in sorted({r["sharder"] for r in rows}):
            pts = sorted(
                (r["hbm_gib_per_gpu"], r[metric])
                for r in rows
                if r["gpus"] == g
                and r["sharder"] == name
                and not r["overlap"]
                and r["profile_policy"] == policy
                and r["profile_batches"] == prof
            )
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=name)
        ax.set_xscale("log", base=2)
        if log:
            ax.set_yscale("log")
        ax.set_title(f"{g} GPUs")
        ax.set_xlabel("HBM per GPU for embeddings (GiB)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    timed = "held-out" if policy == HELD_OUT else "profiled (served)"
    fig.suptitle(f"{prof}-batch profile, timed on {timed} batches, HBM and host time adding up")
    fig.tight_layout()
    name = f"{metric}.png"
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out_dir / name, buf.getvalue())
    return name


def _report(rows, p, plots) -> str:
    lines = [
        "# RecShard study: sharders x GPUs x HBM per GPU",
        "",
        f"Workload `{p['workload']}` ({rows[0]['tables_gib']:.2f} GiB of tables), topology "
        f"`{p['topology']}` with its GPU count and HBM budget swept; profile windows "
        f"{p['profile_batches']} batches, each placement timed on {p['eval_batches']} batches "
        f"under the profile policies {p['profile_policy']}. Step = the slowest GPU's embedding "
        "time per batch; speedup is over the best "
        "greedy baseline of the same point; `+good-turing`: RecShard with never-seen rows "
        "weighed by their Good-Turing share (an extension). `overlap` true: HBM and host-tier "
        "time overlap (max) instead of adding up; `profile_policy` served (`held_out` false): "
        "timed on the profiled batches, RecShard's setting; held-out: on batches the profile "
        "did not see (the kit's default). Plots: the shortest profile, the first policy, tiers "
        "adding up.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in rows:
        cells = []
        for c in COLUMNS:
            v = r[c]
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *[f"![{n}]({n})" for n in plots], ""]
    return "\n".join(lines)


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """Run the study (``jobs`` is unused: the MILP and the GPU model run in this process)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = check_params(params)
    rows = study_rows(p)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out_dir / "results.csv", buf.getvalue())
    atomic_write_text(out_dir / "results.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    plots = [
        _plot(rows, out_dir, "step_ms", "embedding step (ms)", True),
        _plot(rows, out_dir, "slow_accesses_per_batch", "host-tier accesses per batch", False),
        _plot(rows, out_dir, "load_balance", "load balance (max/mean)", False),
    ]
    atomic_write_text(out_dir / "report.md", _report(rows, p, plots))
    return rows
