"""``nmp train`` end to end on a tiny configuration."""

from __future__ import annotations

import json

import pytest

from nmp.cli import main
from tests.shipped import assert_shipped_in_order

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
    # the failure-free run of the same configuration stands beside it
    assert out["identical_to_failure_free"] is True
    assert out["failure_free_sha256"] == out["final_state_sha256"]
    assert out["auc_change"] == 0.0 and out["auc_change_noise95"] > 0


def test_a_lossy_run_says_its_state_differs_and_its_auc_change_with_noise(capsys):
    argv = ["train", "--strategy", "none", "--fail", "step=20,node=1", "--steps", "40"]
    assert main([*argv, *TINY]) == 0
    out = capsys.readouterr().out
    assert "final state DIFFERS from the failure-free run's" in out
    assert "AUC change " in out and "(noise ±" in out and "the noise)" in out


@pytest.mark.parametrize("strategy", ["ecrec", "checkpoint"])
def test_train_single_strategy_text_has_no_python_reprs(capsys, strategy):
    argv = ["train", "--strategy", strategy, "--fail", "step=20,node=1", "--steps", "40"]
    assert main([*argv, *TINY]) == 0
    out = capsys.readouterr().out
    assert "{" not in out and "None" not in out and "True" not in out, out
    assert "event: step 20, node 1" in out
    assert "final state identical to the failure-free run's; AUC change +0.0000" in out
    assert "memory_overhead: " in out and " %" in out


def test_compare_json_rows(capsys):
    assert main(["train", "--compare", "--steps", "30", *TINY, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["strategy"] for r in rows]
    assert_shipped_in_order(
        names, ["failure-free", "ecrec", "checkpoint", "cpr-mfu", "cpr-ssu", "none"]
    )
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


def test_every_bad_knob_is_a_one_line_error(capsys, tmp_path):
    binary = tmp_path / "data.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    cases = [
        (["--set", "train.cost_sample=0"], "train.cost_sample"),
        (["--set", "train.cost_sample=-1"], "train.cost_sample"),
        (["--seed", "-1"], "--seed"),  # every --seed flag is checked where it is parsed
        (["--data", str(binary), "--set", "train.max_tables=0"], "not a Criteo TSV"),
        (["--fail", "step=5,node=1", "--fail", "step=5,node=1"], "given twice"),
        (["--set", "train.lr_dense=nan"], "train.lr_dense"),
        (["--compress", "quant", "--set", "train.network=bogus"], "network preset 'bogus'"),
    ]
    for extra, needle in cases:
        argv = ["train", "--strategy", "ecrec", "--steps", "10", *TINY, *extra]
        try:
            code = main(argv)
        except SystemExit as exc:  # a usage error, raised by argparse
            code = exc.code
        assert code == 1, extra
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err, (extra, err)
        assert len(err.strip().splitlines()) == 1, err


def test_one_sample_evaluation_says_auc_is_undefined(capsys):
    argv = ["train", "--strategy", "none", "--steps", "3", *TINY]
    assert main([*argv, "--set", "train.eval_batches=1", "--set", "train.batch=1"]) == 0
    out = capsys.readouterr().out
    assert "AUC undefined" in out and "nan" not in out.lower()


def test_strategy_help_comes_from_the_registry(capsys):
    from nmp.train.strategies import REGISTRY, strategy_names

    assert_shipped_in_order(strategy_names(), ("ecrec", "checkpoint", "cpr-mfu", "cpr-ssu", "none"))
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in REGISTRY)
