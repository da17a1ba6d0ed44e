"""The C engine built at install time (setup.py -> nmp/memory/native_build.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from nmp.memory import native_build

ROOT = Path(__file__).resolve().parents[2]


def _setup_module():
    spec = importlib.util.spec_from_file_location("nmp_setup_py", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    import setuptools

    real_setup = setuptools.setup
    setuptools.setup = lambda **kw: None  # load the file without running an install
    try:
        spec.loader.exec_module(module)
    finally:
        setuptools.setup = real_setup
    return module


def test_a_failed_build_does_not_fail_the_install(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    _setup_module()._build_engine(tmp_path)  # must not raise
    err = capsys.readouterr().err
    assert "warning: the C DRAM engine did not build at install" in err
    assert "first use" in err
    assert not list(tmp_path.glob("engine-*.so"))


def test_the_package_library_is_found_before_the_user_cache(monkeypatch, tmp_path) -> None:
    """With the library the install built, an empty user cache builds nothing (the cache
    may keep the library's key, native_build.cached_choice, but no library)."""
    monkeypatch.delenv("CC", raising=False)
    key = native_build.library_key(native_build.compiler())
    installed = native_build._SOURCE.parent / f"engine-{key}.so"
    if not installed.exists():
        pytest.skip("the package was not installed through setup.py's build (no library)")
    monkeypatch.setenv("NMP_CACHE_DIR", str(tmp_path / "empty"))
    assert native_build.build() == installed
    assert not list((tmp_path / "empty").rglob("engine-*"))


def test_native_build_needs_only_the_standard_library() -> None:
    """setup.py loads it in the build environment, which has no numpy."""
    text = (ROOT / "nmp" / "memory" / "native_build.py").read_text()
    imports = [ln.split()[1] for ln in text.splitlines() if ln.startswith(("import ", "from "))]
    assert set(imports) <= {
        "__future__", "atexit", "ctypes", "hashlib", "os", "platform", "shlex", "shutil",
        "stat", "subprocess", "sys", "tempfile", "pathlib", "typing", "collections.abc",
    }, imports  # fmt: skip
    assert os.path.exists(ROOT / "setup.py")
