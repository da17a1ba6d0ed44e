"""Bad input through the command line: exit status 1, one line ``nmp: error: ...`` that names
the key/file/flag, and never a traceback (issue 25's list, each reproduced on main before its
fix). The table runs through ``nmp.cli.main`` in this process (an exception escaping it, a
traceback for a user, fails the test); a failed start and piped output run as subprocesses."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import assert_one_line_error as _assert_clean_error
from bad_inputs import main_in_process, make_files

ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "traces" / "stream_64k.trace.gz")
RUN = ["run", "--arch", "recross", "--workload", "recross-eval"]


# (case id, argv with {tmp} placeholders, text the one-line message must contain)
CASES = [
    # the report's explanations (issue 42): the explain key, a preset's key assumptions
    ("evaluate-explain-bad-value", ["evaluate", "{tmp}/bad-explain.toml", "--check"], "explain"),
    # passed --check and failed in the run, naming neither the file nor the axis
    (
        "evaluate-tables-axis-on-compact-workload",
        ["evaluate", "{tmp}/tables-axis.toml", "--check"],
        "tables-axis.toml: key 'axes.workload.tables'",
    ),
    # a long name passed --check and failed at the run folder, blaming --out
    ("evaluate-name-300", ["evaluate", "{tmp}/name-300.toml", "--check"], "key 'name': must be"),
    ("evaluate-run-300", ["evaluate", "{tmp}/small.toml", "--run", "r" * 300], "at most 200"),
    (
        "evaluate-key-assumption-no-field",
        ["evaluate", "{tmp}/bad-key-sweep.toml", "--check"],
        "key_assumptions[0].set.arch.no_such_field",
    ),
    (
        "run-key-assumption-bad-root",
        ["run", "--arch", "{tmp}/bad-key-root.toml", "--workload", "recross-eval"],
        "key_assumptions[0].set.wrong.root",
    ),
    # the design file and its key were not named (the memory's org.channels, or no key)
    # read as an NMP design: "key 'die_area_mm2': unknown key"
    (
        "run-arch-gpu-preset-file",
        ["run", "--arch", str(ROOT / "models/gpu/a100-80gb.toml"), "--workload", "recross-eval"],
        "a GPU preset's file: GPU designs are named by preset (--arch a100-80gb)",
    ),
    (
        "run-arch-memory-preset-unknown",
        ["run", "--arch", "{tmp}/arch-memory-nosuch.toml", "--workload", "recross-eval"],
        "arch-memory-nosuch.toml: key 'memory.preset': unknown memory preset 'nosuch'",
    ),
    (
        "run-arch-memory-channels-3",
        ["run", "--arch", "{tmp}/arch-channels-3.toml", "--workload", "recross-eval"],
        "arch-channels-3.toml: key 'memory.channels': must be a power of two",
    ),
    # the resource guard: refused before anything is allocated
    ("replay-2^30-channels", ["replay", TRACE, "--channels", "1073741824"], "--channels"),
    (
        "replay-2^20-channels",
        ["replay", TRACE, "--channels", "1048576", "--max-memory", "1G"],
        "--channels",
    ),
    ("replay-1024-ranks", ["replay", TRACE, "--ranks", "1024", "--max-memory", "40M"], "--ranks"),
    ("run-batch-1e9", [*RUN, "--set", "workload.batch=1000000000"], "workload.batch"),
    # positive rates so small that the batch's time overflowed to infinity
    ("run-unit-clock-1e-300", [*RUN, "--set", "arch.rank.clock_mhz=1e-300"], "rank.clock_mhz"),
    ("run-llc-gbps-1e-300", [*RUN, "--set", "arch.host.llc_gbps=1e-300"], "host.llc_gbps"),
    (
        "run-instruction-bits-1e-300",
        [*RUN, "--set", "arch.instruction.host_bits_per_cycle=1e-300"],
        "instruction.host_bits_per_cycle",
    ),
    ("run-pooling-1e9", [*RUN, "--set", "workload.pooling=1000000000"], "workload.pooling"),
    (
        "run-2^20-channels",
        [*RUN, "--set", "arch.memory.channels=1048576", "--max-memory", "1G"],
        "arch.memory.channels",
    ),
    ("max-memory-garbage", ["replay", TRACE, "--max-memory", "lots"], "--max-memory"),
    # traces
    ("dramsim3-out-of-order", ["replay", "{tmp}/ooo.trace"], "ooo.trace:3"),
    ("trace-missing", ["replay", "{tmp}/nope.trace"], "nope.trace"),
    # presets
    ("unknown-arch-lists-gpus", ["run", "--arch", "nope", "--workload", "recross-eval"], "a100"),
    # sweeps
    (
        "evaluate-out-is-a-file",
        ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/a_file", "--jobs", "1"],
        "--out",
    ),
    (
        "evaluate-out-in-proc",
        ["evaluate", "{tmp}/small.toml", "--out", "/proc/nope", "--jobs", "1"],
        "--out",
    ),
    (
        "evaluate-bad-scheduler",
        ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", "notanaddress"],
        "notanaddress",
    ),
    (
        "evaluate-point-too-big",
        ["evaluate", "{tmp}/big.toml", "--out", "{tmp}/reports", "--jobs", "1"],
        "workload.batch",
    ),
    (
        "evaluate-run-escapes",
        ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--run", "../x"],
        "--run",
    ),
    # issue 38: a measured locality that does not exist, a skew scan that names no design
    ("run-unknown-locality", [*RUN, "--set", "workload.locality=nowhere"], "workload.locality"),
    # a 64 GiB L2 ended in the generic out-of-memory line; a PiB+ of HBM was taken (exit 0)
    (
        "run-gpu-l2-64GiB",
        ["run", "--arch", "a100-80gb", "--workload", "gpu-micro24"]
        + ["--set", "arch.l2.size_bytes=68719476736"],
        "arch.l2.size_bytes': at most 2^32",
    ),
    (
        "run-gpu-hbm-1e15-GiB",
        ["run", "--arch", "a100-80gb", "--workload", "gpu-micro24"]
        + ["--set", "arch.hbm.capacity_gib=1e15"],
        "arch.hbm.capacity_gib': at most 2^20",
    ),
    (
        "evaluate-bad-locality-scan",
        ["evaluate", "{tmp}/bad-scan.toml", "--check"],
        "locality_scan.designs",
    ),
]
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
# training inputs (H-train's fixes): added here once `nmp train` rejects them cleanly
TRAIN_CASES = [
    # failures drawn without end (t += exponential(1e-300) never reached the last step)
    (
        "train-mtbf-steps-tiny",
        ["train", "--strategy", "ecrec", "--random-failures", "--mtbf-steps", "1e-300"],
        "train.mtbf_steps': must be >= 1 step",
    ),
    ("train-mtbf-steps-half", ["train", "--mtbf-steps", "0.5"], "train.mtbf_steps"),
    ("train-cost-sample-0", ["train", "--set", "train.cost_sample=0"], "cost_sample"),
    ("train-cost-sample-neg", ["train", "--set", "train.cost_sample=-1"], "cost_sample"),
    ("train-seed-negative", ["train", "--seed", "-1"], "seed"),
    (
        "train-data-binary",
        ["train", "--strategy", "ecrec", "--data", "{tmp}/binary.bin"],
        "binary.bin",
    ),
]

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


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    subs = make_files(tmp, argv)
    args = [a.format(**subs) for a in argv]
    # the default memory limit, not the caller's $NMP_MAX_MEMORY
    env = {k: v for k, v in os.environ.items() if v and k != "NMP_MAX_MEMORY"}
    return subprocess.run(
        [sys.executable, "-m", "nmp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp,
        env=env,
    )


def _main(argv: list[str], tmp: Path, capsys, monkeypatch) -> subprocess.CompletedProcess:
    """``nmp ARGV`` through the CLI's entry point, in this process (its files made first)."""
    subs = make_files(tmp, argv)
    return main_in_process([a.format(**subs) for a in argv], tmp, capsys, monkeypatch)


