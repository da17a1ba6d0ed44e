"""The machine a benchmark ran on, printed beside its figures."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """CPU model, core count and Python version."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load() -> str:
    """The load average (1 / 5 / 15 min), or '-' where the OS has none."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "-"
