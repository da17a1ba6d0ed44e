"""The real kernels' benchmark on CPU (its dry run), the measured-vs-modeled comparison, and
nmp validate's real-GPU group (none recorded: "not run", never a pass)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nmp.gpu import compare
from nmp.gpu.kernels_real import build_plan, check_plan, real_variants
from nmp.gpu.spec import load_gpu

from .scripts import load_script


def _script():
    return load_script("gpu_kernels")


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
    assert list(v) == [
        "baseline", "occupancy", "prefetch", "pinning", "pinning-window", "layout-hot-first"
    ]  # fmt: skip
    assert v["occupancy"].maxrregcount == 32 and v["prefetch"].prefetch == 4
    assert v["pinning-window"].model_overrides["pinning.mechanism"] == "access_window"
    # what each real variant does follows the model's mechanism, not a name of its own
    assert v["pinning"].pre_kernel and not v["pinning"].access_window
    assert v["pinning-window"].access_window and not v["pinning-window"].pre_kernel
    for real in v.values():
        assert real.pinning == real.model_overrides.get("pinning.mechanism", "")
    # The window's control: the same layout, the stock kernel, no pinning at all.
    control = v["layout-hot-first"]
    assert control.hot_first and v["pinning-window"].hot_first and not control.pinning
    assert (control.model_variant, control.model_overrides) == ("baseline", {"layout": "hot_first"})
    assert control.control_for == "pinning-window" and not control.nvrtc
    assert real_variants(load_gpu("a100-80gb"))["occupancy"].maxrregcount == 42


def test_check_plan_rejects_an_index_outside_the_table():
    from nmp.errors import NmpError

    plan = build_plan("h200", "gpu-micro24", {"batch": 4, "num_tables": 1}, 0, ["baseline"])
    assert len(check_plan(plan)) == 1
    plan.tables[0].indices[3] = plan.tables[0].rows
    with pytest.raises(NmpError, match="table 0: an index lies outside"):
        check_plan(plan)


def test_hot_first_layout_keeps_the_output_bit_identical():
    """The window variant's table (hot rows first) and remapped indices pool to exactly what
    EmbeddingBag gives on the unpermuted table (torch on the CPU, and the numpy reference)."""
    import torch

    from nmp.gpu.hot_layout import hot_first_order, remap_indices
    from nmp.gpu.kernels_real import TablePlan, reference_sums

    rng = np.random.default_rng(7)
    rows, dim, bags = 3000, 16, 64
    indices = np.minimum(rng.zipf(1.3, bags * 20), rows) - 1  # skewed: a real hot set
    indices = rng.permutation(rows)[indices]  # scattered over the table, as the workloads do
    offsets = np.arange(0, bags * 20 + 1, 20, dtype=np.int64)
    weight = rng.standard_normal((rows, dim)).astype(np.float32)
    counts = np.bincount(indices, minlength=rows)
    hot = np.argsort(-counts, kind="stable")[:300]
    order = hot_first_order(rows, hot)
    assert np.array_equal(order[:300], hot) and np.array_equal(np.sort(order), np.arange(rows))
    remapped = remap_indices(indices, order)
    assert np.count_nonzero(remapped < 300) == np.count_nonzero(np.isin(indices, hot))

    def bag(idx, w):
        return torch.nn.functional.embedding_bag(
            torch.as_tensor(idx), torch.as_tensor(w), torch.as_tensor(offsets[:-1]), mode="sum"
        )

    ref = bag(indices, weight)
    assert torch.equal(bag(remapped, weight[order]), ref)
    assert not torch.equal(bag(indices, weight[order]), ref)  # the remap is what keeps it
    tb = TablePlan(rows, dim, indices, offsets, hot)
    moved = TablePlan(rows, dim, remapped, offsets, np.arange(300))
    assert np.array_equal(
        reference_sums(moved, weight[order], bags), reference_sums(tb, weight, bags)
    )


def test_window_plan_checks_its_layout_and_refuses_a_window_over_the_limit():
    from dataclasses import replace

    from nmp.errors import NmpError
    from nmp.gpu.kernels_real import check_set_aside

    plan = build_plan("h200", "gpu-micro24", {"batch": 8, "num_tables": 1}, 0, ["pinning-window"])
    tb = plan.tables[0]
    lines = check_plan(plan)
    assert f"window over {tb.hot.shape[0]} hot rows laid out first" in lines[-1]
    assert f"{tb.window_bytes:,} B <= 134,217,728 B, hitRatio 1.000" in lines[-1]
    # The h200 hot set of 60K x 512 B fits the window limit and the set-aside: hitRatio 1.
    full = build_plan("h200", "gpu-micro24", {"num_tables": 1}, 0, ["pinning-window"])
    assert full.tables[0].window_bytes == 30_720_000 and full.window_ratio(full.tables[0]) == 1.0
    small = replace(plan.gpu.pinning, max_window_bytes=tb.window_bytes - 1)
    plan.gpu = replace(plan.gpu, pinning=small)
    with pytest.raises(NmpError, match="table 0: an access-policy window of .* exceeds the dev"):
        check_plan(plan)
    # hitRatio = set-aside / window once the window outgrows the set-aside.
    plan.set_aside_bytes = tb.window_bytes // 4
    assert plan.window_ratio(tb) == pytest.approx(0.25, rel=1e-3)
    with pytest.raises(NmpError, match="39,321,601 B exceeds the device's largest, 39,321,600"):
        check_set_aside(39_321_601, 39_321_600)
    tb.hot[1] = tb.hot[0]
    with pytest.raises(NmpError, match="repeat a row"):
        check_plan(plan)


def test_window_tensors_pool_like_the_unpermuted_table_in_torch():
    """The tensors the window variant runs on the device, made here on the CPU from a real
    plan (gpu-micro24 cut to 2000-row tables): embedding_bag on them equals torch's on the
    unpermuted table, bit for bit; over the device's window limit nothing is copied."""
    import torch

    from nmp.errors import NmpError
    from nmp.gpu.kernels_real import window_tensors

    wl = {"batch": 32, "num_tables": 2, "rows": 2000, "reuse": "high"}
    plan = build_plan("h200", "gpu-micro24", wl, 0, ["pinning-window"])
    gen = torch.Generator().manual_seed(0)
    weights = [torch.rand(tb.rows, tb.dim, generator=gen) for tb in plan.tables]
    moved = window_tensors(plan, weights, 134_217_728)
    for tb, w, (w_hot, idx_hot) in zip(plan.tables, weights, moved, strict=True):
        off = torch.as_tensor(tb.offsets[:-1])
        ref = torch.nn.functional.embedding_bag(torch.as_tensor(tb.indices), w, off, mode="sum")
        got = torch.nn.functional.embedding_bag(idx_hot, w_hot, off, mode="sum")
        assert torch.equal(got, ref)
        n_hot = tb.hot.shape[0]
        assert torch.equal(w_hot[:n_hot], w[torch.as_tensor(tb.hot)])  # the window's rows
    with pytest.raises(NmpError, match="table 0: an access-policy window"):
        window_tensors(plan, weights, plan.tables[0].window_bytes - 1)