@pytest.mark.parametrize(("argv", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(_main(argv, tmp_path, capsys, monkeypatch), expect)


ISSUE_30_CASES = NON_FINITE_CASES + SIZE_CASES + FILE_CASES


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in ISSUE_30_CASES], ids=[c[0] for c in ISSUE_30_CASES]
)
def test_issue_30_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(_main(argv, tmp_path, capsys, monkeypatch), expect)


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in TRAIN_CASES], ids=[c[0] for c in TRAIN_CASES]
)
def test_bad_training_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(_main(argv, tmp_path, capsys, monkeypatch), expect)


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in ISSUE_42_CASES], ids=[c[0] for c in ISSUE_42_CASES]
)
def test_issue_42_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(_main(argv, tmp_path, capsys, monkeypatch), expect)


def test_outputs_never_replace_a_link_a_device_or_a_pipe(tmp_path: Path, capsys, monkeypatch):
    """Issue 42: --save-requests to a symbolic link replaced the link with a file (and a device
    node with a regular file); now each is refused before the run, and left as it was."""
    users = ["cache", "--request-model", "users", "--requests", "50", "--no-accuracy"]
    for target, kind in (("{tmp}/link", "symbolic link"), ("{tmp}/fifo", "named pipe")):
        proc = _main([*users, "--save-requests", target], tmp_path, capsys, monkeypatch)
        _assert_clean_error(proc, kind)
    assert (tmp_path / "link").is_symlink() and (tmp_path / "victim.txt").read_text() == "keep\n"
    assert stat.S_ISFIFO((tmp_path / "fifo").lstat().st_mode)
    _assert_clean_error(
        _main([*users, "--save-requests", "/dev/null"], tmp_path, capsys, monkeypatch), "device"
    )
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    # measure host wrote its preset through a link (round 3); refused before it measures
    proc = _main(["measure", "host", "--out", "{tmp}/link.toml"], tmp_path, capsys, monkeypatch)
    _assert_clean_error(proc, "symbolic link")
    assert (tmp_path / "link.toml").is_symlink() and (
        tmp_path / "victim.txt"
    ).read_text() == "keep\n"


