"""``nmp train`` end to end on a tiny configuration."""

from __future__ import annotations

import json

from nmp.cli import main

TINY = [
    "--set", "train.max_tables=4",
    "--set", "train.max_rows=200",
    "--set", "train.bottom=[8]",
    "--set", "train.top=[8]",
    "--set", "train.eval_batches=2",
    "--set", "train.batch=32",
    "--set", "train.cost_sample=100000",
]  # fmt: skip


def test_train_single_strategy_json(capsys):
    argv = ["train", "--strategy", "ecrec", "--fail", "step=20,node=1", "--steps", "40"]
    assert main([*argv, *TINY, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] == "ecrec"
    assert len(out["final_state_sha256"]) == 64
    assert out["events"][0]["node"] == 1


def test_compare_json_rows(capsys):
    assert main(["train", "--compare", "--steps", "30", *TINY, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["strategy"] for r in rows]
    assert names == ["failure-free", "ecrec", "checkpoint", "cpr-mfu", "cpr-ssu", "none"]
    cols = ("overhead_pct", "recovery_ns", "time_to_full_redundancy_ns", "memory_overhead_pct")
    for r in rows:
        assert all(c in r for c in (*cols, "auc", "auc_change", "final_state_sha256"))
    by = {r["strategy"]: r for r in rows}
    assert by["ecrec"]["final_state_sha256"] == by["failure-free"]["final_state_sha256"]
    assert by["checkpoint"]["final_state_sha256"] == by["failure-free"]["final_state_sha256"]
    assert by["none"]["final_state_sha256"] != by["failure-free"]["final_state_sha256"]


def test_bad_input_exits_1(capsys):
    assert main(["train", "--strategy", "ecrec", "--fail", "step=x,node=1", *TINY]) == 1
    assert "--fail" in capsys.readouterr().err
    assert main(["train", "--strategy", "bogus", "--steps", "5", *TINY]) == 1
    assert "unknown strategy" in capsys.readouterr().err
    assert main(["train", "--strategy", "none", "--set", "train.nodes=0"]) == 1
    assert "train.nodes" in capsys.readouterr().err
