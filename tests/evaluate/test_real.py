"""Sweeps against the real presets and models: shipped sweep files validate, bad ones fail
before running naming the key, and a small sweep runs end to end through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nmp.config import project_root
from nmp.errors import SpecError
from nmp.evaluate.sweep import load_sweep, parse_sweep
from nmp.evaluate.sweepcheck import validate_sweep

SWEEPS = sorted((project_root() / "workloads" / "sweeps").glob("*.toml"))
# every study file, the papers' included: a grid sweep or a custom study (a runner), wherever
# it lies (docs/extending.md: a custom study is a TOML with a runner, in either folder)
STUDIES = sorted((project_root() / "workloads" / "sweeps").rglob("*.toml"))


def test_classic_studies_are_shipped() -> None:
    names = {p.stem for p in SWEEPS}
    assert {
        "default",
        "recross-ablation",
        "vector-length",
        "batch-size",
        "rank-count",
        "bank-units",
    } <= names


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_shipped_sweeps_validate(path: Path) -> None:
    """What ``nmp evaluate FILE --check`` checks: a custom study's runner and params, else the
    grid's every point."""
    from nmp.evaluate.study import check_study_params, load_custom_study

    study = load_custom_study(path)
    if study is not None:
        check_study_params(study)
        return
    spec, _ = load_sweep(path)
    keyed = validate_sweep(spec, file=str(path))
    assert len({k for _, k in keyed}) == len(keyed) > 0


def test_default_sweep_covers_every_design() -> None:
    spec, _ = load_sweep("default")
    assert set(spec.workloads) == {"recross-eval", "dlrm-benchmark"}
    assert {d.arch for d in spec.all_designs} == {
        "host-cpu",
        "a100-80gb",
        "tensordimm",
        "recnmp",
        "trim-g",
        "trim-b",
        "recross",
    }
    assert spec.baseline == "host-cpu"
    # The NMP designs and their baseline share one memory system, so a speedup is the design's.
    memory_sets = {
        tuple(sorted((k, v) for k, v in d.set.items() if k.startswith("arch.memory.")))
        for d in spec.designs
    }
    assert len(memory_sets) == 1 and memory_sets != {()}


BASE = {"workloads": ["recross-eval"], "archs": ["host-cpu", "recross"]}


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"axes": {"arch.bank.unitz": [1]}}, "axes.arch.bank.unitz", "no field 'unitz'"),
        ({"axes": {"workload.batchsize": [1]}}, "axes.workload.batchsize", "no field"),
        ({"axes": {"memory.org.rankz": [1]}}, "axes.memory.org.rankz", "no field 'rankz'"),
        ({"axes": {"workload.batch": []}}, "axes.workload.batch", "empty axis"),
        ({"archs": ["host-cpu", "recros"]}, "archs[1]", "unknown architecture 'recros'"),
        ({"workloads": ["criteo"]}, "workloads[0]", "unknown workload preset"),
        ({"memories": ["ddr6"]}, "memories[0]", "unknown memory preset"),
        # found by building the design on its memory, before any point runs
        (
            {"designs": [{"name": "r3", "arch": "recross", "set": {"arch.bank.units": 3}}]},
            "designs[0].set.arch.bank.units",
            "divide",
        ),
        # a GPU's HBM is part of its preset
        (
            {"archs": ["a100-80gb"], "axes": {"memory.org.ranks": [1]}},
            "axes.memory.org.ranks",
            "no DRAM memory spec",
        ),
    ],
)
def test_bad_sweeps_fail_before_running_naming_the_key(change, key, words) -> None:
    with pytest.raises(SpecError) as err:
        spec = parse_sweep({**BASE, **change}, file="bad.toml")
        validate_sweep(spec, file="bad.toml")
    assert err.value.key == key
    assert words in err.value.message
    assert err.value.file == "bad.toml"


def _nmp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nmp", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_cli_rejects_a_bad_sweep_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'workloads = ["recross-eval"]\narchs = ["host-cpu"]\n[axes]\narch.bank.unitz = [1, 2]\n'
    )
    proc = _nmp("evaluate", str(bad), "--out", str(tmp_path / "reports"), cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "axes.arch.bank.unitz" in lines[0] and str(bad) in lines[0]
    assert not (tmp_path / "reports").exists()


def test_cli_runs_a_small_real_sweep_and_resumes(tmp_path: Path) -> None:
    # A small workload file (a path works wherever a preset name does) keeps the models quick.
    (tmp_path / "tiny.toml").write_text(
        'name = "tiny"\nnum_tables = 2\nrows = 20000\ndim = 32\nbatch = 8\npooling = 20\n'
        'distribution = "zipf"\nseed = 0\n'
    )
    sweep = tmp_path / "small.toml"
    sweep.write_text(
        'name = "small"\nworkloads = ["tiny.toml"]\narchs = ["host-cpu", "recnmp"]\n'
        'baseline = "host-cpu"\n[axes]\nworkload.batch = [1, 4]\n'
    )
    out = tmp_path / "reports"
    proc = _nmp(
        "evaluate", str(sweep), "--out", str(out), "--run", "r1", "--json", "-j", "2", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["points"] == summary["completed"] == summary["ran"] == 4
    rows = {(r["design"], r["axes"]["workload.batch"]): r for r in summary["rows"]}
    assert rows[("host-cpu", 1)]["speedup"] == pytest.approx(1.0)
    for batch in (1, 4):  # speedup is over the host at the same batch size
        nmp, host = rows[("recnmp", batch)], rows[("host-cpu", batch)]
        assert nmp["speedup"] == pytest.approx(nmp["lookups_per_s"] / host["lookups_per_s"])
    assert (out / "latest").resolve() == (out / "r1").resolve()
    for name in (
        "report.md",
        "results.csv",
        "speedup.png",
        "pareto.png",
        "breakdown.png",
        "sweep.toml",
        "environment.json",
        "results.jsonl",
        "summary.json",
    ):
        assert (out / "latest" / name).is_file(), name
    again = _nmp("evaluate", "--resume", "--out", str(out), "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["ran"] == 0 and resumed["reused"] == 4
    assert resumed["rows"] == summary["rows"]


@pytest.mark.parametrize(
    ("arch", "part"),
    [("recross", "  bound: "), ("host-cpu", "  bound: "), ("a100-80gb", "  stall: ")],
)
def test_nmp_run_summary_names_what_bounds_the_point(
    arch: str, part: str, capsys, monkeypatch
) -> None:
    """`nmp run` without --json: the bottleneck and the largest parts of the time split, as the
    sweep report derives them (a GPU's from its stalls, which the summary once left out)."""
    from nmp.cli import main
    from nmp.evaluate.analysis import dominant_bottleneck
    from nmp.evaluate.point import run_point

    monkeypatch.setenv("COLUMNS", "200")
    argv = ["run", "--arch", arch, "--workload", "recross-eval", "--set", "workload.batch=2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    expected = dominant_bottleneck(
        run_point(arch, "recross-eval", None, {"workload.batch": 2}).to_json()["breakdown"]
    )
    row = next(ln for ln in out.splitlines() if "bottleneck" in ln)
    assert expected in row, out
    assert 1 <= sum(part in ln for ln in out.splitlines()) <= 3, out
