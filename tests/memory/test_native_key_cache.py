"""The engine library's key kept in the user cache (``native_build.cached_choice``; issue 43):
a hit is what the full computation gives, an edited or added source is a miss that gives the
new key, and an entry this user did not write alone is ignored. Nothing compiles here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nmp.memory import native_build

OTHER_UID = 54321


@pytest.fixture
def sources(tmp_path: Path, monkeypatch) -> Path:
    """A copy of engine.c and its headers as the module's sources, a private cache, and no
    2-s wait for entries (the copies are fresh)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    real = Path(native_build.__file__).with_name("engine.c")
    for path in (real, *real.parent.glob("engine_*.h")):
        shutil.copy(path, pkg / path.name)
    monkeypatch.setattr(native_build, "_SOURCE", pkg / "engine.c")
    monkeypatch.setattr(native_build, "_RACY_NS", 0)
    monkeypatch.setenv("NMP_CACHE_DIR", str(tmp_path / "cache"))
    if native_build._entry() is None:
        pytest.skip("no boot id or a relative PATH folder here: nothing is cached")
    return pkg


def _full() -> tuple[list[str], str]:
    cc = native_build.compiler()
    return cc, native_build.library_key(cc)


def test_a_hit_is_the_full_computation(sources: Path, monkeypatch) -> None:
    assert native_build.cached_choice() is None
    full = _full()
    assert native_build._choice() == full
    assert native_build.cached_choice() == full

    def scanned(*args):
        raise AssertionError("the key was computed again")

    monkeypatch.setattr(native_build, "compiler", scanned)
    monkeypatch.setattr(native_build, "library_key", scanned)
    assert native_build._choice() == full  # the hit: no PATH scan, no hashing


def test_an_edited_source_is_a_miss_and_a_new_key(sources: Path) -> None:
    old = native_build._choice()
    source = sources / "engine.c"
    text = source.read_bytes()
    st = source.stat()
    source.write_bytes(text.replace(b"static", b"STATIC", 1))  # same size
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))  # same modification time
    assert native_build.cached_choice() is None
    new = native_build._choice()
    assert new == _full() and new[1] != old[1]
    assert native_build.cached_choice() == new


def test_a_new_header_is_a_miss(sources: Path) -> None:
    old = native_build._choice()
    (sources / "engine_new.h").write_text("/* new */\n")
    assert native_build.cached_choice() is None
    assert native_build._choice()[1] != old[1]


def test_another_path_is_another_entry(sources: Path, monkeypatch) -> None:
    native_build._choice()
    monkeypatch.setenv("PATH", os.environ["PATH"] + os.pathsep + "/nonexistent")
    assert native_build.cached_choice() is None


def test_a_fresh_file_is_not_cached(sources: Path, monkeypatch) -> None:
    monkeypatch.setattr(native_build, "_RACY_NS", 2_000_000_000)  # the sources were just copied
    assert native_build._choice() == _full()
    assert native_build.cached_choice() is None


def _entry() -> Path:
    entry = native_build._entry()
    assert entry is not None and entry.is_file()
    return entry


def test_an_entry_others_may_write_is_ignored(sources: Path) -> None:
    native_build._choice()
    entry = _entry()
    doc = json.loads(entry.read_text())
    doc["key"] = "0" * 16  # as another user would plant it
    entry.write_text(json.dumps(doc))
    assert native_build.cached_choice() == (doc["cc"], "0" * 16)  # this user's own edit
    entry.chmod(0o666)
    assert native_build.cached_choice() is None
    assert native_build._choice() == _full()  # computed again and replaced


def test_an_entry_of_another_user_is_ignored(sources: Path, monkeypatch) -> None:
    native_build._choice()
    entry = _entry()
    if os.getuid() == 0:
        os.chown(entry, OTHER_UID, OTHER_UID)
    else:
        real_uid = os.getuid()
        from nmp import toml_cache  # (the owner rule of every cache entry)

        monkeypatch.setattr(toml_cache, "_uid", lambda: real_uid + 1)
    assert native_build.cached_choice() is None


def test_a_damaged_entry_is_ignored(sources: Path) -> None:
    native_build._choice()
    entry = _entry()
    entry.write_text('{"cc": ["clang"]')
    assert native_build.cached_choice() is None
    entry.write_text('{"cc": "clang", "key": 1, "watched": [], "resolved": null, "real": null}')
    assert native_build.cached_choice() is None


@pytest.mark.parametrize("name", ["sh", "cc", "python", "no-such-command-nmp", "/bin/sh", "."])
def test_which_is_shutil_which(name: str) -> None:
    assert native_build.which(name) == shutil.which(name)


def test_native_build_does_not_import_shutil() -> None:
    code = "import sys, nmp.memory.native_build; print('shutil' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
