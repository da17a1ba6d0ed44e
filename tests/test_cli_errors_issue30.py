"""Issue 30's bad inputs through the command line (non-finite floats, sizes through the
resource guard, files that raised a traceback or were accepted silently): exit status 1 and one
line that names the flag, key or file (the table runs as tests/test_cli_errors.py's does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import RUN, TRACE, case_in_process, make_files
from bad_inputs import assert_one_line_error as _assert_clean_error

# issue 30: non-finite floats, refused where they are parsed (a flag, --set, a TOML file), naming
# the flag or key; before, nan or inf made loops spin forever or raised OverflowError
NON_FINITE_CASES = [
    ("cache-alpha-nan", ["cache", "--alpha", "nan", "--no-accuracy"], "--alpha"),
    ("cache-l1-mb-inf", ["cache", "--l1-mb", "inf"], "--l1-mb"),
    ("cache-l2-mb-minus-inf", ["cache", "--l2-mb=-inf"], "--l2-mb"),
    ("cache-ssd-nan", ["cache", "--ssd-read-us", "NaN"], "--ssd-read-us"),
    # --alpha 0 ran with the workload's own exponent; a layer of 1e15 MiB printed "-1e14 % less"
    ("cache-alpha-0", ["cache", "--alpha", "0", "--no-accuracy"], "--alpha must be > 0"),
    ("cache-l1-mb-1e15", ["cache", "--l1-mb", "1e15", "--no-accuracy"], "l1_mb must be at most"),
    (
        "shard-time-limit-inf",
        ["shard", "--workload", "criteo-kaggle", "--time-limit", "inf"],
        "--time-limit",
    ),
    ("train-eb-nan", ["train", "--eb", "nan"], "--eb"),
    (
        "train-mtbf-inf",
        ["train", "--extrapolate", "--server-mtbf-hours", "inf"],
        "--server-mtbf-hours",
    ),
    (
        "evaluate-time-limit-nan",
        ["evaluate", "{tmp}/small.toml", "--point-time-limit", "nan"],
        "--point-time-limit",
    ),
    ("run-set-alpha-nan", [*RUN, "--set", "workload.alpha=nan"], "workload.alpha"),
    ("run-set-alpha-inf", [*RUN, "--set", "workload.alpha=inf"], "workload.alpha"),
    ("run-set-list-nan", [*RUN, "--set", "workload.pooling=[1, nan]"], "workload.pooling[1]"),
    (
        "replay-set-watermark-nan",
        ["replay", TRACE, "--set", "controller.wr_low_watermark=nan"],
        "controller.wr_low_watermark",
    ),
    (
        "shard-hbm-gib-nan",
        ["shard", "--workload", "criteo-kaggle", "--set", "topology.hbm_gib=nan"],
        "topology.hbm_gib",
    ),
    # an internal OverflowError in the MILP's sizes
    (
        "shard-hbm-gib-1e15",
        ["shard", "--workload", "criteo-kaggle", "--set", "topology.hbm_gib=1e15"],
        "topology.hbm_gib': at most 2^20",
    ),
    (
        "train-set-lr-inf",
        ["train", "--strategy", "none", "--set", "train.lr_dense=inf"],
        "train.lr_dense",
    ),
    # storage of 1e-300 GB/s printed nan rows (exit 0) or overflowed; MLP layers of 10^8 units
    # failed in torch's allocator after 13 s (the guard counted rows, samples and nodes)
    (
        "train-extrapolate-storage-1e-300",
        ["train", "--extrapolate", "--storage-gbps", "1e-300"],
        "key '--storage-gbps': must be >= 1e-06",
    ),
    (
        "train-set-storage-1e-300",
        ["train", "--strategy", "checkpoint", "--set", "train.storage_gbps=1e-300"],
        "key 'train.storage_gbps': must be >= 1e-06",
    ),
    (
        "train-bottom-1e8-wide",
        ["train", "--strategy", "ecrec", "--set", "train.bottom=[100000000,100000000]"],
        "key 'train.bottom': this run needs about",
    ),
    (
        "evaluate-check-nan-axis",
        ["evaluate", "{tmp}/nan-axis.toml", "--check"],
        "axes.workload.alpha[1]",
    ),
    ("evaluate-check-inf-set", ["evaluate", "{tmp}/inf-set.toml", "--check"], "memory.timing.nCL"),
    (
        "replay-memory-toml-nan",
        ["replay", TRACE, "--memory", "{tmp}/nan-memory.toml"],
        "timing.nCL",
    ),
]
# issue 30: every size-like input through the resource guard, refused before it allocates
SIZE_CASES = [
    ("cache-requests-2^40", ["cache", "--requests", "1099511627776", "--no-accuracy"], "requests"),
    ("cache-requests-1e9", ["cache", "--requests", "1e9", "--no-accuracy"], "requests"),
    ("cache-warmup-1e10", ["cache", "--warmup", "1e10", "--no-accuracy"], "warmup"),
    ("cache-requests-1e7-in-1G", ["cache", "--requests", "1e7", "--max-memory", "1G"], "requests"),
    ("train-nodes-1e9", ["train", "--strategy", "none", "--nodes", "1e9"], "train.nodes"),
    ("train-compare-nodes-1e9", ["train", "--compare", "--nodes", "1000000000"], "train.nodes"),
    ("train-batch-1e9", ["train", "--strategy", "none", "--set", "train.batch=1e9"], "train.batch"),
    (
        "train-max-rows-2^40",
        [
            "train",
            "--strategy",
            "ecrec",
            "--set",
            "train.max_rows=1099511627776",
            "--max-memory",
            "4G",
        ],
        "train.max_rows",
    ),
    (
        "train-terabyte-max-rows-2^40",
        [
            "train",
            "--strategy",
            "none",
            "--workload",
            "criteo-terabyte",
            "--set",
            "train.max_rows=1099511627776",
        ],
        "train.max_rows",
    ),
    ("train-trials-1e9", ["train", "--extrapolate", "--trials", "1e9"], "--trials"),
    ("train-servers-1e9", ["train", "--extrapolate", "--servers", "1e9"], "--servers"),
    ("train-crossover-trials-1e10", ["train", "--crossover", "--trials", "1e10"], "--trials"),
    (
        "shard-gpus-1e6",
        ["shard", "--workload", "criteo-kaggle", "--set", "topology.gpus=1000000"],
        "topology.gpus",
    ),
    (
        "shard-profile-batches-1e9",
        ["shard", "--workload", "criteo-kaggle", "--profile-batches", "1e9"],
        "--profile-batches",
    ),
    (
        "shard-eval-batches-1e9",
        ["shard", "--workload", "criteo-kaggle", "--eval-batches", "1e9"],
        "--eval-batches",
    ),
    (
        "shard-batch-1e9",
        ["shard", "--workload", "criteo-kaggle", "--set", "workload.batch=1e9"],
        "workload.batch",
    ),
    (
        "shard-pooling-1e9",
        ["shard", "--workload", "criteo-kaggle", "--set", "workload.pooling=1e9"],
        "workload.pooling",
    ),
    ("replay-dev-zero", ["replay", "/dev/zero"], "/dev/zero"),
    ("replay-dev-urandom", ["replay", "/dev/urandom"], "/dev/urandom"),
    ("replay-a-folder", ["replay", "{tmp}"], "not a regular file"),
    (
        "replay-gzip-bomb",
        ["replay", "{tmp}/gzip-bomb.trace.gz", "--max-memory", "250M"],
        "gzip-bomb.trace.gz",
    ),
    (
        "cache-npz-zip-bomb",
        ["cache", "--index-file", "{tmp}/zip-bomb.npz", "--no-accuracy", "--max-memory", "400M"],
        "zip-bomb.npz",
    ),
    (
        "shard-npz-zip-bomb",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/zip-bomb.npz"],
        "offsets_5",
    ),
    # --max-memory bounds an index file as the environment's limit does (it was read unbounded)
    (
        "cache-npz-zip-bomb-max-memory",
        ["cache", "--index-file", "{tmp}/zip-bomb.npz", "--no-accuracy", "--max-memory", "200M"],
        "zip-bomb.npz: this run needs about 680 MiB",
    ),
    (
        "shard-npz-zip-bomb-max-memory",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/zip-bomb.npz"]
        + ["--max-memory", "600M"],
        "above the limit of 600 MiB (--max-memory)",
    ),
    (
        "cache-npz-lying-header",
        ["cache", "--index-file", "{tmp}/lying-header.npz", "--no-accuracy"],
        "indices_0",
    ),
    (
        "evaluate-grid-of-10^10-points",
        ["evaluate", "{tmp}/huge-grid.toml", "--check"],
        "huge-grid.toml",
    ),
    (
        "rtl-export-entries-1e9",
        ["rtl", "export", "--entries", "1e9", "--out", "{tmp}/rtl"],
        "--entries",
    ),
    # 2e7 entries passed the memory guard and ran past a minute
    (
        "rtl-export-entries-2e7",
        ["rtl", "export", "--entries", "20000000", "--out", "{tmp}/rtl"],
        "--entries must be in 1..1,048,576",
    ),
    ("train-data-dev-zero", ["train", "--strategy", "none", "--data", "/dev/zero"], "/dev/zero"),
]
# issue 30: what raised a traceback, or was accepted silently
FILE_CASES = [
    ("evaluate-non-utf8-sweep", ["evaluate", "{tmp}/non-utf8.toml", "--check"], "non-utf8.toml:5"),
    (
        "replay-non-utf8-memory",
        ["replay", TRACE, "--memory", "{tmp}/non-utf8.toml"],
        "non-utf8.toml:5",
    ),
    (
        "evaluate-resume-non-utf8",
        ["evaluate", "--resume", "--out", "{tmp}/reports", "--run", "non-utf8-run"],
        "sweep.toml:5",
    ),
    ("validate-out-is-a-file", ["validate", "--only", "dram", "--out", "{tmp}/a_file"], "--out"),
    ("validate-out-in-proc", ["validate", "--only", "dram", "--out", "/proc"], "--out"),
    ("validate-out-empty", ["validate", "--only", "dram", "--out", ""], "--out"),
    ("evaluate-out-empty", ["evaluate", "{tmp}/small.toml", "--out", ""], "--out"),
    ("train-crossover-out-proc", ["train", "--crossover", "--out", "/proc"], "--out"),
    ("train-crossover-out-empty", ["train", "--crossover", "--out", ""], "--out"),
    ("rtl-export-out-empty", ["rtl", "export", "--out", ""], "--out"),
    (
        "shard-truncated-npz",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/truncated.npz"],
        "truncated.npz",
    ),
    (
        "cache-truncated-npz",
        ["cache", "--index-file", "{tmp}/truncated.npz", "--no-accuracy"],
        "truncated.npz",
    ),
    (
        "cache-npz-batch-0",
        ["cache", "--index-file", "{tmp}/batch0.npz", "--no-accuracy"],
        "offsets_0",
    ),
    (
        "shard-npz-batch-0",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/batch0.npz"],
        "offsets_0",
    ),
    (
        "cache-npz-nan-weights",
        ["cache", "--index-file", "{tmp}/nan-weights.npz", "--no-accuracy"],
        "weights_3",
    ),
    (
        "shard-npz-nan-weights",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/nan-weights.npz"],
        "weights_3",
    ),
    ("evaluate-runner-signature", ["evaluate", "{tmp}/bad-runner.toml", "--check"], "runner"),
    ("replay-timing-negative", ["replay", TRACE, "--set", "timing.nCL=-5"], "timing.nCL"),
    ("replay-timing-zero", ["replay", TRACE, "--set", "timing.nRP=0"], "timing.nRP"),
    ("run-timing-zero", [*RUN, "--set", "memory.timing.nRCD=0"], "timing.nRCD"),
    ("train-compare-and-extrapolate", ["train", "--compare", "--extrapolate"], "--extrapolate"),
    ("train-extrapolate-and-crossover", ["train", "--extrapolate", "--crossover"], "--crossover"),
    (
        "evaluate-resume-custom-study",
        ["evaluate", "--resume", "--out", "{tmp}/reports", "--run", "study-run"],
        "own runner",
    ),
    (
        "train-tsv-bad-label",
        ["train", "--strategy", "none", "--data", "{tmp}/bad-label.tsv"],
        "bad-label.tsv:3",
    ),
    (
        "train-tsv-nan-dense",
        ["train", "--strategy", "none", "--data", "{tmp}/nan-dense.tsv"],
        "nan-dense.tsv:3",
    ),
    # a categorical id out of uint64 was an internal OverflowError
    (
        "train-tsv-negative-hex",
        ["train", "--strategy", "none", "--data", "{tmp}/neg-hex.tsv"],
        "neg-hex.tsv:3: malformed value in column 15",
    ),
    (
        "train-tsv-hex-2^64",
        ["train", "--strategy", "none", "--data", "{tmp}/hex-2^64.tsv"],
        "hex-2^64.tsv:3: malformed value in column 21",
    ),
    ("flag-not-an-int", ["cache", "--requests", "lots"], "--requests"),
]

ISSUE_30_CASES = NON_FINITE_CASES + SIZE_CASES + FILE_CASES


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in ISSUE_30_CASES], ids=[c[0] for c in ISSUE_30_CASES]
)
def test_issue_30_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(case_in_process(argv, tmp_path, capsys, monkeypatch), expect)


BOUNDED_SCRIPT = """
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from nmp.cli import main
out = []
for case_id, argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    out.append([case_id, code, err.getvalue()])
print(json.dumps(out))
"""
BOUNDED_CASES = [
    "cache-requests-2^40",
    "train-nodes-1e9",
    "train-trials-1e9",
    "shard-gpus-1e6",
    "shard-profile-batches-1e9",
    "shard-npz-zip-bomb",
    "cache-npz-lying-header",
    "replay-dev-zero",
    "evaluate-grid-of-10^10-points",
]


def test_refusals_stay_within_the_guards_memory(tmp_path: Path) -> None:
    """The size cases again, in one process whose address space is capped at 4 GiB: a refusal
    that allocated first would end in MemoryError (nmp's 'out of memory' line, without the
    key), not in the guard's line naming it."""
    import json

    cases = {c[0]: c for c in ISSUE_30_CASES}
    argvs = []
    for case_id in BOUNDED_CASES:
        subs = make_files(tmp_path, cases[case_id][1])
        argvs.append([case_id, [a.format(**subs) for a in cases[case_id][1]]])
    env = {k: v for k, v in os.environ.items() if v and k != "NMP_MAX_MEMORY"}
    proc = subprocess.run(
        [sys.executable, "-c", BOUNDED_SCRIPT.format(limit=4 * 1024**3), json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for case_id, code, err in json.loads(proc.stdout):
        _assert_clean_error(subprocess.CompletedProcess([], code, "", err), cases[case_id][2])
