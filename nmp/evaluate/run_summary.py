"""A finished sweep run's summary (``summary.json`` before its explanations and files): what
ran, what was reused, what failed, and the analysis of its results
(:func:`nmp.evaluate.analysis.analyze`, :func:`nmp.evaluate.locality_summary.locality_summary`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.evaluate.analysis import analyze
from nmp.evaluate.executor import Executor
from nmp.evaluate.locality_summary import locality_summary
from nmp.evaluate.sweep import SweepSpec


@dataclass(frozen=True)
class RunCounts:
    """What a session of a run did: the distinct points planned, those a previous session had
    run, the points that failed (their error records) and its wall time."""

    planned: int
    reused: int
    failures: list[dict[str, Any]]
    wall_s: float


def sweep_summary(
    sweep: SweepSpec,
    records: list[dict[str, Any]],
    ran: RunCounts,
    run_dir: Path,
    executor: Executor,
) -> dict[str, Any]:
    """The summary of a run whose results are ``records`` (plan order)."""
    summary: dict[str, Any] = {
        "sweep": sweep.name,
        "description": sweep.description,
        "run_dir": str(run_dir),
        "points": ran.planned,
        "completed": len(records),
        "ran": len(records) - ran.reused,
        "reused": ran.reused,
        "failed": [
            {"key": f["key"], "point": f"{f['label']} on {f['workload']}", "error": f["error"]}
            for f in ran.failures
        ],
        "wall_s": round(ran.wall_s, 3),
        "executor": executor.describe(),
    }
    if sweep.sampler.takes_samples:  # which of the grid's points these are
        summary["sampling"] = {
            "sampler": sweep.sampling,
            "samples": sweep.samples,
            "seed": sweep.seed,
        }
    if records:
        summary.update(analyze(records, baseline=sweep.baseline_label, objectives=sweep.objectives))
        summary.update(locality_summary(sweep, records))
    else:
        summary.update(
            {
                "baseline": sweep.baseline_label,
                "objectives": sweep.objectives,
                "rows": [],
                "groups": [],
            }
        )
    return summary