def test_a_log_never_appends_through_a_link_or_to_a_pipe(tmp_path: Path) -> None:
    """Round 3: a run folder's results.jsonl planted as a link appended to the file it named;
    a pipe blocked. Each is refused, named, and left as it was."""
    from nmp.errors import NmpError
    from nmp.evaluate.store import JsonlLog

    make_files(tmp_path, ["{tmp}/link", "{tmp}/fifo"])
    for name, kind in (("link", "symbolic link"), ("fifo", "named pipe")):
        with pytest.raises(NmpError, match=kind), JsonlLog(tmp_path / name) as log:
            log.append({"a": 1})
    assert (tmp_path / "victim.txt").read_text() == "keep\n"
    with JsonlLog(tmp_path / "new.jsonl") as log:  # a regular file: created, appended
        log.append({"a": 1})
    assert (tmp_path / "new.jsonl").read_text() == '{"a":1}\n'


def test_two_reports_in_one_second_get_two_folders(tmp_path: Path) -> None:
    """Round 3: two `nmp validate --out D` finishing in the same second both chose
    validate-<stamp>; the second failed with "File exists" after its whole run."""
    from nmp.validate.report import write_report

    first = write_report([], tmp_path, quick=True)
    second = write_report([], tmp_path, quick=True)
    assert first != second and (first / "report.md").is_file() and (second / "report.md").is_file()


FOLDER_HOLDER = """
import sys, time
from nmp.fileio import folder_lock
with folder_lock(sys.argv[1], "busy"):
    print("locked", flush=True)
    time.sleep(120)
"""


