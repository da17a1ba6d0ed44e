"""nmp.report.progress: plain lines off a terminal, silence with --json; the warm-cache stamp."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nmp.report import progress

ROOT = Path(__file__).resolve().parents[2]


def test_short_steps_stay_silent_off_a_terminal(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "30")
    with progress.activity("work"):
        pass
    with progress.bar("steps", total=3) as advance:
        for _ in range(3):
            advance()
    assert err.getvalue() == ""


def test_lines_every_interval_when_not_a_terminal(monkeypatch) -> None:
    """Piped or in CI, a long step prints a line every few seconds and one when it is done."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "0.05")
    with progress.activity("replaying"):
        time.sleep(0.3)
    lines = err.getvalue().splitlines()
    assert len(lines) >= 3, lines
    assert all(line.startswith("nmp: replaying: running for") for line in lines[:-1])
    assert lines[-1].startswith("nmp: replaying: done in")

    err.truncate(0)
    err.seek(0)
    with progress.bar("validate", total=4) as advance:
        for _ in range(2):
            advance()
        time.sleep(0.3)
    out = err.getvalue()
    assert "nmp: validate: running for" in out and "(2 of 4, about" in out

    err.truncate(0)
    err.seek(0)
    with progress.tasks("training", 10) as update:
        update("ecrec", 7)
        time.sleep(0.3)
    assert "(ecrec 7 of 10)" in err.getvalue()


def test_replays_counted_in_plain_lines(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "0.05")

    @contextlib.contextmanager
    def replays(count):
        count(1234)
        yield

    with progress.activity("a point", replays=replays):
        time.sleep(0.2)
    assert "1,234 DRAM transactions replayed in 1 runs" in err.getvalue()


def test_no_progress_env_and_quiet_silence_lines(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "0.05")
    with progress.activity("work", quiet=True):
        time.sleep(0.15)
    monkeypatch.setenv("NMP_NO_PROGRESS", "1")
    with progress.activity("work"):
        time.sleep(0.15)
    assert err.getvalue() == ""


def test_a_piped_command_prints_progress_on_stderr(tmp_path) -> None:
    """`nmp run` piped (stdout and stderr not terminals): progress lines on stderr, the result
    alone on stdout."""
    env = {**os.environ, "NMP_PROGRESS_EVERY_S": "0.2", "PYTHONPATH": str(ROOT)}
    env.pop("NMP_NO_PROGRESS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", "run", "--arch", "trim-b", "--workload", "recross-eval"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "nmp: running the model: running for" in proc.stderr
    assert "nmp: running the model: done in" in proc.stderr
    assert "nmp:" not in proc.stdout and "lookups/s" in proc.stdout


def test_quiet_flag_wins_on_a_terminal(monkeypatch) -> None:
    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", err)
    with progress.activity("work", quiet=True):
        pass
    assert err.getvalue() == ""


def test_first_use_marks_the_cache_warm(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not progress.is_warm()
    with progress.first_use_status(quiet=True):
        pass
    assert progress.is_warm()


def test_sweep_lines_between_points_off_a_terminal(monkeypatch) -> None:
    """A sweep's point can run for minutes: between its per-point lines, a heartbeat line."""
    from rich.console import Console

    from nmp.report.console import ConsoleProgress

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "0.05")
    lines = ConsoleProgress(Console(file=io.StringIO(), force_terminal=False))
    lines.start(3, 0)
    lines.point("a on w", True, "1 lookups/s")
    time.sleep(0.2)
    lines.finish()
    assert "nmp: sweep: running for" in err.getvalue()
    assert "(1 of 3 points done)" in err.getvalue()


@pytest.mark.parametrize("value", ["abc", "nan", "-1", "0", "inf"])
def test_a_bad_interval_is_said_once_and_the_default_taken(monkeypatch, capsys, value) -> None:
    """NMP_PROGRESS_EVERY_S=abc (or nan, -1) was taken as 5 s without a word."""
    monkeypatch.setattr(progress, "_SAID", set())
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", value)
    assert progress.interval_s() == progress.DEFAULT_INTERVAL_S
    assert progress.interval_s() == progress.DEFAULT_INTERVAL_S
    err = capsys.readouterr().err
    assert err.count("NMP_PROGRESS_EVERY_S") == 1 and "5 s used" in err
    monkeypatch.setenv("NMP_PROGRESS_EVERY_S", "2.5")
    assert progress.interval_s() == 2.5
