"""The C engine's library is loaded only from places no other user can write (issue 30: a
library planted in the predictable ``$TMPDIR/nmp-<uid>`` ran its constructor inside ``nmp
replay``), and a corrupt cached library is built again.

No test compiles: ``$CC`` is a script that copies a library (the real one where this machine has
it) to the ``-o`` path, so each test's key is its own and nothing is found prebuilt. Foreign
ownership is real where the tests run as root (``os.chown`` to another uid); elsewhere the
folders' owner is made foreign by making this user another uid for the module under test."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from nmp.memory import native_build, native_load

OTHER_UID = 54321


def _name() -> str:
    return f"engine-{native_build.library_key(native_build.compiler())}.so"


def _make_foreign(folder: Path, monkeypatch) -> None:
    """``folder`` (and what is in it) owned by another user."""
    if os.getuid() == 0:
        for path in (folder, *folder.iterdir()):
            os.chown(path, OTHER_UID, OTHER_UID)
    else:  # this user becomes someone else for native_build: its own folder is foreign
        real_uid = os.getuid()
        monkeypatch.setattr(native_build, "_uid", lambda: real_uid + 1)


def _plant(folder: Path, mode: int = 0o700) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lib = folder / _name()
    lib.write_bytes(b"planted")
    folder.chmod(mode)
    return lib


def test_folders_are_created_private_and_reused(fake_cc: Path, tmp_path: Path) -> None:
    lib = native_build.build()
    cache = tmp_path / "cache"
    assert lib == cache / _name()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert lib.stat().st_uid == os.getuid()
    assert native_build.build() == lib  # found again, not rebuilt
    cache.chmod(0o755)  # ours, readable by others: tightened, still used
    assert native_build.build() == lib
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_foreign_owned_cache_folder_is_refused(fake_cc, tmp_path, monkeypatch) -> None:
    planted = _plant(tmp_path / "cache")
    _make_foreign(tmp_path / "cache", monkeypatch)
    lib = native_build.build()
    assert lib != planted and lib.read_bytes() == fake_cc.read_bytes()
    if os.getuid() == 0:  # the next private folder: $TMPDIR/nmp-<uid>, created 0700
        assert lib.parent == Path(tempfile.gettempdir()) / f"nmp-{os.getuid()}"
        assert stat.S_IMODE(lib.parent.stat().st_mode) == 0o700


def test_a_world_writable_cache_folder_is_refused(fake_cc, tmp_path) -> None:
    planted = _plant(tmp_path / "cache", mode=0o777)
    lib = native_build.build()
    assert lib != planted and lib.parent != tmp_path / "cache"
    assert planted.read_bytes() == b"planted"  # left alone, never loaded


def test_a_planted_library_in_the_predictable_temp_folder_is_not_loaded(
    fake_cc, tmp_path, monkeypatch
) -> None:
    """Issue 30's case: the user cache is not writable, and another user made
    ``$TMPDIR/nmp-<uid>`` first, with a library of the right name in it."""
    monkeypatch.setenv("NMP_CACHE_DIR", "/proc/nmp-cache")  # cannot be created
    predictable = Path(tempfile.gettempdir()) / f"nmp-{os.getuid()}"
    planted = _plant(predictable)
    _make_foreign(predictable, monkeypatch)
    lib = native_build.build()
    assert lib.parent != predictable and lib != planted
    assert lib.parent.parent == Path(tempfile.gettempdir())  # a fresh mkdtemp folder
    assert lib.parent.name.startswith("nmp-engine-")
    assert stat.S_IMODE(lib.parent.stat().st_mode) == 0o700


def test_a_library_writable_by_others_is_replaced(fake_cc, tmp_path) -> None:
    planted = _plant(tmp_path / "cache")
    planted.chmod(0o666)
    lib = native_build.build()
    assert lib == planted and lib.read_bytes() == fake_cc.read_bytes()
    assert not lib.stat().st_mode & 0o022


def test_a_corrupt_cached_library_is_rebuilt(fake_cc, tmp_path) -> None:
    if fake_cc.read_bytes() == b"not a library":
        pytest.skip("no C engine library on this machine to load")
    corrupt = _plant(tmp_path / "cache")
    corrupt.write_bytes(fake_cc.read_bytes()[:4096])  # a truncated library
    fn = native_load.load("simulate_c")
    assert fn is not None
    assert corrupt.read_bytes() == fake_cc.read_bytes()  # built again, in place


def test_the_install_build_uses_werror_and_says_when_it_falls_back(tmp_path, monkeypatch, capsys):
    """build_into compiles with -Werror; where that fails (a warning, or a compiler without the
    flag) it compiles again without it and says so on stderr."""
    from nmp.memory import native_build as nb

    calls: list[tuple[str, ...]] = []

    def fake(cc, extra, tmp):
        calls.append(extra)
        if extra:
            raise subprocess.CalledProcessError(1, cc, stderr="engine.c:1: warning: made up\n")
        Path(tmp).write_bytes(b"lib")

    monkeypatch.setattr(nb, "_run_compiler", fake)
    monkeypatch.setattr(nb, "_package_library", lambda key: None)
    lib = nb.build_into(tmp_path)
    assert lib.read_bytes() == b"lib" and calls == [nb._STRICT, ()]
    err = capsys.readouterr().err
    assert "did not build with -Werror (engine.c:1: warning: made up); built without it" in err
    calls.clear()
    nb.build([tmp_path / "runtime"], prebuilt=False)  # a run-time build: no -Werror
    assert calls == [()]
