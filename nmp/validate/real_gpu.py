"""``nmp validate``'s real-GPU group: every recorded measurement of the real kernels
(``nmp/gpu/data/measured-*.json``) against the current GPU model (:mod:`nmp.gpu.compare`).

With nothing recorded the group is one row with verdict "not run": no measurement, no pass.
"""

from __future__ import annotations

from nmp.validate.result import CheckResult, builtin

GROUP = "real-gpu"
NOT_RUN = "not run"
HOW = "run benchmarks/gpu_kernels.py --record on a CUDA GPU"


def rows_for(records) -> list[CheckResult]:
    from nmp.gpu.compare import compare_record

    if not records:
        row = CheckResult(
            id="gpu.real",
            source="nmp/gpu/data/measured-*.json",
            published="",
            model="no real-GPU measurement recorded",
            verdict=NOT_RUN,
            group=GROUP,
            detail=f"no measurement in nmp/gpu/data/: {HOW}",
            explanation=f"missing: the GPU model has not been checked on a real GPU ({HOW})",
        )
        row.mirror_columns()
        return [row]
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


@builtin("gpu.real")
def real_gpu_measurements(quick: bool) -> list[CheckResult]:
    """Every recorded real-kernel measurement against the model (quick: the same; the model
    runs are cached per point)."""
    from nmp.gpu.compare import load_records

    return rows_for(load_records())
