"""Issue 42's bad inputs through the command line, by kind: every one once ran forever, raised
a traceback, ran with a wrong result, replaced a file, or named the wrong thing; now exit status
1 and one line that names it (the table runs as tests/test_cli_errors.py's does)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_inputs import RUN, TRACE, case_in_process
from bad_inputs import assert_one_line_error as _assert_clean_error

# issue 42: by kind, two instances (or more) each; every one once ran forever, raised a
# traceback, ran with a wrong result, replaced a file, or named the wrong thing
ISSUE_42_CASES = [
    # hangs: a spec that can never make progress is refused at load, naming its rule
    ("replay-set-nrefi-100", ["replay", TRACE, "--set", "timing.nREFI=100"], "refresh-leaves-time"),
    (
        "replay-memory-toml-nrefi-600",
        ["replay", TRACE, "--memory", "{tmp}/refresh-forever.toml"],
        "refresh-leaves-time",
    ),
    (
        "run-set-memory-nrefi",
        [*RUN, "--set", "memory.timing.nREFI=700", "--set", "workload.batch=1"],
        "key 'memory.timing.nREFI'",
    ),
    # hangs: a named pipe read as an input blocks forever
    ("cache-request-file-fifo", ["cache", "--request-file", "{tmp}/fifo"], "named pipe"),
    ("cache-index-file-fifo", ["cache", "--index-file", "{tmp}/fifo"], "named pipe"),
    ("replay-memory-fifo", ["replay", TRACE, "--memory", "{tmp}/fifo.toml"], "named pipe"),
    # tracebacks: TOML nested deeper than the parser's recursion
    (
        "replay-memory-5000-brackets",
        ["replay", TRACE, "--memory", "{tmp}/deep-arrays.toml"],
        "nested",
    ),
    (
        "shard-topology-3000-part-key",
        ["shard", "--workload", "criteo-kaggle", "--topology", "{tmp}/deep-dotted.toml"],
        "nested",
    ),
    (
        "run-workload-600-inline-tables",
        ["run", "--arch", "recross", "--workload", "{tmp}/deep-inline.toml"],
        "nested",
    ),
    ("run-set-deep-array", [*RUN, "--set", "workload.rows=" + "[" * 3000 + "]" * 3000], "nested"),
    # tracebacks: a value outside a function's domain
    ("rtl-export-seed-negative", ["rtl", "export", "--seed", "-1", "--out", "{tmp}/rtl"], "--seed"),
    ("cache-seed-negative", ["cache", "--seed", "-5", "--no-accuracy"], "--seed"),
    # silent wrong results: timing that overflows the engine's cycle counts
    ("replay-set-ncl-1e17", ["replay", TRACE, "--set", "timing.nCL=99999999999999999"], "nCL"),
    ("replay-memory-nrfc-1e17", ["replay", TRACE, "--memory", "{tmp}/nrfc-overflow.toml"], "nRFC"),
    # messages that named the wrong thing: a non-regular file given as TOML
    ("replay-memory-dev-zero", ["replay", TRACE, "--memory", "/dev/zero"], "is a device"),
    ("replay-memory-folder", ["replay", TRACE, "--memory", "{tmp}/a_folder.toml"], "is a folder"),
    ("run-workload-fifo", ["run", "--arch", "recross", "--workload", "{tmp}/fifo"], "named pipe"),
    ("evaluate-sweep-fifo", ["evaluate", "{tmp}/fifo.toml", "--check"], "named pipe"),
    ("evaluate-sweep-folder", ["evaluate", "{tmp}/a_folder.toml", "--check"], "is a folder"),
    # hangs and out-of-memory: every count a controller allocates by is bounded
    (
        "replay-read-queue-1e9",
        ["replay", TRACE, "--set", "controller.read_queue=1e9"],
        "read_queue",
    ),
    (
        "replay-line-bytes-1g",
        ["replay", TRACE, "--set", "controller.line_bytes=1073741824"],
        "controller.line_bytes",
    ),
    (
        "replay-org-beyond-64-bit",
        ["replay", TRACE, "--set", "org.rows=1099511627776", "--set", "org.columns=1099511627776"],
        "64-bit",
    ),
    # hangs and out-of-memory: counts of the cache's users and training's workers
    ("cache-users-1e12", ["cache", "--request-model", "users", "--users", "1e12"], "--users"),
    (
        "cache-user-history-1e12",
        ["cache", "--request-model", "users", "--user-history", "1e12"],
        "--user-history",
    ),
    (
        "train-workers-1e6",
        ["train", "--strategy", "none", "--set", "train.workers=1e6"],
        "train.workers",
    ),
    # messages: the key that makes a training run large
    ("train-dim-1e9", ["train", "--strategy", "none", "--set", "train.dim=1e9"], "key 'train.dim'"),
    # messages: the file or the key to blame
    (
        "replay-memory-ddr9",
        ["replay", TRACE, "--memory", "{tmp}/ddr9.toml"],
        "ddr9.toml: key 'standard'",
    ),
    (
        "replay-memory-watermark-5",
        ["replay", TRACE, "--memory", "{tmp}/watermark.toml"],
        "key 'controller.wr_high_watermark'",
    ),
    (
        "replay-set-watermark-below-low",
        ["replay", TRACE, "--set", "controller.wr_high_watermark=0.1"],
        "key 'controller.wr_high_watermark'",
    ),
    # hangs: every count checked before it is allocated, the guard naming the key that is large
    (
        "run-num-tables-1e7",
        [
            "run",
            "--arch",
            "recross",
            "--workload",
            "dlrm-benchmark",
            "--set",
            "workload.num_tables=1e7",
        ],
        "workload.num_tables",
    ),
    (
        "run-num-tables-20000",
        [
            "run",
            "--arch",
            "host-cpu",
            "--workload",
            "dlrm-benchmark",
            "--set",
            "workload.num_tables=20000",
        ],
        "workload.num_tables",
    ),
    (
        "run-num-tables-4000-guard",
        [
            "run",
            "--arch",
            "recross",
            "--workload",
            "dlrm-benchmark",
            "--set",
            "workload.num_tables=4000",
        ],
        "key 'workload.num_tables': this run needs",
    ),
    # hangs: training's nodes checked against the hardware and the memory guard up-front
    ("train-ecrec-nodes-9", ["train", "--strategy", "ecrec", "--nodes", "9"], "train.nodes"),
    (
        "train-nodes-1e5-max-memory",
        ["train", "--strategy", "none", "--nodes", "100000", "--max-memory", "8G"],
        "train.nodes",
    ),
    ("train-procs-9-servers", ["train", "--strategy", "ecrec", "--procs", "9,1"], "train.nodes"),
    # tracebacks: a Zipf exponent outside the sampler's domain
    ("run-set-alpha-1000", [*RUN, "--set", "workload.alpha=1000"], "workload.alpha"),
    ("cache-alpha-1000", ["cache", "--alpha", "1000", "--no-accuracy"], "alpha"),
    (
        "cache-user-alpha-80",
        ["cache", "--request-model", "users", "--user-alpha", "80"],
        "--user-alpha",
    ),
    # silent wrong results: an empty list of rows was ignored
    ("run-set-rows-empty", [*RUN, "--set", "workload.rows=[]"], "workload.rows"),
    (
        "cache-set-rows-empty",
        ["cache", "--workload", "{tmp}/no-rows.toml", "--no-accuracy"],
        "rows",
    ),
    # messages: flags that do not combine, an address that is none
    (
        "evaluate-dask-workers-and-jobs",
        [
            "evaluate",
            "{tmp}/small.toml",
            "--out",
            "{tmp}/reports",
            "--dask-workers",
            "2",
            "-j",
            "2",
        ],
        "--jobs and --dask-workers",
    ),
    (
        "evaluate-scheduler-port-out-of-range",
        ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", "h:99999999"],
        "PORT 1..65535",
    ),
    ("run-set-two-lines", [*RUN, "--set", "workload.batch=4\n5"], "several lines"),
    (
        "replay-set-two-lines",
        ["replay", TRACE, "--set", "timing.nCL=22\ntiming.nRP=1"],
        "several lines",
    ),
    # messages: the flag to blame for a run that is too large
    (
        "train-extrapolate-tiny-mtbf",
        ["train", "--extrapolate", "--server-mtbf-hours", "1e-6"],
        "key '--server-mtbf-hours'",
    ),
    (
        "train-extrapolate-servers-and-mtbf",
        ["train", "--extrapolate", "--servers", "10", "--server-mtbf-hours", "1e-7"],
        "key '--server-mtbf-hours'",
    ),
    # round 3 (new instances, each kind with two): an input file that is not a regular file
    # is refused as its flag is parsed, before any work (a pipe blocked, or failed late)
    ("replay-trace-fifo", ["replay", "{tmp}/fifo.trace"], "argument trace: "),
    (
        "shard-index-file-fifo",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/fifo.npz"],
        "argument --index-file: ",
    ),
    (
        "train-data-folder",
        ["train", "--strategy", "none", "--data", "{tmp}/a_folder.toml"],
        "is a folder",
    ),
    # silent wrong results: a data rate that disagrees with the clock the timing counts in
    (
        "replay-memory-rate-mismatch",
        ["replay", TRACE, "--memory", "{tmp}/rate-mismatch.toml"],
        "rate-mismatch.toml: key 'rate_mtps': rule rate-matches-clock",
    ),
    ("replay-set-tck", ["replay", TRACE, "--set", "tck_ps=1000"], "rate-matches-clock"),
    # messages: a setup file's value is named at its file and key, a flag's as the flag
    (
        "train-setup-tiny-mtbf",
        ["train", "--extrapolate", "--setup", "{tmp}/setup-tiny-mtbf.toml"],
        "setup-tiny-mtbf.toml: key 'values.server_mtbf_hours'",
    ),
    (
        "train-setup-k-0",
        ["train", "--extrapolate", "--setup", "{tmp}/setup-k-0.toml"],
        "setup-k-0.toml: key 'values.k'",
    ),
    ("train-storage-gbps-0", ["train", "--extrapolate", "--storage-gbps", "0"], "--storage-gbps"),
    (
        "cache-user-locality-2",
        ["cache", "--request-model", "users", "--user-locality", "2", "--no-accuracy"],
        "--user-locality",
    ),
    (
        "shard-time-limit-0",
        ["shard", "--workload", "criteo-kaggle", "--time-limit", "0"],
        "--time-limit",
    ),
    # messages after minutes: an output folder checked before the work that fills it
    (
        "train-ckpt-dir-a-file",
        ["train", "--strategy", "checkpoint", "--set", "train.ckpt_dir={tmp}/a_file"],
        "train.ckpt_dir",
    ),
    (
        "train-ckpt-dir-in-proc",
        ["train", "--strategy", "checkpoint", "--set", "train.ckpt_dir=/proc/nope"],
        "train.ckpt_dir",
    ),
    # messages after minutes: a name is looked up before the work it names
    (
        "shard-sharder-unknown",
        ["shard", "--workload", "criteo-kaggle", "--sharder", "bogus"],
        "--sharder: unknown sharder 'bogus'",
    ),
    # messages: a large count is blamed where it was given (a file's key, not a flag)
    (
        "replay-memory-toml-channels-2^20",
        ["replay", TRACE, "--memory", "{tmp}/channels-2^20.toml", "--max-memory", "1G"],
        "channels-2^20.toml: key 'org.channels'",
    ),
    (
        "replay-set-org-channels-2^20",
        ["replay", TRACE, "--set", "org.channels=1048576", "--max-memory", "1G"],
        "key 'org.channels'",
    ),
    (
        "run-workload-file-pooling-1e9",
        ["run", "--arch", "host-cpu", "--workload", "{tmp}/pooling-1e9.toml"],
        "pooling-1e9.toml: key 'pooling'",
    ),
    (
        "run-workload-file-batch-1e9",
        ["run", "--arch", "recross", "--workload", "{tmp}/batch-1e9.toml"],
        "batch-1e9.toml: key 'batch'",
    ),
    # hangs: counts of time (steps, seeds) bounded, not only counts of memory
    ("train-steps-1e12", ["train", "--strategy", "none", "--steps", "1e12"], "train.steps"),
    ("train-seeds-1e9", ["train", "--compare", "--seeds", "1e9"], "--seeds"),
    ("cache-train-steps-1e12", ["cache", "--train-steps", "1e12"], "--train-steps"),
    # hangs and data destroyed: measure host checks its output and its memory before measuring
    (
        "measure-max-mib-1e9",
        ["measure", "host", "--max-mib", "1e9", "--out", "{tmp}/m.toml"],
        "key '--max-mib'",
    ),
    (
        "measure-check-batches-1e9",
        ["measure", "host", "--check", "--batches", "1000000000", "--out", "{tmp}/m.toml"],
        "key '--batches'",
    ),
    ("measure-out-link", ["measure", "host", "--out", "{tmp}/link.toml"], "symbolic link"),
    # refused after 29 s of measuring; now before any
    (
        "measure-out-in-proc",
        ["measure", "host", "--out", "/proc/x.toml"],
        "cannot write into /proc",
    ),
    (
        "cache-save-requests-in-proc",
        ["cache", "--no-accuracy", "--save-requests", "/proc/r.txt"],
        "cannot write into /proc",
    ),
    # tracebacks: a row index beyond int64 in a request file
    (
        "cache-request-file-huge-row",
        ["cache", "--request-file", "{tmp}/req-huge-row.txt", "--no-accuracy"],
        "req-huge-row.txt:2",
    ),
    # round 4: messages name the file that gave the tables that do not fit the memory
    (
        "run-workload-file-tables-too-big",
        ["run", "--arch", "recross", "--workload", "{tmp}/huge-rows.toml"],
        "huge-rows.toml: the tables",
    ),
    (
        "run-set-rows-too-big",
        [*RUN, "--set", "workload.rows=[100000000000]"],
        "key 'workload.rows': the tables",
    ),
    # round 4: a GPU's tables must fit its HBM (a 51 PB table was timed as if it did)
    (
        "gpu-run-workload-file-too-big",
        ["run", "--arch", "a100-80gb", "--workload", "{tmp}/huge-rows.toml"],
        "huge-rows.toml: the tables",
    ),
    (
        "gpu-run-set-dim-too-big",
        [
            *["run", "--arch", "h200", "--workload", "recross-eval"],
            *["--set", "workload.dim=100000", "--max-memory", "100G"],
        ],
        "key 'workload.dim': the tables",
    ),
    # round 4: a rule between two keys blames the one that was set
    (
        "replay-set-nrfc-blamed",
        ["replay", TRACE, "--set", "timing.nRFC=13000"],
        "key 'timing.nRFC': rule refresh-leaves-time",
    ),
    (
        "replay-set-low-watermark-blamed",
        ["replay", TRACE, "--set", "controller.wr_low_watermark=0.9"],
        "key 'controller.wr_low_watermark'",
    ),
    # round 4: every count flag in its range, refused as it is parsed
    (
        "evaluate-jobs-1e6",
        ["evaluate", "{tmp}/small.toml", "--check", "--jobs", "1e6"],
        "argument --jobs/-j: must be an integer in [1, 1,024]",
    ),
    ("train-repeat-1e9", ["train", "--procs", "2,1", "--repeat", "1e9"], "argument --repeat"),
    ("train-procs-0-0", ["train", "--procs", "0,0"], "argument --procs: 0,0"),
    ("train-procs-1e6", ["train", "--procs", "1e6,1"], "argument --procs"),
    # round 4: silent wrong results: a negative energy, an interleave beyond the column bits
    ("replay-set-energy-negative", ["replay", TRACE, "--set", "energy.idd0_ma=-5"], "idd0_ma"),
    (
        "run-set-memory-vdd-0",
        [*RUN, "--set", "memory.energy.vdd_v=0"],
        "key 'memory.energy.vdd_v'",
    ),
    (
        "replay-set-interleave-9",
        ["replay", TRACE, "--set", "controller.channel_interleave_bits=9"],
        "key 'controller.channel_interleave_bits': must be <= 7",
    ),
    # round 4: a number no quantity reaches (inf - inf made nan, 2^64 overflowed numpy)
    ("replay-set-ncl-2^64", ["replay", TRACE, "--set", "timing.nCL=18446744073709551616"], "1e18"),
    ("run-set-clock-1e308", [*RUN, "--set", "arch.rank.clock_mhz=1e308"], "arch.rank.clock_mhz"),
    ("cache-ssd-read-1e308", ["cache", "--ssd-read-us", "1e308"], "argument --ssd-read-us"),
    ("train-storage-1e308", ["train", "--extrapolate", "--storage-gbps", "1e308"], "--storage"),
    # round 4: a preset refused before the work (a cache study, torch's import) instead of after
    (
        "cache-memory-fifo",
        ["cache", "--memory", "{tmp}/fifo.toml", "--no-accuracy"],
        "named pipe",
    ),
    (
        "train-arch-folder",
        ["train", "--strategy", "none", "--arch", "{tmp}/a_folder.toml"],
        "is a folder",
    ),
    ("train-fail-garbage", ["train", "--fail", "x"], "--fail expects"),
    # round 4: an empty --run was silently dropped (an auto-named folder)
    ("evaluate-run-empty", ["evaluate", "{tmp}/small.toml", "--run", "", "--check"], "--run"),
    ("evaluate-run-blank", ["evaluate", "{tmp}/small.toml", "--run", " ", "--check"], "--run"),
    # round 4: a sweep's seeds in numpy's domain (a grid sweep ignored seed = -5 silently)
    (
        "evaluate-sweep-seed-negative",
        ["evaluate", "{tmp}/seed-neg-sweep.toml", "--check"],
        "'seed'",
    ),
    (
        "evaluate-sweep-lookup-seed-2^64",
        ["evaluate", "{tmp}/lookup-seed-2^64-sweep.toml", "--check"],
        "key 'lookup_seed'",
    ),
    # round 4: a training setup's numbers bounded as every spec's
    (
        "train-setup-rows-2^64",
        ["train", "--extrapolate", "--setup", "{tmp}/setup-rows-2^64.toml"],
        "setup-rows-2^64.toml: key 'values.table_rows'",
    ),
    (
        "train-setup-storage-1e300",
        ["train", "--extrapolate", "--setup", "{tmp}/setup-storage-1e300.toml"],
        "key 'values.storage_gbps'",
    ),
    # round 4: an empty text flag was read as "not given" (the default used, nothing saved)
    ("run-memory-empty", [*RUN, "--memory", ""], "argument --memory: is empty"),
    ("train-setup-empty", ["train", "--extrapolate", "--setup", ""], "argument --setup: is empty"),
    (
        "cache-save-requests-empty",
        ["cache", "--request-model", "users", "--save-requests", " "],
        "argument --save-requests: is empty",
    ),
    ("replay-max-memory-empty", ["replay", TRACE, "--max-memory", ""], "--max-memory: is empty"),
    # messages: usage errors are one line, exit status 1
    ("no-command", [], "give a command"),
    ("unknown-flag", ["models", "--bogus"], "--bogus"),
    ("rtl-without-subcommand", ["rtl"], "give a subcommand"),
]


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in ISSUE_42_CASES], ids=[c[0] for c in ISSUE_42_CASES]
)
def test_issue_42_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(case_in_process(argv, tmp_path, capsys, monkeypatch), expect)
