"""The user cache of engine libraries does not grow without end: a new build there removes the
libraries, half-written builds and key entries unused for a month, and a library in use is
marked used so that it stays. No test compiles (``$CC`` copies a library, as in
test_native_build_security.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from nmp.memory import native_build

DAY_S = 86400


def _aged(path: Path, days: float, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    t = time.time() - days * DAY_S
    os.utime(path, (t, t))
    return path


def test_a_new_build_removes_what_is_unused_for_a_month(fake_cc: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    old = _aged(cache / "engine-0123456789abcdef.so", 31)
    recent = _aged(cache / "engine-fedcba9876543210.so", 29)
    half = _aged(cache / "tmpk2j3h4.so", 40)
    entry = _aged(cache / "keys" / ("ab" * 16 + ".json"), 45)
    other = _aged(cache / "notes.txt", 400)
    lib = native_build.build()
    assert lib.parent == cache and lib.exists()
    assert not old.exists() and not half.exists() and not entry.exists()
    assert recent.exists() and other.exists()  # younger than a month; not the cache's own


def test_a_library_found_is_marked_used_and_kept(fake_cc: Path, tmp_path: Path) -> None:
    lib = native_build.build()
    t = time.time() - 40 * DAY_S
    os.utime(lib, (t, t))
    assert native_build.build() == lib  # a hit
    assert time.time() - lib.stat().st_mtime < DAY_S
    assert lib not in native_build.prune(lib.parent, keep=lib.parent / "other.so")


def test_prune_keeps_the_new_library_and_skips_links(tmp_path: Path) -> None:
    keep = _aged(tmp_path / "engine-1111111111111111.so", 90)
    target = _aged(tmp_path / "target", 90)
    link = tmp_path / "engine-2222222222222222.so"
    link.symlink_to(target)
    t = time.time() - 90 * DAY_S
    os.utime(link, (t, t), follow_symlinks=False)
    assert native_build.prune(tmp_path, keep=keep) == []
    assert keep.exists() and link.is_symlink() and target.exists()
