"""Fixtures of the DRAM engine tests."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from memref import require_ref

from nmp.memory import native, native_build


@pytest.fixture(scope="session")
def dram_ref() -> Path:
    return require_ref()


@pytest.fixture(scope="module")
def native_engine() -> None:
    """The C engine is built (a module's tests ask for it with ``usefixtures``): else they skip
    with the reason, or fail where NMP_REQUIRE_NATIVE_ENGINE=1 (CI)."""
    if not native.available():
        why = native.unavailable_reason()
        if os.environ.get("NMP_REQUIRE_NATIVE_ENGINE") == "1":
            pytest.fail(f"the native engine is required (NMP_REQUIRE_NATIVE_ENGINE=1): {why}")
        pytest.skip(f"the native engine cannot be built here: {why}")


@pytest.fixture(scope="session")
def engine_build(
    tmp_path_factory,
) -> Callable[[str, str | None], contextlib.AbstractContextManager]:
    """``with engine_build(flags, cc):`` the native engine loads the build of ``cc`` (default:
    the compiler the library is built with) with ``flags`` and -Werror (native_build adds -Wall
    -Wextra: a warning fails the build) while the block lasts. A build with flags goes to a
    cache folder of this session: one build per flags and compiler, shared by the tests that
    ask for it (test_portable_build_identical, test_mem_bank_table_32's AVX2 runs), since each
    costs 25-40 s of CI; one without flags keeps to the user cache (the ordinary build)."""
    cache = tmp_path_factory.mktemp("engine-builds")

    @contextlib.contextmanager
    def use(flags: str, cc: str | None = None) -> Iterator[None]:
        if flags and platform.machine().lower() not in ("x86_64", "amd64"):
            pytest.skip(f"the {flags} builds are x86 builds ({platform.machine()} builds plain C)")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CC", f"{cc or ' '.join(native_build.compiler())} {flags} -Werror")
            if flags:
                mp.setenv("NMP_CACHE_DIR", str(cache))
            native._library.cache_clear()
            try:
                assert native.available(), native.unavailable_reason()
                yield
            finally:
                native._library.cache_clear()

    return use


@pytest.fixture
def fake_cc(tmp_path: Path, monkeypatch) -> Path:
    """``$CC``: copies ``tmp_path/real.so`` (a loadable library, where one exists) to -o."""
    real = tmp_path / "real.so"
    try:
        real.write_bytes(Path(native_build.build()).read_bytes())
    except (OSError, subprocess.SubprocessError):
        real.write_bytes(b"not a library")
    script = tmp_path / "fake-cc"
    script.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then '
        f'cp "{real}" "$2"; exit 0; fi; shift; done; exit 1\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    monkeypatch.setenv("NMP_CACHE_DIR", str(tmp_path / "cache"))
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return real
