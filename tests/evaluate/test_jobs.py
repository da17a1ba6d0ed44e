"""Every core by default: worker processes for sweeps and studies, one thread per point there."""

from __future__ import annotations

import json
import os
import sys
import types

from nmp.cli import main
from nmp.evaluate.executor import LocalExecutor, default_jobs
from nmp.plugins import STUDY_RUNNERS, reference, study_runner


def _threads_env(_point) -> dict:
    return {"threads": os.environ.get("NMP_THREADS")}


def test_pool_workers_run_points_on_one_thread_each(monkeypatch):
    monkeypatch.delenv("NMP_THREADS", raising=False)
    outcomes = dict(LocalExecutor(2).run(_threads_env, [0, 1, 2]))
    assert [outcomes[i]["result"] for i in range(3)] == [{"threads": "1"}] * 3
    assert "NMP_THREADS" not in os.environ  # the parent keeps its threads


def test_a_study_gets_one_job_per_cpu_by_default(tmp_path, monkeypatch, capsys):
    seen = {}

    def run(params, *, out_dir, jobs):
        seen["jobs"] = jobs
        return [{"x": 1}]

    mod = types.ModuleType("nmp._jobs_study")
    mod.run = run
    run.__module__ = mod.__name__
    monkeypatch.setitem(sys.modules, "nmp._jobs_study", mod)
    study_runner(run)
    sweep = tmp_path / "s.toml"
    sweep.write_text('name = "s"\ndescription = "d"\nrunner = "nmp._jobs_study:run"\n')
    try:
        assert main(["evaluate", str(sweep), "--out", str(tmp_path / "r"), "--json"]) == 0
    finally:
        STUDY_RUNNERS.unregister(reference(run))
    assert json.loads(capsys.readouterr().out)["rows"] == [{"x": 1}]
    assert seen["jobs"] == default_jobs()
