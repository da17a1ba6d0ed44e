"""EDA tools: skip when absent on a user's machine, fail when CI requires them."""

from __future__ import annotations

import os
import shutil

import pytest


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    if os.environ.get("NMP_REQUIRE_EDA_TOOLS") == "1":
        pytest.fail(f"{name} is required (NMP_REQUIRE_EDA_TOOLS=1) but not installed")
    pytest.skip(f"{name} is not installed")
    raise AssertionError("unreachable")
