"""The environment a sweep ran in, saved beside its results so that numbers can be traced."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from typing import Any

from nmp.config import project_root
from nmp.version import __version__

PACKAGES = ("numpy", "scipy", "numba", "torch", "pyrtl", "rich", "matplotlib", "dask")


def git_state() -> dict[str, Any] | None:
    """Commit and dirty flag of the checkout nmp runs from, or None outside a git checkout."""
    root = project_root()
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def environment(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    try:
        cpus: int | None = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    return {
        "nmp": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "host": socket.gethostname(),
        "cpus": cpus,
        "packages": versions,
        "git": git_state(),
        "argv": sys.argv,
        "started_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **(extra or {}),
    }