def test_control_dry_run_checks_its_layout_and_needs_no_window(capsys):
    """layout-hot-first alone: its layout is checked (a broken remap fails), no window limit is
    asked of it, and the dry run names its model point."""
    from dataclasses import replace

    from nmp.errors import NmpError

    args = ["--dry-run", "--skip-model", "--batch", "8", "--variants", "layout-hot-first"]
    assert _script().main(args) == 0
    out = capsys.readouterr().out
    assert "hot rows laid out first, every remapped index reads its old row" in out
    assert "access-policy window" not in out.replace("no window", "")
    assert "(model: variant baseline {'layout': 'hot_first'})" in out
    plan = build_plan("h200", "gpu-micro24", {"batch": 8, "num_tables": 1}, 0, ["layout-hot-first"])
    tiny = replace(plan.gpu.pinning, max_window_bytes=1)  # no window: its limit does not apply
    plan.gpu = replace(plan.gpu, pinning=tiny)
    assert "laid out first" in check_plan(plan)[-1]
    plan.tables[0].hot[1] = plan.tables[0].hot[0]
    with pytest.raises(NmpError, match="repeat a row"):
        check_plan(plan)


def test_control_tensors_pool_like_the_unpermuted_table_in_torch():
    """The tensors layout-hot-first runs on (the window variant's, without the window's limit):
    embedding_bag on them equals torch's on the unpermuted table, bit for bit, and the layout
    really moved the rows."""
    import torch

    from nmp.gpu.kernels_real import layout_tensors

    wl = {"batch": 32, "num_tables": 1, "rows": 2000, "reuse": "high"}
    plan = build_plan("h200", "gpu-micro24", wl, 0, ["layout-hot-first"])
    (tb,) = plan.tables
    w = torch.rand(tb.rows, tb.dim, generator=torch.Generator().manual_seed(1))
    ((w_hot, idx_hot),) = layout_tensors(plan, [w])
    off = torch.as_tensor(tb.offsets[:-1])
    ref = torch.nn.functional.embedding_bag(torch.as_tensor(tb.indices), w, off, mode="sum")
    assert torch.equal(torch.nn.functional.embedding_bag(idx_hot, w_hot, off, mode="sum"), ref)
    assert not torch.equal(w_hot, w) and not torch.equal(idx_hot, torch.as_tensor(tb.indices))


