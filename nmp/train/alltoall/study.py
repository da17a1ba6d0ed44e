"""The training half of ``nmp evaluate papers/sc24-*``: the AUC change of compressed training
against uncompressed, per workload, codec, error bound and schedule."""

from __future__ import annotations

from typing import Any

from nmp.plugins import study_runner
from nmp.train.alltoall.plot import plot_auc
from nmp.train.alltoall.report import compression_summary

TRAIN_DEFAULTS: dict[str, Any] = {
    "workloads": ["dlrm-benchmark", "criteo-terabyte"],
    "steps": 300,
    "nodes": 4,
    "seed": 0,
    # (codec, eb_tables, eb_schedule) per eb of the study; the first is run at every eb.
    "variants": [
        ["hybrid", "adaptive", "constant"],
        ["quant", "uniform", "constant"],
        ["hybrid", "adaptive", "decay"],
    ],
}


def check_train_params(train: Any, ebs: list[float]) -> list[tuple[Any, list[Any]]]:
    """The AUC half's runs, validated before anything runs: per workload, the uncompressed
    config and the compressed ones (``variants[0]`` at every eb of ``ebs``, the others at 0.03
    or the first eb). Bad keys or values raise :class:`NmpError` naming ``params.train.*``."""
    from nmp.config import apply_overrides
    from nmp.errors import NmpError
    from nmp.train.config import TrainConfig
    from nmp.workload import load_workload

    if not isinstance(train, dict):
        raise NmpError("params.train: must be a table")
    unknown = sorted(set(train) - set(TRAIN_DEFAULTS))
    if unknown:
        raise NmpError(
            f"params.train.{unknown[0]}: unknown key (known: {', '.join(TRAIN_DEFAULTS)})"
        )
    p = {**TRAIN_DEFAULTS, **train}
    for key in ("workloads", "variants"):
        if not isinstance(p[key], list):
            raise NmpError(f"params.train.{key}: must be a list")
    for v in p["variants"]:
        if not (isinstance(v, list) and len(v) == 3):
            raise NmpError(f"params.train.variants: {v!r} is not [codec, eb_tables, eb_schedule]")
    plan = []
    for wl in p["workloads"]:
        try:
            load_workload(wl)
        except NmpError as exc:
            raise NmpError(f"params.train.workloads: {exc}") from None
        common = {"workload": wl, "steps": p["steps"], "nodes": p["nodes"], "seed": p["seed"]}
        base = apply_overrides(TrainConfig(), {**common, "dense_replicas": 1}, root="params.train")
        runs = []
        for i, (codec, tables, schedule) in enumerate(p["variants"]):
            for eb in ebs if i == 0 else [0.03 if 0.03 in ebs else ebs[0]]:
                knobs = {"compress": codec, "eb": eb, "eb_tables": tables, "eb_schedule": schedule}
                runs.append(apply_overrides(base, knobs, root="params.train"))
        plan.append((base, runs))
    return plan


def auc_rows(plan: list[tuple[Any, list[Any]]]) -> list[dict[str, Any]]:
    """AUC change of compressed training against uncompressed, per run of
    :func:`check_train_params`'s plan."""
    from nmp.train.rows import auc_change
    from nmp.train.trainer import run

    rows = []
    for cfg, runs in plan:
        base = run(cfg, "none", [])
        for c in runs:
            res = run(c, "none", [])
            change, noise = auc_change(res, base)
            rows.append(
                {
                    "workload": c.workload,
                    "codec": c.compress,
                    "eb": c.eb,
                    "eb_tables": c.eb_tables,
                    "eb_schedule": c.eb_schedule,
                    "steps": c.steps,
                    "auc_uncompressed": base.metrics["auc"],
                    "auc": res.metrics["auc"],
                    "auc_change": change,
                    "auc_change_noise95": noise,
                    "ratio_in_training": compression_summary(res)["compression_ratio"],
                }
            )
    return rows


def check_params(params: dict[str, Any]) -> list[tuple[Any, list[Any]]]:
    """The ratio/speedup half's parameters and every training run of the AUC half."""
    from nmp.compress import study as cs

    ebs = [float(e) for e in cs.check_params(params)["eb"]]
    return check_train_params(params.get("train", {}), ebs)


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Any, jobs: int = 1) -> list[dict[str, Any]]:
    """``nmp evaluate papers/sc24-*``: ratio, throughput and speedup (nmp.compress.study) plus
    the AUC change of compressed training; returns the main codec's speedup rows and the AUC
    rows (every row is in the CSV files)."""
    from pathlib import Path

    from nmp.compress import study as cs
    from nmp.fileio import atomic_write_text

    out_dir = Path(out_dir)
    plan = check_params(params)  # every run checked before any
    res = cs.run_ratio_speedup({k: v for k, v in params.items() if k != "train"}, out_dir)
    aucs = auc_rows(plan)
    if aucs:
        cs.write_table(out_dir / "auc.csv", aucs)
        plot_auc(aucs, out_dir / "auc.png")
    codec, eb = res["main"]
    main = [r for r in res["speedup"] if r["codec"] == codec and r["eb"] == eb]
    rows = [{"part": "speedup", **r} for r in main] + [{"part": "auc", **r} for r in aucs]
    cs.write_table(out_dir / "results.csv", rows)
    cs.write_jsonl(out_dir / "results.jsonl", rows)
    atomic_write_text(out_dir / "report.md", cs.report_markdown(res, aucs))
    return rows
