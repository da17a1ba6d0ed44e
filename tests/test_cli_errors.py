"""Bad input through the command line: exit status 1, one line ``nmp: error: ...`` that names
the key/file/flag, and never a traceback (issue 25's list, each reproduced on main before its
fix). The table runs through ``nmp.cli.main`` in this process (an exception escaping it, a
traceback for a user, fails the test); a failed start and piped output run as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "traces" / "stream_64k.trace.gz")
RUN = ["run", "--arch", "recross", "--workload", "recross-eval"]


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "a_file").write_text("x\n")
    (tmp / "ooo.trace").write_text("0x40 READ 10\n0x80 READ 20\n0xc0 WRITE 15\n")
    (tmp / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "big.toml").write_text(
        'name = "big"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
        'baseline = "host-cpu"\n[axes]\n"workload.batch" = [32, 100000000]\n'
    )
    # a small sweep of two NMP presets: the evaluate cases fail before any point runs
    (tmp / "small.toml").write_text(
        'name = "small"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
        'baseline = "host-cpu"\n'
    )
    return {"tmp": str(tmp)}


# (case id, argv with {tmp} placeholders, text the one-line message must contain)
CASES = [
    # the resource guard: refused before anything is allocated
    ("replay-2^30-channels", ["replay", TRACE, "--channels", "1073741824"], "--channels"),
    (
        "replay-2^20-channels",
        ["replay", TRACE, "--channels", "1048576", "--max-memory", "1G"],
        "--channels",
    ),
    ("replay-1024-ranks", ["replay", TRACE, "--ranks", "1024", "--max-memory", "40M"], "--ranks"),
    ("run-batch-1e9", [*RUN, "--set", "workload.batch=1000000000"], "workload.batch"),
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
]
# training inputs (H-train's fixes): added here once `nmp train` rejects them cleanly
TRAIN_CASES = [
    ("train-cost-sample-0", ["train", "--set", "train.cost_sample=0"], "cost_sample"),
    ("train-cost-sample-neg", ["train", "--set", "train.cost_sample=-1"], "cost_sample"),
    ("train-seed-negative", ["train", "--seed", "-1"], "seed"),
    (
        "train-data-binary",
        ["train", "--strategy", "ecrec", "--data", "{tmp}/binary.bin"],
        "binary.bin",
    ),
]


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    subs = _files(tmp)
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
    """``nmp ARGV`` through the CLI's entry point, in this process."""
    from nmp.cli import main

    subs = _files(tmp)
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("COLUMNS", "200")  # what main() sets for piped output, kept local
    monkeypatch.delenv("NMP_MAX_MEMORY", raising=False)
    capsys.readouterr()
    code = main([a.format(**subs) for a in argv])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def _assert_clean_error(proc: subprocess.CompletedProcess, expect: str) -> None:
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [ln for ln in err if ln.startswith("nmp: error: ")]
    assert len(errors) == 1, proc.stderr[-2000:]
    assert expect in errors[0], errors[0]


@pytest.mark.parametrize(("argv", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_error(
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
