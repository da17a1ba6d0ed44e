"""Shared fixtures: small workloads on the Criteo-like recross-eval spec, so replays stay short."""

from __future__ import annotations

import pytest

from nmp.arch import load_arch_spec
from nmp.config import preset_names
from nmp.workload import load_workload

# every design preset in models/arch/ (a preset a user adds is tested too: docs/extending.md)
PRESETS = tuple(preset_names("arch"))
SHIPPED = ("host-cpu", "tensordimm", "recnmp", "trim-g", "trim-b", "recross")
# the presets with near-memory units (a reduction tree of their own)
NMP_PRESETS = tuple(p for p in PRESETS if load_arch_spec(p).unit_levels)


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
