"""Bad architecture specs fail with an error that names the offending key."""

from __future__ import annotations

import pytest

from nmp.arch import load_arch, load_arch_spec
from nmp.errors import SpecError

from .conftest import NMP_PRESETS, PRESETS, SHIPPED


@pytest.mark.parametrize("name", PRESETS)
def test_presets_load(name):
    arch = load_arch(name)
    assert arch.spec.name == name
    assert arch.mem.org.ranks >= 1


@pytest.mark.parametrize(
    ("name", "overrides", "key"),
    [
        ("trim-g", {"bankgroup.units": 3}, "arch.bankgroup.units"),  # 3 does not divide 32 banks
        ("recross", {"bank.units": 3}, "arch.bank.units"),
        ("recross", {"bankgroup.capacity_banks": 8}, "capacity_banks"),  # 16+8+4 != 32
        ("recross", {"rank.units": 2}, "arch.rank.units"),
        ("recnmp", {"rank.cache_kib": 512.0}, "arch.rank.cache_kib"),  # > buffer_kib (SRAM)
        ("recross", {"policy": "diagonal"}, "arch.policy"),
        ("recross", {"bank.lanes": 0}, "arch.bank.lanes"),
        ("recnmp", {"subarray_parallelism": True}, "arch.subarray_parallelism"),
        ("recross", {"bankgroup.cache_kib": 4.0}, "arch.bankgroup.cache_kib"),
        # switches with named readings: the error lists them
        ("recross", {"bank.salp": "salp3"}, "arch.bank.salp': unknown reading 'salp3' (known:"),
        (
            "trim-g",
            {"replica_choice": "random"},
            "replica_choice': unknown replica choice 'random'",
        ),
        ("recnmp", {"rank.cache_policy": "lfu"}, "arch.rank.cache_policy': unknown 'lfu'"),
        ("recross", {"base_placement": "rows"}, "base_placement': unknown base placement 'rows'"),
    ],
)
def test_bad_specs_name_the_key(name, overrides, key):
    with pytest.raises(SpecError) as exc:
        load_arch(name, overrides=overrides)
    assert key in str(exc.value)


def test_unknown_field_and_bad_toml(tmp_path):
    with pytest.raises(SpecError, match="arch.bank.speed"):
        load_arch_spec("recross", {"bank.speed": 1})
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\npolicy = "horizontal"\n[memory]\npreset = "ddr5-4800an"\n'
        "[rank]\nunits = 1\ncache_kib = 64.0\nbuffer_kib = 16.0\n"
    )
    with pytest.raises(SpecError) as exc:
        load_arch_spec(str(bad))
    assert "bad.toml" in str(exc.value) and "rank.cache_kib" in str(exc.value)


def test_tables_must_fit(small_workload):
    from nmp.errors import NmpError
    from nmp.workload import load_workload

    arch = load_arch("recross")
    huge = load_workload("recross-eval", {"rows": [2**31, 2**31], "dim": 64})
    with pytest.raises(NmpError, match="do not fit"):
        arch.bind(huge)


def test_every_shipped_design_is_tested_and_only_the_host_lacks_units():
    assert set(SHIPPED) <= set(PRESETS)
    assert "host-cpu" not in NMP_PRESETS and set(SHIPPED) - {"host-cpu"} <= set(NMP_PRESETS)
