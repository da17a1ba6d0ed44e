"""Report files of a sweep exist and are well-formed (CSV, markdown, PNG, JSON)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from rich.console import Console

from nmp.evaluate.runner import run_sweep
from nmp.evaluate.sweepcheck import validate_sweep
from nmp.report.console import ConsoleProgress, print_sweep_summary
from nmp.report.files import write_report_files

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "evaluate"))
from evaluate_fakes import ToyProvider, fake_point, toy_sweep  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    spec = toy_sweep()
    keyed = validate_sweep(spec, file="toy.toml", provider=ToyProvider())
    run_dir = tmp_path_factory.mktemp("run")
    summary = run_sweep(
        spec,
        keyed,
        run_dir,
        point_fn=fake_point,
        write_reports=write_report_files,
        sweep_text="name = 'toy'\n",
    )
    return run_dir, summary


def test_files_exist(run: tuple[Path, dict]) -> None:
    run_dir, summary = run
    names = {p.name for p in run_dir.iterdir()}
    expected = {
        "sweep.toml",
        "sweep.json",
        "plan.json",
        "environment.json",
        "results.jsonl",
        "summary.json",
        "report.md",
        "results.csv",
        "speedup.png",
        "pareto.png",
        "breakdown.png",
    }
    assert expected <= names
    # the run lock (.lock) stays: deleting it while another run opens it would break the lock
    assert not [n for n in names if n.endswith(".tmp") or (n.startswith(".") and n != ".lock")]
    from nmp.report.plots import PLOTS

    assert sorted(Path(f).name for f in summary["files"]) == sorted(
        ["summary.json", "report.md", "results.csv", *PLOTS]
    )


def test_report_files_are_not_private(run: tuple[Path, dict]) -> None:
    """report.md, results.csv and the plots get the umask's mode, as every other file of the
    run (mkstemp's 0600 would hide them from the other users of a shared machine)."""
    import os
    import stat

    from nmp.fileio import UMASK as _UMASK

    run_dir, _ = run
    for name in ("report.md", "results.csv", "speedup.png", "pareto.png", "breakdown.png"):
        assert stat.S_IMODE(os.stat(run_dir / name).st_mode) == 0o666 & ~_UMASK, name


def test_csv_has_one_row_per_point(run: tuple[Path, dict]) -> None:
    run_dir, summary = run
    with open(run_dir / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == summary["points"] == 24
    assert {
        "key",
        "design",
        "workload",
        "workload.batch",
        "arch.bank.units",
        "lookups_per_s",
        "speedup",
        "energy_saving",
        "bottleneck",
        "pareto",
    } <= set(rows[0])
    by_key = {r["key"]: r for r in summary["rows"]}
    for row in rows:
        assert float(row["lookups_per_s"]) == by_key[row["key"]]["lookups_per_s"]
        assert row["pareto"] == str(int(by_key[row["key"]]["pareto"]))
    base = [r for r in rows if r["design"] == "a"]
    assert all(float(r["speedup"]) == 1.0 for r in base)


def test_markdown_lists_each_group_and_its_pareto_set(run: tuple[Path, dict]) -> None:
    run_dir, summary = run
    text = (run_dir / "report.md").read_text()
    assert text.startswith("# Sweep `toy`")
    for g in summary["groups"]:
        assert f"## {g['group']}" in text
        assert f"Pareto set ({len(g['pareto'])} of {g['points']} points)" in text
    for png in ("speedup.png", "pareto.png", "breakdown.png"):
        assert f"]({png})" in text


def test_a_sampled_sweep_says_how_its_points_were_drawn(tmp_path: Path) -> None:
    spec = toy_sweep(sampling="latin-hypercube", samples=5, seed=9)
    keyed = validate_sweep(spec, file="toy.toml", provider=ToyProvider())
    summary = run_sweep(
        spec, keyed, tmp_path, point_fn=fake_point, write_reports=write_report_files
    )
    assert summary["sampling"] == {"sampler": "latin-hypercube", "samples": 5, "seed": 9}
    text = (tmp_path / "report.md").read_text()
    assert "- sampling: `latin-hypercube`, samples = 5 of the grid's points" in text
    assert "seed 9" in text


def test_a_grid_sweep_has_no_sampling_line(run: tuple[Path, dict]) -> None:
    run_dir, summary = run
    assert "sampling" not in summary
    assert "- sampling:" not in (run_dir / "report.md").read_text()


def test_pngs_are_images(run: tuple[Path, dict]) -> None:
    run_dir, _ = run
    for name in ("speedup.png", "pareto.png", "breakdown.png"):
        img = mpimg.imread(run_dir / name)
        assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400


def test_summary_json_and_console(run: tuple[Path, dict]) -> None:
    run_dir, summary = run
    data = json.loads((run_dir / "summary.json").read_text())
    assert data["points"] == 24 and len(data["rows"]) == 24
    assert all(set(g["pareto"]) <= {r["key"] for r in data["rows"]} for g in data["groups"])
    console = Console(record=True, width=140, force_terminal=False)
    print_sweep_summary(data, console)
    out = console.export_text()
    assert "Best points" in out and "Pareto set: w1 [batch=1]" in out
    assert "c-big [bank.units=16]" in out  # labels with brackets are not eaten as markup


def test_plain_progress_lines_when_not_a_terminal() -> None:
    console = Console(record=True, width=100, force_terminal=False)
    progress = ConsoleProgress(console)
    progress.start(3, 1)
    progress.point("a on w", True, "1 lookups/s")
    progress.point("b [x=1] on w", False, "boom")
    progress.finish()
    lines = console.export_text().splitlines()
    assert lines == [
        "resuming: 1 of 3 points already done",
        "[2/3] ok a on w: 1 lookups/s",
        "[3/3] FAILED b [x=1] on w: boom",
    ]


def test_markdown_says_why_each_design_stands_where_it_does(run: tuple[Path, dict]) -> None:
    """Every group's section has one line per point with its rank and binding resource
    (nmp.evaluate.explain); the console summary prints the same lines."""
    run_dir, summary = run
    text = (run_dir / "report.md").read_text()
    for g in summary["groups"]:
        assert len(g["why"]) == g["points"]
        for line in g["why"]:
            assert f"- {line}" in text
            assert " of " in line and "on lookups/s" in line
    console = Console(record=True, width=300, force_terminal=False)
    print_sweep_summary(summary, console)
    assert "Why, on " in console.export_text()
