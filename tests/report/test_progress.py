"""nmp.report.progress: quiet off a terminal and with --json; the warm-cache stamp."""

from __future__ import annotations

import io
import sys

from nmp.report import progress


def test_quiet_when_not_a_terminal(monkeypatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with progress.activity("work"):
        pass
    with progress.bar("steps", total=3) as advance:
        for _ in range(3):
            advance()
    assert err.getvalue() == ""


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
