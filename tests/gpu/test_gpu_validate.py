"""benchmarks/gpu_validate.py on CPU: the dry run rebuilds the batch, checks it and prints the
plan and the ncu command without touching a GPU."""

from __future__ import annotations

from .scripts import load_script


def _load():
    return load_script("gpu_validate")


def test_dry_run_prints_the_plan(capsys):
    mod = _load()
    assert mod.main(["--dry-run", "--skip-model", "--batch", "16", "--reuse", "random"]) == 0
    out = capsys.readouterr().out
    assert "12 x 500,000 rows x dim 128" in out
    assert f"{12 * 16 * 150:,} lookups" in out
    assert "80 MiB buffer (> L2 40 MiB)" in out
    assert "ncu --kernel-name regex:EmbeddingBag_updateOutputKernel" in out
    # The profiled run is the same point: workload, reuse, batch and seed are passed on.
    assert "--workload gpu-micro24 --reuse random --batch 16 --seed 0 --repeats 1" in out
    for metric in ("lts__t_sector_hit_rate.pct", "launch__registers_per_thread"):
        assert metric in out
    assert "nothing measured" in out


def test_bad_preset_is_one_line_error(capsys):
    mod = _load()
    assert mod.main(["--dry-run", "--skip-model", "--arch", "a200"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: unknown gpu preset 'a200'" in err
