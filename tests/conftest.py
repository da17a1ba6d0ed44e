"""Settings every test shares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Off a terminal, long commands print a progress line every 5 s (nmp.report.progress). A test
# that asserts a command's exact stderr must not depend on how long a loaded runner takes, so
# tests see those lines only where they ask for them (a test sets NMP_PROGRESS_EVERY_S itself).
os.environ.setdefault("NMP_PROGRESS_EVERY_S", "3600")


# The kit's shipped data (calibrations, measured records, reference facts) is written only by
# the commands that regenerate it, never by a run: a run that did (an HBM calibration of a
# part no preset has, into nmp/gpu/data/) changed every later user's results. The session
# fails if any file there changed while the tests ran.
_ROOT = Path(__file__).resolve().parent.parent
_SHIPPED_DATA = ("nmp/*/data/**/*", "data/**/*")
_SHIPPED_KEY = pytest.StashKey[dict]()


def _shipped_state() -> dict[str, tuple[int, int]]:
    out = {}
    for pattern in _SHIPPED_DATA:
        for path in _ROOT.glob(pattern):
            if path.is_file():
                st = path.stat()
                out[str(path.relative_to(_ROOT))] = (st.st_size, st.st_mtime_ns)
    return out


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # (pytest-xdist: the controller checks)
        return
    session.config.stash[_SHIPPED_KEY] = _shipped_state()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_SHIPPED_KEY, None)
    if before is None:
        return
    after = _shipped_state()
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        print(f"\nshipped data changed while the tests ran: {', '.join(changed)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first: pytest-xdist hands tests out in this order, and a slow test that
    starts last leaves the other worker idle while it runs (CI has two)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
