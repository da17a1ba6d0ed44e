"""The real kernels' benchmark on CPU (its dry run), the measured-vs-modeled comparison, and
nmp validate's real-GPU group (none recorded: "not run", never a pass)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from nmp.gpu import compare
from nmp.gpu.kernels_real import build_plan, check_plan, real_variants
from nmp.gpu.spec import load_gpu

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_kernels.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_kernels", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dry_run_builds_and_checks_every_launch(capsys):
    assert _script().main(["--dry-run", "--skip-model", "--batch", "16", "--reuse", "high"]) == 0
    out = capsys.readouterr().out
    assert "12 tables, 28,800 lookups" in out
    assert "kernel grid 1024 x block (32, 8), 16 bags" in out
    assert "--maxrregcount=32" in out and "4 rows loaded before summing" in out
    assert "persisting set-aside 39,321,600 B" in out
    assert "nothing measured" in out


def test_dry_run_bad_variant_is_one_line_error(capsys):
    assert _script().main(["--dry-run", "--skip-model", "--variants", "turbo"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown real variant 'turbo'" in err


def test_variants_follow_the_preset_and_name_their_model_point():
    v = real_variants(load_gpu("h200"))
    assert list(v) == ["baseline", "occupancy", "prefetch", "pinning", "pinning-window"]
    assert v["occupancy"].maxrregcount == 32 and v["prefetch"].prefetch == 4
    assert v["pinning-window"].model_overrides["pinning.mechanism"] == "access_window"
    assert real_variants(load_gpu("a100-80gb"))["occupancy"].maxrregcount == 42


def test_check_plan_rejects_an_index_outside_the_table():
    from nmp.errors import NmpError

    plan = build_plan("h200", "gpu-micro24", {"batch": 4, "num_tables": 1}, 0, ["baseline"])
    assert len(check_plan(plan)) == 1
    plan.tables[0].indices[3] = plan.tables[0].rows
    with pytest.raises(NmpError, match="table 0: an index lies outside"):
        check_plan(plan)


RECORD = {
    "arch_preset": "h200",
    "workload": "gpu-micro24",
    "workload_overrides": {"reuse": "high", "batch": 256},
    "seed": 0,
    "gpu_name": "NVIDIA H200",
    "driver": "580.159",
    "torch": "2.11.0+cu130",
    "date": "2026-11-28",
    "variants": {
        "baseline": {"median_us": 100.0, "model_variant": "baseline", "bit_exact": True},
        "prefetch": {"median_us": 80.0, "model_variant": "prefetch", "bit_exact": True},
        "pinning": {"median_us": 105.0, "model_variant": "pinning", "bit_exact": False},
    },
}


def test_comparison_applies_the_issue_bounds():
    fake = {"baseline": 110.0, "prefetch": 85.0, "pinning": 95.0}
    rows = {
        r.variant: r
        for r in compare.compare_record("rec", RECORD, lambda rec, e: fake[e["model_variant"]])
    }
    assert rows["baseline"].verdict == "agrees" and rows["baseline"].ratio == pytest.approx(1.1)
    # Gain measured +25 %, modeled 110/85 - 1 = +29.4 %: same sign, within 35 % of it.
    assert rows["prefetch"].measured_gain == pytest.approx(0.25)
    assert rows["prefetch"].verdict == "agrees"
    # Pinning: measured -4.8 %, modeled +15.8 %: wrong sign; and not bit-exact.
    assert rows["pinning"].verdict == "disagrees"
    assert "gain sign" in rows["pinning"].detail and "bit-identical" in rows["pinning"].detail
    lines = compare.table_lines(list(rows.values()))
    assert "prefetch" in lines[2] and "+25.0%" in lines[2]


def test_stage_time_outside_15_percent_disagrees():
    rows = compare.compare_record("rec", RECORD, lambda rec, e: 120.0)
    assert rows[0].verdict == "disagrees" and "+20.0%" in rows[0].detail


def test_gpu_validate_records_are_read_as_a_baseline(tmp_path):
    old = {"arch_preset": "h200", "median_us": 900.0, "reuse": "high", "batch": 2048}
    (tmp_path / "measured-h200-high-b2048-2026-11-28.json").write_text(json.dumps(old))
    ((stem, rec),) = compare.load_records(tmp_path)
    assert rec["variants"]["baseline"]["median_us"] == 900.0
    assert rec["workload_overrides"] == {"reuse": "high", "batch": 2048}


def test_validate_group_without_measurements_does_not_pass():
    from nmp.validate.real_gpu import rows_for
    from nmp.validate.result import KIT_CHECKS as BUILTIN_CHECKS

    assert "gpu.real" in BUILTIN_CHECKS
    (row,) = rows_for([])
    assert row.verdict == "not run" and row.verdict != "agrees"
    assert "benchmarks/gpu_kernels.py --record" in row.detail


def test_validate_group_reads_each_recorded_variant(monkeypatch):
    from nmp.validate.real_gpu import rows_for

    monkeypatch.setattr(compare, "model_us", lambda rec, e: 100.0)
    monkeypatch.setattr(
        compare.compare_record, "__defaults__", (lambda rec, e: 100.0,), raising=True
    )
    rows = rows_for([("measured-kernels-x", RECORD)])
    assert [r.id for r in rows] == [
        "gpu.real.measured-kernels-x.baseline",
        "gpu.real.measured-kernels-x.prefetch",
        "gpu.real.measured-kernels-x.pinning",
    ]
    assert rows[0].verdict == "agrees" and rows[2].verdict == "disagrees"
    assert "NVIDIA H200" in rows[0].source and rows[0].group == "real-gpu"
