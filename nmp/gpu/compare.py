"""Measured beside modeled: the real kernels' recorded timings (``nmp/gpu/data/measured-*.json``,
written by ``benchmarks/gpu_kernels.py --record`` or ``benchmarks/gpu_validate.py --record``)
against what the current model predicts for the same points.

For every recorded variant: the stage time, measured and modeled, and (variants other than the
baseline) its gain over the baseline, measured and modeled. The acceptance bounds are issue
#37's: stage time within ``STAGE_REL``, a gain of the measured sign within ``GAIN_REL`` of it; a
variant whose output was not bit-identical to torch's fails whatever its time.

A control variant (recorded with ``control_for``: ``layout-hot-first``, the access-policy
window's layout without the window) is not one of issue #37's variants: its stage time and gain
are reported, not judged (only a broken output fails it), and the variant it controls gets its
own effect beside its gain: control / variant - 1, measured and modeled.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.errors import NmpError

DATA_DIR = Path(__file__).resolve().parent / "data"
# the verdict of a control's row whose output is right: its figures are shown, not judged
REPORTED = "reported"
STAGE_REL = 0.15  # issue #37: stage times within +-15 %
GAIN_REL = 0.35  # issue #37: each variant's gain with the measured sign, within +-35 %


@dataclass(frozen=True)
class VariantComparison:
    record: str  # the record file's stem
    variant: str
    measured_us: float
    modeled_us: float
    measured_gain: float | None  # baseline / variant - 1 (None for the baseline)
    modeled_gain: float | None
    bit_exact: bool | None
    verdict: str  # "agrees" / "disagrees" / "reported" (a control, REPORTED)
    detail: str

    @property
    def ratio(self) -> float:
        return self.modeled_us / self.measured_us if self.measured_us else float("inf")


def record_paths(data_dir: Path | None = None) -> list[Path]:
    """The recorded measurements' files, in name order."""
    return sorted(Path(data_dir or DATA_DIR).glob("measured-*.json"))


def load_records(
    data_dir: Path | None = None, only: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Every recorded measurement as (file stem, record with a ``variants`` table); ``only``:
    the one of that stem (the others not read)."""
    out = []
    for path in record_paths(data_dir):
        if only is not None and path.stem != only:
            continue
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise NmpError(f"{path}: unreadable measurement ({exc})") from None
        out.append((path.stem, normalize(rec, path)))
    return out


def normalize(rec: dict[str, Any], path: Path | str = "") -> dict[str, Any]:
    """A record in the kernels' layout; gpu_validate.py's (the stock kernel only) is turned into
    one with a single ``baseline`` variant."""
    if "variants" in rec:
        return rec
    if "median_us" not in rec:
        raise NmpError(f"{path}: a measurement needs 'variants' or 'median_us'")
    return dict(
        rec,
        variants={"baseline": {"median_us": rec["median_us"], "model_variant": "baseline"}},
        workload_overrides={"reuse": rec.get("reuse"), "batch": rec.get("batch")},
    )


@functools.cache
def _model_us(arch: str, workload: str, wl: tuple, seed: int, variant: str, arch_over: tuple):
    from nmp.gpu.point import run_design_point

    over = {"arch": {"variant": variant, **dict(arch_over)}, "workload": dict(wl)}
    return run_design_point(arch, workload, overrides=over, seed=seed).latency_ns / 1e3


def model_us(rec: dict[str, Any], entry: dict[str, Any]) -> float:
    """The current model's stage time for a recorded variant's point."""
    wl = {k: v for k, v in (rec.get("workload_overrides") or {}).items() if v is not None}
    return _model_us(
        rec["arch_preset"],
        rec.get("workload", "gpu-micro24"),
        tuple(sorted(wl.items())),
        int(rec.get("seed", 0)),
        entry.get("model_variant", "baseline"),
        tuple(sorted((entry.get("model_overrides") or {}).items())),
    )


def compare_record(
    stem: str,
    rec: dict[str, Any],
    model: Callable[[dict[str, Any], dict[str, Any]], float] = model_us,
) -> list[VariantComparison]:
    """One :class:`VariantComparison` per recorded variant (``model`` prices a variant)."""
    variants = rec["variants"]
    base = variants.get("baseline")
    base_model = model(rec, base) if base else None
    rows = []
    controls = {e.get("control_for"): e for e in variants.values() if e.get("control_for")}
    for name, entry in variants.items():
        measured = float(entry["median_us"])
        modeled = model(rec, entry) if entry is not base else base_model
        assert modeled is not None
        m_gain = d_gain = None
        problems = []
        judged = not entry.get("control_for")
        if judged and abs(modeled / measured - 1.0) > STAGE_REL:
            problems.append(
                f"stage time off by {modeled / measured - 1:+.1%} (bound {STAGE_REL:.0%})"
            )
        if base is not None and entry is not base and base_model is not None:
            m_gain = float(base["median_us"]) / measured - 1.0
            d_gain = base_model / modeled - 1.0
            if judged and (m_gain > 0) != (d_gain > 0):
                problems.append(f"gain sign: measured {m_gain:+.1%}, modeled {d_gain:+.1%}")
            elif judged and abs(d_gain - m_gain) > GAIN_REL * abs(m_gain):
                problems.append(
                    f"gain {d_gain:+.1%} vs measured {m_gain:+.1%} (bound {GAIN_REL:.0%} of it)"
                )
        exact = entry.get("bit_exact")
        if exact is False:
            problems.append("output not bit-identical to torch EmbeddingBag")
        detail = f"measured {measured:,.1f} us, modeled {modeled:,.1f} us" + (
            f"; gain measured {m_gain:+.1%}, modeled {d_gain:+.1%}" if m_gain is not None else ""
        )
        if not judged:
            detail += f"; control for {entry['control_for']}: reported, not judged"
        if (control := controls.get(name)) is not None:
            c_measured, c_modeled = float(control["median_us"]), model(rec, control)
            detail += (
                f"; own effect over its control: measured {c_measured / measured - 1:+.1%}, "
                f"modeled {c_modeled / modeled - 1:+.1%}"
            )
        rows.append(
            VariantComparison(
                record=stem,
                variant=name,
                measured_us=measured,
                modeled_us=modeled,
                measured_gain=m_gain,
                modeled_gain=d_gain,
                bit_exact=exact,
                verdict="disagrees" if problems else "agrees" if judged else REPORTED,
                detail=detail + ("; " + "; ".join(problems) if problems else ""),
            )
        )
    return rows


def table_lines(rows: list[VariantComparison]) -> list[str]:
    """The comparison as printed lines: measured beside modeled per variant."""
    out = [
        f"{'variant':<16} {'measured us':>12} {'modeled us':>11} {'model/meas':>10} "
        f"{'gain meas':>10} {'gain model':>10} {'exact':>6}  verdict"
    ]
    for r in rows:
        gm = f"{r.measured_gain:+.1%}" if r.measured_gain is not None else "-"
        gd = f"{r.modeled_gain:+.1%}" if r.modeled_gain is not None else "-"
        ex = {True: "yes", False: "NO", None: "-"}[r.bit_exact]
        out.append(
            f"{r.variant:<16} {r.measured_us:>12,.1f} {r.modeled_us:>11,.1f} {r.ratio:>10.3f} "
            f"{gm:>10} {gd:>10} {ex:>6}  {r.verdict}"
        )
    return out
