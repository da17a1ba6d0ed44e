"""Studies with their own runner (`runner = "module:function"` in a sweep file)."""

from __future__ import annotations

import json
import sys
import types

import pytest

from nmp.cli import main
from nmp.plugins import STUDY_RUNNERS, reference, study_runner


@pytest.fixture
def toy_runner(monkeypatch):
    mod = types.ModuleType("nmp._toy_study")
    seen = {}

    def run(params, *, out_dir, jobs):
        seen.update(params=params, jobs=jobs)
        (out_dir / "report.md").write_text("# toy\n")
        return [{"x": x, "y": 2.0 * x} for x in params["xs"]]

    def bad(params, *, out_dir, jobs):
        return {"not": "rows"}

    def refuses(params, *, out_dir, jobs):
        from nmp.errors import NmpError

        raise NmpError("unknown study parameter(s) bogus")

    mod.run, mod.bad, mod.refuses, mod.seen = run, bad, refuses, seen
    monkeypatch.setitem(sys.modules, "nmp._toy_study", mod)
    for fn in (run, bad, refuses):
        fn.__module__ = mod.__name__
        study_runner(fn)
    yield mod
    for fn in (run, bad, refuses):
        STUDY_RUNNERS.unregister(reference(fn))


def _write(tmp_path, text):
    path = tmp_path / "toy.toml"
    path.write_text(text)
    return path


def test_runner_study_writes_its_run_folder(tmp_path, toy_runner, capsys):
    sweep = _write(
        tmp_path,
        'name = "toy"\ndescription = "d"\nrunner = "nmp._toy_study:run"\n[params]\nxs = [1, 2]\n',
    )
    out = tmp_path / "reports"
    rc = main(["evaluate", str(sweep), "--out", str(out), "--run", "r1", "--json", "-j", "1"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == [{"x": 1, "y": 2.0}, {"x": 2, "y": 4.0}]
    assert toy_runner.seen == {"params": {"xs": [1, 2]}, "jobs": 1}
    run = out / "r1"
    assert (run / "report.md").read_text() == "# toy\n"
    assert json.loads((run / "summary.json").read_text())["rows"] == summary["rows"]
    assert "runner" in (run / "sweep.toml").read_text()
    assert (out / "latest").resolve() == run.resolve()
    # a second run into the same folder is refused, as for any sweep
    assert main(["evaluate", str(sweep), "--out", str(out), "--run", "r1"]) == 1


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('runner = "nmp._toy_study:run"\naxes = {}\n', "unknown key\\(s\\) axes"),
        ('runner = "nmp._toy_study:nope"\n', "key 'runner'"),
        ('runner = "os:system"\n', "only functions of the nmp package"),
        ('runner = "nmp._toy_study:run"\nparams = 3\n', "key 'params'"),
    ],
)
def test_bad_study_files(tmp_path, toy_runner, capsys, text, match):
    import re

    sweep = _write(tmp_path, text)
    assert main(["evaluate", str(sweep), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert re.search(match, err) and "toy.toml" in err


def test_a_runner_must_return_rows(tmp_path, toy_runner, capsys):
    sweep = _write(tmp_path, 'runner = "nmp._toy_study:bad"\n')
    assert main(["evaluate", str(sweep), "--out", str(tmp_path / "o")]) == 1
    assert "not a list of rows" in capsys.readouterr().err


@pytest.mark.parametrize("run", [[], ["--run", "r1"]])
def test_a_study_that_fails_at_once_leaves_no_run_folder(tmp_path, toy_runner, capsys, run):
    sweep = _write(tmp_path, 'runner = "nmp._toy_study:refuses"\n[params]\nbogus = 1\n')
    out = tmp_path / "o"
    assert main(["evaluate", str(sweep), "--out", str(out), *run]) == 1
    assert "bogus" in capsys.readouterr().err
    assert list(out.iterdir()) == []  # no empty run folder, no latest


def test_resume_is_refused_for_a_runner_study(tmp_path, toy_runner, capsys):
    sweep = _write(tmp_path, 'runner = "nmp._toy_study:run"\n[params]\nxs = [1]\n')
    assert main(["evaluate", str(sweep), "--resume", "--out", str(tmp_path / "o")]) == 1
    assert "cannot --resume" in capsys.readouterr().err


def test_check_runs_the_runners_check_params(tmp_path, toy_runner, capsys):
    def check_params(params):
        if params.get("xs") == []:
            from nmp.errors import NmpError

            raise NmpError("params.xs: must not be empty")

    sweep = _write(tmp_path, 'runner = "nmp._toy_study:run"\n[params]\nxs = []\n')
    assert main(["evaluate", str(sweep), "--check"]) == 0  # no check_params: not checked
    assert "params not checked" in capsys.readouterr().out
    toy_runner.check_params = check_params
    assert main(["evaluate", str(sweep), "--check"]) == 1
    err = capsys.readouterr().err
    assert "toy.toml: params.xs: must not be empty" in err


@pytest.mark.parametrize(
    "name",
    [
        "papers/recshard-capacity",
        "papers/evstore-cache",
        "papers/evstore-split",
        "papers/sc24-alltoall",
        "papers/ecrec",
        "papers/sensitivity-recross-trim",
        "papers/sensitivity-trimb-trimg",
        "papers/sensitivity-host-energy",
        "papers/gpu-chosen",
        "papers/gpu-chosen-h200",
    ],
)
def test_paper_studies_check_their_params(name, capsys):
    assert main(["evaluate", name, "--check"]) == 0
    assert "(params checked)" in capsys.readouterr().out
