"""The study runner on a small workload: files, rows, bad parameters."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.shard.study import run_study

PARAMS = {
    "workload": "dlrm-benchmark",
    "workload_overrides": {"num_tables": 3, "rows": 2000, "batch": 16, "pooling": 4, "alpha": 1.1},
    "gpus": [2],
    "hbm_gib": [100 * 256 / 2**30],  # 100 rows per GPU: every table split
    "sharders": ["recshard", "size"],
    "profile_batches": [2],
    "eval_batches": 1,
    "overlap": [False, True],
    "unseen": ["zero", "good-turing"],
}


def test_study_writes_its_files(tmp_path):
    rows = run_study(PARAMS, out_dir=tmp_path)
    assert len(rows) == 6  # recshard twice (unseen zero, good-turing), size once; x2 overlap
    for name in ("report.md", "results.csv", "results.jsonl", "step_ms.png"):
        assert (tmp_path / name).stat().st_size > 0
    by = {(r["sharder"], r["overlap"]): r for r in rows}
    # overlap (max) never takes longer than adding the tiers' times
    for s in ("recshard", "size"):
        assert by[(s, True)]["step_ms"] <= by[(s, False)]["step_ms"] + 1e-12
    # the size sharder cannot fit a 2000-row table in 100 rows: all its lookups go to the host
    assert by[("size", False)]["slow_access_fraction"] == 1.0
    assert by[("recshard", False)]["slow_access_fraction"] < 1.0


def test_bad_parameter_named(tmp_path):
    with pytest.raises(NmpError, match="unknown study parameter"):
        run_study({"gpu": [2]}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.gpus"):
        run_study({"gpus": 4}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.unseen"):
        run_study({"unseen": ["never"]}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.overlap must not be empty"):
        run_study({"overlap": []}, out_dir=tmp_path)
