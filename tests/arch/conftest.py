"""Shared fixtures: small workloads on the Criteo-like recross-eval spec, so replays stay short."""

from __future__ import annotations

import pytest

from nmp.workload import load_workload

PRESETS = ("host-cpu", "tensordimm", "recnmp", "trim-g", "trim-b", "recross")


@pytest.fixture(scope="session")
def small_workload():
    """Four small tables (one of 7 rows: heavy reuse), dim 64, batch 8, pooling 20, Zipf."""
    return load_workload("recross-eval", {"rows": [1000, 500, 3000, 7], "batch": 8, "pooling": 20})


@pytest.fixture(scope="session")
def weighted_workload():
    return load_workload(
        "recross-eval",
        {"rows": [800, 64], "batch": 6, "pooling": 12, "weighted": True, "dim": 48},
    )
