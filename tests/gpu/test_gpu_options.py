"""A GPU preset's named options (nmp/gpu/options.py): the spec accepts exactly the registered
names, an unknown one is an error naming its key and the known ones, and the model follows an
option's switches, not its name (an option registered under a new name behaves as the one
whose switches it copies)."""

from __future__ import annotations

import dataclasses

import pytest

from nmp.errors import SpecError
from nmp.evaluate.point import run_point
from nmp.gpu import load_gpu
from nmp.gpu.options import PARTITION_POLICIES, PINNING_MECHANISMS, PINNING_SCOPES, TABLE_LAYOUTS


@pytest.mark.parametrize(
    ("key", "registry"),
    [
        ("layout", TABLE_LAYOUTS),
        ("pinning.mechanism", PINNING_MECHANISMS),
        ("pinning.scope", PINNING_SCOPES),
        ("l2.partition_policy", PARTITION_POLICIES),
    ],
)
def test_each_option_takes_the_registered_names_only(key, registry) -> None:
    for name in registry.names():
        load_gpu("h200", {key: name})
    with pytest.raises(SpecError, match=rf"{key}.*unknown .*'nope' \(known: "):
        load_gpu("h200", {key: "nope"})


def test_the_switches_the_spec_reads() -> None:
    gpu = load_gpu("h200", {"variant": "combined"})
    assert gpu.uses_pin_prefetch and not gpu.uses_access_window and gpu.pinning.per_table
    window = load_gpu("h200", {"variant": "combined", "pinning.mechanism": "access_window"})
    assert window.uses_access_window and window.uses_hot_first_layout
    assert not window.uses_pin_prefetch
    assert not load_gpu("h200", {"pinning.scope": "global"}).pinning.per_table
    stock = load_gpu("h200")  # no pinning variant: no mechanism applies
    assert not (stock.uses_pin_prefetch or stock.uses_access_window)
    near = load_gpu("h200", {"l2.partition_policy": "near"})
    assert near.l2.caches == near.l2.partitions == 2 and stock.l2.caches == 1


@pytest.fixture
def twin(monkeypatch):
    """``per_table_twin``: a pinning scope with the per-table scope's switches under a new
    name (registered for this test only)."""
    entry = dataclasses.replace(PINNING_SCOPES.get("per_table"), name="per_table_twin")
    monkeypatch.setitem(PINNING_SCOPES._items, entry.name, entry)
    return entry.name


def test_the_model_follows_the_switches_not_the_name(twin) -> None:
    over = {"workload.reuse": "high", "arch.variant": "pinning"}
    named = run_point("h200", "gpu-micro24", overrides={**over, "arch.pinning.scope": "per_table"})
    copy = run_point("h200", "gpu-micro24", overrides={**over, "arch.pinning.scope": twin})
    assert copy.lookups_per_s == named.lookups_per_s
    assert copy.energy_pj_per_lookup == named.energy_pj_per_lookup
    # (and the scope matters here: a model that asked the name would time the twin as global)
    other = run_point("h200", "gpu-micro24", overrides={**over, "arch.pinning.scope": "global"})
    assert other.lookups_per_s < 0.97 * named.lookups_per_s