def test_control_models_the_window_variant_without_its_window():
    """The control's modeled time is the window variant's with the set-aside at 0 (the two
    differ only by the window), and the layout is really in it (it differs from the stock
    kernel's on the drawn layout)."""
    v = real_variants(load_gpu("h200"))
    rec = {"arch_preset": "h200", "workload": "gpu-micro24", "seed": 0,
           "workload_overrides": {"reuse": "high", "batch": 256, "num_tables": 1}}  # fmt: skip

    def us(name: str, **extra) -> float:
        over = {**v[name].model_overrides, **extra}
        return compare.model_us(rec, {"model_variant": v[name].model_variant,
                                      "model_overrides": over})  # fmt: skip

    control = us("layout-hot-first")
    assert control == us("pinning-window", **{"pinning.set_aside_fraction": 0.0})
    assert control != us("baseline")


def test_control_is_reported_not_judged_and_gives_the_windows_own_effect():
    rec = dict(RECORD, variants={
        "baseline": {"median_us": 100.0, "model_variant": "baseline", "bit_exact": True},
        "pinning-window": {"median_us": 99.0, "model_variant": "pinning", "bit_exact": True},
        "layout-hot-first": {"median_us": 60.0, "model_variant": "baseline", "bit_exact": True,
                             "control_for": "pinning-window"},
    })  # fmt: skip
    fake = {"baseline": 100.0, "pinning": 98.0}
    rows = {r.variant: r for r in compare.compare_record("rec", rec, lambda r, e: fake[
        e["model_variant"]])}  # fmt: skip
    # Off by +67 % and a gain of +67 % against a modeled 0 %: not judged, so no verdict on it.
    assert rows["layout-hot-first"].verdict == "reported"
    assert "control for pinning-window: reported, not judged" in rows["layout-hot-first"].detail
    # The window's own effect: 60 / 99 - 1 measured, 100 / 98 - 1 modeled.
    assert "own effect over its control: measured -39.4%, modeled +2.0%" in rows[
        "pinning-window"].detail  # fmt: skip
    rec["variants"]["layout-hot-first"]["bit_exact"] = False
    assert compare.compare_record("rec", rec, lambda r, e: 100.0)[2].verdict == "disagrees"


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
