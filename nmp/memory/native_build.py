"""Building the C DRAM engine's library (``engine.c``): the compiler choice, the build key and
where the library is kept. Standard library only, so that ``setup.py`` can load this file on
its own and build the library when the package is installed (no numpy, numba or nmp import).

Where a library is looked for, in order:

1. the package folder (``nmp/memory/engine-<key>.so``), built by ``pip install`` / ``make``
   (``setup.py``'s build step calls :func:`build_into`);
2. the user cache (``$NMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/nmp``, else ``~/.cache/nmp``),
   built at first use where the install-time build did not run or failed, or where the key
   differs (another ``$CC``, an edited engine.c, another CPU sharing the install);
3. a temporary folder, where the user cache is not writable.

The key hashes the sources, the compiler command and where it resolves to, and the CPU, so a
library is only ever loaded by the configuration that built it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

_SOURCE = Path(__file__).with_name("engine.c")
# the headers engine.c includes: part of the build's key
_HEADERS = sorted(_SOURCE.parent.glob("engine_*.h"))
_FLAGS = ("-O3", "-march=native", "-std=gnu99", "-shared", "-fPIC")
# GCC only: -mtune=generic after -march=native. GCC 12 tunes a Zen 5 CPU as znver3 (the newest it
# knows), which ran the reference traces 2.7% slower than generic tuning (engine alone, 4 load
# addresses each); znver2, icelake-server, skylake-avx512 and intel tuning were 2-6% slower.
# Clang 19 tunes for znver5 itself: generic tuning there was 0.994x (noise).
_GCC_FLAGS = ("-mtune=generic",)


def cache_dir() -> Path:
    """Where built libraries are kept."""
    if os.environ.get("NMP_CACHE_DIR"):
        return Path(os.environ["NMP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nmp"


def _cpu_id() -> str:
    """What -march=native depends on: the CPU model and its feature flags."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() + platform.processor()
    keep = [ln for ln in info.splitlines() if ln.startswith(("model name", "flags", "Features"))]
    return "\n".join(sorted(set(keep)))


def _clang_version(name: str) -> int:
    """clang-19 -> 19; plain clang -> 0 (its version unknown without running it)."""
    suffix = name[len("clang-") :] if name.startswith("clang-") else ""
    return int(suffix) if suffix.isdigit() else 0


def compiler() -> list[str]:
    """The C compiler command the library is built with: ``$CC``; else the newest Clang on the
    ``PATH`` (``clang-N`` with the largest N, else ``clang``); else ``cc``.

    Clang before GCC: on the reference traces the engine built by Clang 19 ran 1.08x as fast as
    GCC 12's build (Clang 14: 1.06x; engine alone, outputs identical), and builds in 12-15 s
    rather than 35 s.
    """
    if os.environ.get("CC", "").strip():
        return shlex.split(os.environ["CC"])
    found: dict[str, str] = {}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if (name == "clang" or _clang_version(name)) and name not in found:
                path = os.path.join(folder or ".", name)
                if os.access(path, os.X_OK) and not os.path.isdir(path):
                    found[name] = path
    if not found:
        return ["cc"]
    return [max(found, key=_clang_version)]


def _flags(cc: list[str]) -> tuple[str, ...]:
    clang = "clang" in os.path.basename(cc[0])
    return _FLAGS if clang else _FLAGS + _GCC_FLAGS


def build(folders: list[Path] | None = None, on_build=None) -> Path:
    """The library built by :func:`compiler`; where that is a Clang the user did not ask for
    (no ``$CC``) and its build fails, by ``cc``. A library already built with the same key in
    the package folder or in ``folders`` (default: the user cache, then a temporary folder) is
    reused; else it is built into the first writable one of ``folders``. ``on_build()`` returns
    a context manager entered around an actual compilation (a status line)."""
    cc = compiler()
    try:
        return _build_with(cc, folders, on_build)
    except (OSError, subprocess.SubprocessError):
        if os.environ.get("CC", "").strip() or cc == ["cc"]:
            raise
        return _build_with(["cc"], folders, on_build)


def build_into(folder: Path) -> Path:
    """Build the library into ``folder`` (the installed package's ``nmp/memory``)."""
    return build([Path(folder)])


def library_key(cc: list[str]) -> str:
    flags = _flags(cc)
    # the compiler's resolved path is in the key: an upgrade (a new target of cc or clang)
    # builds anew
    resolved = shutil.which(cc[0])
    sources = [p.read_bytes() for p in (_SOURCE, *_HEADERS)]
    key = hashlib.sha256(
        b"\0".join(
            [
                *sources,
                " ".join(cc + list(flags)).encode(),
                os.path.realpath(resolved).encode() if resolved else b"",
                _cpu_id().encode(),
            ]
        )
    ).hexdigest()[:16]
    return key


def default_folders() -> list[Path]:
    """The user cache, or where that is not writable (a read-only home) a temporary folder."""
    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return [cache_dir(), Path(tempfile.gettempdir()) / f"nmp-{user}"]


def _build_with(cc: list[str], folders: list[Path] | None, on_build) -> Path:
    import contextlib

    flags = _flags(cc)
    key = library_key(cc)
    prebuilt = _SOURCE.parent / f"engine-{key}.so"
    if prebuilt.exists():
        return prebuilt
    folders = default_folders() if folders is None else folders
    for folder in folders:
        lib = folder / f"engine-{key}.so"
        if lib.exists():
            break
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            # build under a temporary name, then rename: concurrent processes (test workers)
            # may build at once, and a reader must never load a half-written library
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder)
        except OSError:
            continue
        os.close(fd)
        try:
            with on_build() if on_build else contextlib.nullcontext():
                subprocess.run(
                    [*cc, *flags, "-o", tmp, str(_SOURCE)],
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            os.replace(tmp, lib)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        break
    else:
        raise OSError(f"no writable folder for the build ({', '.join(map(str, folders))})")
    return lib
