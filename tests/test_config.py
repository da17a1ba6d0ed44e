"""Spec loading and overrides: errors name the file and the key."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from nmp.config import (
    KeyedValueError,
    apply_overrides,
    from_mapping,
    load_toml,
    parse_set_args,
)
from nmp.errors import SpecError


@dataclass(frozen=True)
class Level:
    units: int
    clock_mhz: float = 300.0


@dataclass(frozen=True)
class Spec:
    name: str
    rank: Level
    levels: tuple[Level, ...] = ()
    tags: dict[str, int] = field(default_factory=dict)

    def validate(self) -> None:
        if self.rank.units <= 0:
            raise KeyedValueError("rank.units", "must be positive")


def test_from_mapping_builds_nested_frozen_dataclasses():
    spec = from_mapping(Spec, {"name": "x", "rank": {"units": 2}, "levels": [{"units": 4}]})
    assert spec.rank == Level(2, 300.0)
    assert spec.levels == (Level(4, 300.0),)


def test_unknown_key_names_file_and_path():
    with pytest.raises(SpecError) as exc:
        from_mapping(Spec, {"name": "x", "rank": {"unit": 2}}, file="a.toml")
    assert "a.toml" in str(exc.value) and "rank.unit" in str(exc.value)


def test_wrong_type_and_missing_key():
    with pytest.raises(SpecError, match="rank.units.*integer"):
        from_mapping(Spec, {"name": "x", "rank": {"units": "two"}})
    with pytest.raises(SpecError, match="'rank'.*missing"):
        from_mapping(Spec, {"name": "x"})


def test_validate_reports_sub_key():
    with pytest.raises(SpecError, match="rank.units.*positive"):
        from_mapping(Spec, {"name": "x", "rank": {"units": 0}})


def test_overrides_by_dotted_path_revalidate():
    spec = from_mapping(Spec, {"name": "x", "rank": {"units": 2}, "levels": [{"units": 4}]})
    new = apply_overrides(spec, parse_set_args(["rank.units=8", "levels.0.clock_mhz=1.5e3"]))
    assert new.rank.units == 8 and new.levels[0].clock_mhz == 1500.0
    with pytest.raises(SpecError, match="arch.rank.bogus"):
        apply_overrides(spec, {"rank.bogus": 1}, root="arch")
    with pytest.raises(SpecError, match="arch.rank.units.*positive"):
        apply_overrides(spec, {"rank.units": 0}, root="arch")


def test_toml_syntax_error_names_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("a = 1\nb = = 2\n")
    with pytest.raises(SpecError) as exc:
        load_toml(path)
    assert f"{path}:2" in str(exc.value)


def test_set_values_parse_as_toml_scalars():
    assert parse_set_args(["a=8", "b=true", "c=combined", "d=[1, 2]"]) == {
        "a": 8,
        "b": True,
        "c": "combined",
        "d": [1, 2],
    }
    with pytest.raises(SpecError):
        parse_set_args(["novalue"])
