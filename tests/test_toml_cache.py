"""The cache of the kit's parsed TOML files (nmp/toml_cache.py, issue 43: start-up): a cached
file reads back exactly what tomllib parses (types included), an edited file is parsed again,
and only this checkout's files, JSON's values and this user's entries are used."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from nmp import toml_cache
from nmp.config import load_toml, project_root


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NMP_CACHE_DIR", str(folder))
    return folder / "toml"


def _typed(value):
    """``value`` with each scalar's type beside it (1 == 1.0 == True in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def test_every_kit_file_reads_back_from_the_cache_as_parsed(cache) -> None:
    root = project_root()
    files = sorted((root / "models").rglob("*.toml")) + sorted((root / "workloads").glob("*.toml"))
    assert len(files) > 20
    for path in files:
        parsed = tomllib.loads(path.read_text(encoding="utf-8-sig"))
        assert _typed(load_toml(path)) == _typed(parsed), path  # parsed, and stored
        entry = toml_cache.entry_path(path)
        assert entry is not None and entry.is_file(), path
        assert _typed(load_toml(path)) == _typed(parsed), path  # from the entry
    assert len(list(cache.glob("*.json"))) == len(files)


def test_a_cached_file_is_not_parsed_and_an_edited_one_is(cache, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(toml_cache, "CHECKOUT", str(tmp_path))
    path = tmp_path / "spec.toml"
    path.write_text("x = 1\n[t]\ny = 2.5\n")
    assert load_toml(path) == {"x": 1, "t": {"y": 2.5}}
    # the entry is what a load reads: an entry for these bytes with other data is believed
    raw = path.read_bytes()
    toml_cache.store(path, raw, {"x": 7})
    assert load_toml(path) == {"x": 7}
    # other bytes (the file edited) miss the entry: parsed again, and the entry replaced
    path.write_text("x = 2\n")
    assert load_toml(path) == {"x": 2}
    assert toml_cache.load(path, path.read_bytes()) == {"x": 2}
    assert toml_cache.load(path, raw) is None


def test_only_this_checkouts_files_and_json_values_are_cached(cache, tmp_path, monkeypatch):
    outside = tmp_path / "user.toml"  # tmp_path is outside the checkout
    outside.write_text("x = 1\n")
    assert toml_cache.entry_path(outside) is None
    assert load_toml(outside) == {"x": 1}
    assert not cache.exists()
    monkeypatch.setattr(toml_cache, "CHECKOUT", str(tmp_path))
    dated = tmp_path / "dated.toml"
    dated.write_text("d = 2024-01-02\n")
    assert str(load_toml(dated)["d"]) == "2024-01-02"
    assert not cache.exists()  # a date is no JSON value: never cached


def test_an_entry_others_may_write_is_not_read(cache, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(toml_cache, "CHECKOUT", str(tmp_path))
    path = tmp_path / "spec.toml"
    path.write_text("x = 1\n")
    raw = path.read_bytes()
    toml_cache.store(path, raw, {"x": 7})
    entry = toml_cache.entry_path(path)
    assert entry is not None and toml_cache.load(path, raw) == {"x": 7}
    os.chmod(entry, 0o666)
    assert toml_cache.load(path, raw) is None
    assert load_toml(path) == {"x": 1}  # parsed (and the entry written anew)
    entry.write_text("{not json")
    assert toml_cache.load(path, raw) is None


def test_an_entry_that_is_a_pipe_or_link_is_not_read_and_does_not_block(
    cache, tmp_path, monkeypatch
) -> None:
    """A named pipe planted as an entry hung every command (the entry was opened blocking,
    before its type was checked); a link was followed."""
    import time

    monkeypatch.setattr(toml_cache, "CHECKOUT", str(tmp_path))
    path = tmp_path / "spec.toml"
    path.write_text("x = 1\n")
    raw = path.read_bytes()
    toml_cache.store(path, raw, {"x": 7})
    entry = toml_cache.entry_path(path)
    assert entry is not None and toml_cache.load(path, raw) == {"x": 7}
    good = entry.read_bytes()
    entry.unlink()
    os.mkfifo(entry)
    t0 = time.monotonic()
    assert toml_cache.load(path, raw) is None
    assert time.monotonic() - t0 < 5
    entry.unlink()
    (tmp_path / "elsewhere.json").write_bytes(good)
    entry.symlink_to(tmp_path / "elsewhere.json")
    assert toml_cache.load(path, raw) is None


def test_a_cache_folder_others_may_write_is_neither_read_nor_written(
    cache, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(toml_cache, "CHECKOUT", str(tmp_path))
    path = tmp_path / "spec.toml"
    path.write_text("x = 1\n")
    raw = path.read_bytes()
    toml_cache.store(path, raw, {"x": 7})
    entry = toml_cache.entry_path(path)
    assert entry is not None and toml_cache.load(path, raw) == {"x": 7}
    os.chmod(cache, 0o777)
    assert toml_cache.load(path, raw) is None
    entry.unlink()
    toml_cache.store(path, raw, {"x": 7})
    assert not entry.exists()


def test_write_own_never_writes_through_a_planted_temporary(cache, tmp_path) -> None:
    entry = cache / "e.json"
    cache.mkdir(mode=0o700, parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (cache / f".e.json.{os.getpid()}.tmp").symlink_to(victim)
    toml_cache.write_own(entry, '{"a": 1}')
    assert victim.read_text() == "keep\n"
    assert toml_cache.read_own_json(entry) == {"a": 1}
