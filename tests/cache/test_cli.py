"""``nmp cache``: JSON keys, a run from a user's index file, errors as one line."""

import json

import pytest

from nmp.cli import main
from nmp.workload import generate_batches, load_workload, save_index_file

KEYS = (
    "policy",
    "hit_rate",
    "perfect_hit_rate",
    "avg_latency_us",
    "p90_latency_us",
    "memory_bytes",
    "auc_change",
)


def _json(capsys, *args):
    assert main(["cache", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_and_accuracy(capsys):
    row = _json(
        capsys,
        "--policy",
        "evstore",
        "--l1-mb",
        "0.25",
        "--requests",
        "2000",
        "--warmup",
        "1000",
        "--backend",
        "sqlite",
        "--train-steps",
        "60",
    )
    for k in KEYS:
        assert k in row
    assert 0 <= row["perfect_hit_rate"] <= row["hit_rate"] and 0 < row["hit_rate"] < 1
    assert row["l1_hit_rate"] + row["l2_hit_rate"] + row["l3_hit_rate"] == pytest.approx(
        row["hit_rate"]
    )
    assert row["p90_latency_us"] >= row["avg_latency_us"] * 0.5
    assert row["memory_bytes"] == int(0.25 * 2**20 * (1 + 1 + 0.25))
    assert row["auc_change_ci_lo"] <= row["auc_change"] <= row["auc_change_ci_hi"]
    assert row["backend_lookups_per_s"] > 0


def test_index_file_requests(tmp_path, capsys):
    spec = load_workload("criteo-kaggle")
    batches = generate_batches(spec, 1, seed=3)
    path = tmp_path / "lookups.npz"
    save_index_file(batches[0], path)
    row = _json(
        capsys,
        "--index-file",
        str(path),
        "--policy",
        "lru",
        "--l1-mb",
        "0.01",
        "--requests",
        "100",
        "--warmup",
        "20",
        "--no-accuracy",
        "--backend",
        "",
    )
    assert row["source"].startswith("index file")
    assert row["requests"] == 100 and row["lookups"] == 100 * 26
    assert row["auc_change"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--l1-mb", "-1"], "l1_mb must be >= 0"),
        (["--requests", "0"], "argument --requests: must be an integer in [1, "),
        (["--workload", "nosuch"], "nosuch"),
        (["--index-file", "/no/such.npz"], "no such file"),
    ],
)
def test_bad_input_is_one_line(capsys, args, message):
    try:
        code = main(["cache", *args, "--no-accuracy", "--backend", ""])
    except SystemExit as exc:  # refused as the flag is parsed (an input file that is none)
        code = exc.code
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("nmp: error:") and message in err and "\n" not in err


def test_accuracy_needs_training_steps(capsys):
    assert main(["cache", "--train-steps", "0", "--backend", ""]) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("nmp: error:") and "--train-steps must be in 1.." in err and "\n" not in err
    )
