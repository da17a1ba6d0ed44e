"""Helpers for the DRAM engine tests: where the reference data lives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmp.reference import dram_reference_dir as dram_ref_dir


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
