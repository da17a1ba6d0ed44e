"""Helpers for the DRAM engine tests: where the reference data lives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """Reference data: $NMP_SHARED, else <repo>/../shared (COMMON.md)."""
    env = os.environ.get("NMP_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def dram_ref_dir() -> Path:
    return shared_dir() / "reference" / "dram"


def load_cases() -> list[dict]:
    path = dram_ref_dir() / "cases.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text())["cases"]


def require_ref() -> Path:
    path = dram_ref_dir()
    if not (path / "cases.json").is_file():
        pytest.fail(f"DRAM reference data not found at {path} (set NMP_SHARED)")
    return path
