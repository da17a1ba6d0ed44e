"""Bad input through the command line: exit status 1, one line ``nmp: error: ...`` that names
the key/file/flag, and never a traceback (issue 25's list, each reproduced on main before its
fix). The table runs through ``nmp.cli.main`` in this process (an exception escaping it, a
traceback for a user, fails the test); a failed start and piped output run as subprocesses."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_inputs import ROOT, RUN, TRACE, case_in_process
from bad_inputs import assert_one_line_error as _assert_clean_error

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


@pytest.mark.parametrize(("argv", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(case_in_process(argv, tmp_path, capsys, monkeypatch), expect)


@pytest.mark.parametrize(
    ("argv", "expect"), [c[1:] for c in TRAIN_CASES], ids=[c[0] for c in TRAIN_CASES]
)
def test_bad_training_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    _assert_clean_error(case_in_process(argv, tmp_path, capsys, monkeypatch), expect)
