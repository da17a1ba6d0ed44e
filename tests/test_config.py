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


# ---- a preset folder's listing, kept while the folder is unchanged (PresetRegistry) ----------


def _arch_home(tmp_path, monkeypatch):
    import nmp.config_presets as config

    folder = tmp_path / "home" / "models" / "arch"
    folder.mkdir(parents=True)
    monkeypatch.setenv("NMP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(config.ARCH_PRESETS, "_kept", None)
    return config, folder


def _settle(folder, seconds_ago: int) -> None:
    """The folder's modification time set in the past (each call another: a change within one
    tick of the file system's clock would otherwise keep the time it had)."""
    import os
    import time

    old = time.time_ns() - seconds_ago * 10**9
    os.utime(folder, ns=(old, old))


def test_a_preset_added_or_removed_is_seen_at_the_next_lookup(tmp_path, monkeypatch) -> None:
    config, folder = _arch_home(tmp_path, monkeypatch)
    monkeypatch.setattr(config, "_RACY_NS", -(10**18))  # (keep every listing: the test's case)
    (folder / "a.toml").write_text("")
    _settle(folder, 100)
    assert config.preset_names("arch") == ["a"]
    assert config.ARCH_PRESETS._kept is not None  # kept
    assert config.preset_names("arch") == ["a"]
    (folder / "b.toml").write_text("")  # (the folder's time is now now)
    assert config.preset_names("arch") == ["a", "b"]
    _settle(folder, 50)
    assert config.preset_names("arch") == ["a", "b"]
    (folder / "a.toml").unlink()  # (the time now differs from the settled one kept)
    assert config.preset_names("arch") == ["b"] and "a" not in config.ARCH_PRESETS
    monkeypatch.delenv("NMP_HOME")
    assert "recross" in config.preset_names("arch")  # another folder: its own listing


def test_a_folder_changed_just_now_is_listed_again_at_every_lookup(tmp_path, monkeypatch):
    config, folder = _arch_home(tmp_path, monkeypatch)
    (folder / "a.toml").write_text("")
    assert config.preset_names("arch") == ["a"]
    assert config.ARCH_PRESETS._kept is None  # (within _RACY_NS of its change: not kept)
    _settle(folder, 100)
    # (utime itself sets the change time to now: still not kept)
    assert config.preset_names("arch") == ["a"] and config.ARCH_PRESETS._kept is None


def test_a_preset_that_is_no_regular_file_is_named_as_such(tmp_path, monkeypatch) -> None:
    """A preset file that was a pipe or a link to a device was listed as a preset and looked
    up as unknown ("unknown arch preset 'bad' (known: bad, ...)"); its description, read for
    ``nmp models --registries``, blocked on the pipe and read /dev/zero without end."""
    import os

    from nmp.errors import SpecError

    config, folder = _arch_home(tmp_path, monkeypatch)
    (folder / "good.toml").write_text("# a good one\n")
    os.mkfifo(folder / "pipe.toml")
    os.symlink("/dev/zero", folder / "device.toml")
    os.symlink(folder / "nowhere", folder / "dangling.toml")
    (folder / "dir.toml").mkdir()
    expect = {
        "pipe": "a named pipe (FIFO)",
        "device": "a device",
        "dangling": "a symbolic link to nothing",
        "dir": "a folder",
    }
    for name, what in expect.items():
        assert name in config.preset_names("arch")
        with pytest.raises(SpecError) as caught:
            config.find_preset("arch", name)
        assert f"{name}.toml: " in str(caught.value)
        assert f"arch preset '{name}' is {what}, not a regular file" in str(caught.value)
    rows = {row["name"]: row["description"] for row in config.ARCH_PRESETS.describe()}
    assert rows["good"] == "a good one"
    assert rows["pipe"].startswith("invalid: is a named pipe")
    assert rows["device"].startswith("invalid: is a device")


def test_a_number_of_thousands_of_digits_is_named(tmp_path) -> None:
    """tomllib lets int()'s ValueError through for a number past 4,300 digits: a TOML file or a
    --set value with one was an internal error."""
    path = tmp_path / "long.toml"
    path.write_text('name = "x"\n\nbatch = ' + "9" * 5000 + "\n")
    with pytest.raises(SpecError, match="more than 4,300 digits") as err:
        load_toml(path)
    assert (err.value.file, err.value.line) == (str(path), 3)
    with pytest.raises(SpecError, match="more than 4,300 digits") as err:
        parse_set_args(["workload.batch=" + "9" * 5000])
    assert err.value.key == "workload.batch"
