"""``nmp validate``'s real-GPU group: every recorded measurement of the real kernels
(``nmp/gpu/data/measured-*.json``) against the current GPU model (:mod:`nmp.gpu.compare`).

Check ``gpu.latency`` does the same for the loaded-latency probe's curves
(``nmp/gpu/data/latency-probe-*.json``, :mod:`nmp.gpu.latency_probe`), point by point.

With nothing recorded each check is one row with verdict "not run": no measurement, no pass.
"""

from __future__ import annotations

from nmp.validate.result import CheckResult, builtin

GROUP = "real-gpu"
NOT_RUN = "not run"
HOW = "run benchmarks/gpu_kernels.py --record on a CUDA GPU"


def _not_run(check_id: str, source: str, model: str, detail: str, explanation: str):
    """The one row of a check with nothing recorded: "not run", never a pass."""
    row = CheckResult(
        id=check_id,
        source=source,
        published="",
        model=model,
        verdict=NOT_RUN,
        group=GROUP,
        detail=detail,
        explanation=explanation,
    )
    row.mirror_columns()
    return [row]


def rows_for(records) -> list[CheckResult]:
    from nmp.gpu.compare import compare_record

    if not records:
        return _not_run(
            "gpu.real",
            "nmp/gpu/data/measured-*.json",
            "no real-GPU measurement recorded",
            f"no measurement in nmp/gpu/data/: {HOW}",
            f"missing: the GPU model has not been checked on a real GPU ({HOW})",
        )
    out = []
    for stem, rec in records:
        for cmp in compare_record(stem, rec):
            row = CheckResult(
                id=f"gpu.real.{stem}.{cmp.variant}",
                source=f"{rec.get('gpu_name', '?')}, driver {rec.get('driver', '?')}, "
                f"torch {rec.get('torch', '?')}, {rec.get('date', '?')}",
                published=round(cmp.measured_us, 3),
                model=round(cmp.modeled_us, 3),
                verdict=cmp.verdict,
                group=GROUP,
                unit="us",
                detail=cmp.detail,
                explanation=cmp.detail if cmp.verdict != "agrees" else "",
            )
            row.mirror_columns()
            out.append(row)
    return out


def _record_stems() -> list[str]:
    """The recorded measurements' names: the parts of check ``gpu.real``."""
    from nmp.gpu.compare import record_paths

    return [path.stem for path in record_paths()]


@builtin("gpu.real", parts=_record_stems)
def real_gpu_measurements(quick: bool, part: str | None = None) -> list[CheckResult]:
    """Every recorded real-kernel measurement against the model (quick: the same; the model
    runs are cached per point); ``part``: only the record of that name (its own task, so
    that ``--jobs`` runs the records side by side)."""
    from nmp.gpu.compare import load_records

    # a part reads its own file alone: an unreadable record is one error row, its own
    return rows_for(load_records(only=part))


LATENCY_HOW = "run benchmarks/gpu_latency.py --record on a CUDA GPU"


def latency_rows_for(records) -> list[CheckResult]:
    """The loaded-latency probe's recorded curves (``nmp/gpu/data/latency-probe-*.json``), one
    row per point: modeled against measured latency per step, within
    :data:`nmp.gpu.latency_probe.LATENCY_REL`. Nothing recorded: one row "not run"."""
    from nmp.gpu.latency_probe import compare_record

    if not records:
        return _not_run(
            "gpu.latency",
            "nmp/gpu/data/latency-probe-*.json",
            "no loaded-latency curve recorded",
            f"no latency-probe record in nmp/gpu/data/: {LATENCY_HOW}",
            "missing: the model's latency against loads in flight has not been "
            f"measured ({LATENCY_HOW})",
        )
    out = []
    for stem, rec in records:
        for cmp in compare_record(rec):
            row = CheckResult(
                id=f"gpu.latency.{stem}.{cmp['key']}",
                source=f"{rec.get('gpu_name', '?')}, driver {rec.get('driver', '?')}, "
                f"{rec.get('date', '?')}",
                published=round(cmp["measured_ns"], 3),
                model=round(cmp["modeled_ns"], 3),
                verdict=cmp["verdict"],
                group=GROUP,
                unit="ns",
                detail=cmp["detail"],
                explanation=cmp["detail"] if cmp["verdict"] != "agrees" else "",
            )
            row.mirror_columns()
            out.append(row)
    return out


@builtin("gpu.latency")
def real_gpu_latency(quick: bool) -> list[CheckResult]:
    """Every recorded loaded-latency curve against the model's prediction for the same probe."""
    from nmp.gpu.latency_probe import load_records

    return latency_rows_for(load_records())