def test_a_run_folder_has_one_writer(tmp_path: Path, capsys, monkeypatch) -> None:
    """Issue 42: two `nmp train --procs` runs with one --run-dir mixed their logs and
    checkpoints; the second is now refused at once, naming the holder."""
    from nmp.errors import NmpError
    from nmp.fileio import folder_lock

    holder = subprocess.Popen(
        [sys.executable, "-c", FOLDER_HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(NmpError, match="busy"), folder_lock(tmp_path, "busy"):
            pass
        argv = ["train", "--strategy", "ecrec", "--procs", "2,1", "--run-dir", str(tmp_path)]
        proc = _main(argv, tmp_path, capsys, monkeypatch)
        _assert_clean_error(proc, f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert not (tmp_path / "ecrec").exists()  # the refused run wrote nothing


def test_output_and_encoding_and_home(tmp_path: Path) -> None:
    """Issue 42: an ASCII-only output encoding crashed with UnicodeEncodeError; a bad NMP_HOME
    listed empty preset sets instead of saying so."""
    env = {k: v for k, v in os.environ.items() if k != "NMP_MAX_MEMORY"}
    argv = [sys.executable, "-m", "nmp", *RUN, "--set", "workload.batch=2"]  # prints "µs", "mm²"
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**env, "PYTHONIOENCODING": "ascii"}
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "latency per batch" in proc.stdout
    argv = [sys.executable, "-m", "nmp", "run", "--arch", "recross", "--workload", "recross-eval"]
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, env={**env, "NMP_HOME": str(tmp_path)}
    )
    _assert_clean_error(proc, "NMP_HOME")


def test_failed_start_leaves_no_folder_and_no_latest(tmp_path: Path) -> None:
    argv = ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", "bad"]
    proc = _run(argv, tmp_path)
    assert proc.returncode == 1
    reports = tmp_path / "reports"
    assert not (reports / "latest").exists()
    assert not [p for p in reports.iterdir() if p.is_dir()] if reports.exists() else True


def test_piped_output_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    """Issue 25: piped tables wrapped at 80 columns and split names mid-word."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", "models", "--kind", "memory"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    header = next(ln for ln in proc.stdout.splitlines() if "name" in ln)
    assert "capacity_GiB" in header  # whole, on one line
    assert max(len(ln) for ln in proc.stdout.splitlines()) > 80


def test_warnings_are_one_line(tmp_path: Path) -> None:
    """A warning (here: an organization the C engine does not take) reads like an error: one
    line, no source path."""
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"LD {i * 64:#x}\n" for i in range(100)))
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", "replay", str(trace), "--ranks", "16", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nmp: warning: "), proc.stderr
    assert "numba engine" in lines[0] and ".py" not in lines[0]


def _subcommands():
    import argparse

    from nmp.cli import build_parser

    def walk(parser, name):
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    yield from walk(subparser, f"{name} {sub}")

    return list(walk(build_parser(), "nmp"))


def test_help_texts_are_whole() -> None:
    """Issue 30: every flag of every command says what it does, no choice is the empty
    string, and no help shows a docstring's reST ``literals``."""
    for name, parser in _subcommands():
        assert "``" not in parser.format_help(), name
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            assert "" not in (action.choices or ()), f"{name} {action.option_strings[0]}"


def test_number_flags_and_out_folders(tmp_path: Path) -> None:
    import argparse

    from nmp.cliargs import check_out_folder, finite_float, integer
    from nmp.errors import NmpError

    assert integer("1e9") == 10**9 and integer("-3") == -3 and integer("1_000") == 1000
    assert finite_float("1e-3") == 1e-3
    for bad in ("nan", "inf", "-inf", "1.5.2"):
        with pytest.raises(argparse.ArgumentTypeError):
            finite_float(bad)
    for bad in ("1.5", "inf", "lots"):
        with pytest.raises(argparse.ArgumentTypeError):
            integer(bad)
    assert check_out_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == []  # the probe is gone
    for bad, why in (("", "empty"), (tmp_path / "a" / "b", None), ("/proc/x", "cannot write")):
        if why is None:
            (tmp_path / "f").write_text("x")
            bad, why = tmp_path / "f", "not a folder"
        with pytest.raises(NmpError, match=why):
            check_out_folder(bad)


def test_a_compression_run_without_a_strategy_trains(capsys) -> None:
    """Issue 30: the README's `nmp train --compress hybrid` trains, without fault tolerance."""
    from nmp.cli import main

    tiny = ["--steps", "3", "--set", "train.max_tables=2", "--set", "train.max_rows=100"]
    tiny += ["--set", "train.eval_batches=1", "--set", "train.batch=16"]
    assert main(["train", "--compress", "hybrid", *tiny, "--json"]) == 0
    import json

    row = json.loads(capsys.readouterr().out)
    assert row["strategy"] == "none" and row["compress"] == "hybrid"


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


def test_validate_piped_prints_each_check_as_it_finishes(tmp_path: Path) -> None:
    """Issue 30: piped, nmp validate printed nothing until every check had run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nmp", "validate", "--only", "functional.parity.*"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    # issue 42: a progress line per stage (group of checks) on stderr, the summary on stdout
    first = proc.stderr.readline()  # arrives before the report and summary are written
    still_running = proc.poll() is None
    rest, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert first.startswith("validate [1/1] functional: 2 checks (2 agrees)"), first
    assert still_running
    assert "nmp validate: 2 checks" in rest  # the summary follows the line


def test_a_full_disk_names_the_file(tmp_path: Path, monkeypatch) -> None:
    """Issue 42: a full disk named no path (the write's OSError has none); every whole-file
    write (nmp.fileio) now names the file it could not write, and leaves no temporary file."""
    import errno

    from nmp import fileio
    from nmp.errors import NmpError

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full)
    target = tmp_path / "report.md"
    with pytest.raises(NmpError, match="report.md: cannot write: No space left on device"):
        fileio.atomic_write_text(target, "x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stalls", [False, True], ids=["closes", "stalls"])
def test_a_service_that_is_no_dask_scheduler_is_named(
    stalls: bool, tmp_path: Path, capsys, monkeypatch
):
    """Issue 42: a --scheduler address where another service answers gave nmp's "out of memory"
    line (Dask read the service's bytes as a frame count and length). Here the service sends
    a frame count of 2^34, then closes the connection or keeps it open (which hung the
    command: the answer now has a deadline)."""
    import socket
    import struct
    import threading

    from nmp.evaluate import executor

    monkeypatch.setattr(executor, "SCHEDULER_ANSWER_S", 5.0)
    held = []

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(struct.pack("<Q", 2**34) + bytes(4096))
            if stalls:
                held.append(conn)  # open, silent
            else:
                conn.close()

    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{port}"
    argv = ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--scheduler", address]
    try:
        proc = _main(argv, tmp_path, capsys, monkeypatch)
    finally:
        server.close()
        for conn in held:
            conn.close()
    _assert_clean_error(proc, address)
    assert "out of memory" not in proc.stderr


def test_every_integer_flag_has_its_range() -> None:
    """Issue 42: `--jobs 1e6` was accepted; every integer flag of every command now takes a
    range of its own (nmp.cliargs.INT_FLAG_RANGES) or a seed's, refused as it is parsed."""
    import argparse

    from nmp.cliargs import INT_FLAG_RANGES, int_flag_range

    listed = set()
    for name, parser in _subcommands():
        command = name.removeprefix("nmp").strip()
        for action in parser._actions:
            if getattr(action.type, "__name__", "") != "integer" or not action.option_strings:
                continue
            found = int_flag_range(command, action.option_strings)
            assert found, f"{name} {action.option_strings[0]} is not in INT_FLAG_RANGES"
            listed.add(f"{command} {action.option_strings[0]}")
            low, high = found
            for bad in (low - 1, high + 1):
                with pytest.raises(argparse.ArgumentTypeError, match="must be an integer in"):
                    action.type(str(bad))
            assert action.type(str(low)) == low
    assert listed == set(INT_FLAG_RANGES), set(INT_FLAG_RANGES) ^ listed  # none stale


def test_a_byte_order_mark_is_read_as_utf8(tmp_path: Path) -> None:
    """Round 4: a TOML file saved with a UTF-8 byte-order mark (as Windows editors do) failed
    as "invalid TOML: Invalid statement" at line 1; it is read as the text it holds."""
    from nmp.config import load_toml

    text = 'name = "w"\nrows = [10]\ndim = 4\n'
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    (tmp_path / "plain.toml").write_text(text)
    assert load_toml(tmp_path / "bom.toml") == load_toml(tmp_path / "plain.toml")
