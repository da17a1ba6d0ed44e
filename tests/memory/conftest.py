"""Fixtures of the DRAM engine tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from memref import require_ref


@pytest.fixture(scope="session")
def dram_ref() -> Path:
    return require_ref()
