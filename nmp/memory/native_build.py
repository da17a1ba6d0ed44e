"""Building the C DRAM engine's library (``engine.c``): the compiler choice, the build key and
where the library is kept. Standard library only, so that ``setup.py`` can load this file on
its own and build the library when the package is installed (no numpy, numba or nmp import).

Where a library is looked for, in order:

1. the package folder (``nmp/memory/engine-<key>.so``), built by ``pip install`` / ``make``
   (``setup.py``'s build step calls :func:`build_into`);
2. the user cache (``$NMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/nmp``, else ``~/.cache/nmp``),
   built at first use where the install-time build did not run or failed, or where the key
   differs (another ``$CC``, an edited engine.c, another CPU sharing the install);
3. ``$TMPDIR/nmp-<uid>``, where the user cache is not writable;
4. a fresh private temporary folder (``mkdtemp``: mode 0700, a name no one can predict,
   removed at exit), where neither can be used.

Loading a library runs its code, so a library is only loaded from a place no other user can
write: the cache folders (2, 3) must be directories owned by this user with no access for group
or others (they are created so; one of ours with read access for others is tightened to 0700,
one writable by others is not used at all, as anything in it may have been planted), and the
library itself a regular file (not a link) owned by this user and writable by no one else. The
package folder's library (1) may also be root's (a system-wide install). A library that does
not load (corrupt, truncated) is removed and built again (:func:`nmp.memory.native_load.load`),
instead of leaving the replays on the numba engine for good.

A new build in a cache folder (2, 3) removes what no process there has used for
:data:`_STALE_S` (a month): libraries of other keys (each version, compiler, ``$CC`` and CPU
builds its own), half-written builds left by a killed compiler, stale key entries. A library
found is marked used (its modification time, at most once a day), so the ones in use stay.

The key hashes the sources, the compiler command and where it resolves to, the CPU, and how
the build splits ``engine.c`` into parts (:data:`_PARTS`, compiled side by side), so a
library is only ever loaded by the configuration that built it. Computing it (the ``PATH``
scanned for Clang, the sources read and hashed, ``/proc/cpuinfo`` parsed) was about 10 M
instructions of every ``nmp replay``; :func:`cached_choice` keeps the compiler and key it found
in the user cache, keyed by cheap facts that change whenever the costly ones could (see there).

It stays one file past the kit's ~500 lines on purpose: ``setup.py`` loads it alone, so that
it can use no sibling module, and the compiler choice, the key and the folders share its module
names (``_SOURCE``, ``_PARTS``, ``_uid``: one patch of them, a test's, is seen by all). Loading
the library built is :mod:`nmp.memory.native_load`'s.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# subprocess, tempfile, platform, atexit, shutil and json are imported where they are used: a
# replay whose library is built needs none of them (10-20 ms of `nmp replay`'s start-up; issue 43)


def _sha256(data: bytes) -> Any:
    """SHA-256 of ``data`` from the interpreter's own module where it has one (``_sha256``,
    ``_sha2`` from 3.12): ``hashlib`` loads OpenSSL's libcrypto first, about 5 ms of CPU time
    of every `nmp replay` (median of 15 starts, 2-core VM) for one digest of the sources. The
    same digest either way."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return sha256(data)


_SOURCE = Path(__file__).with_name("engine.c")


def _headers() -> list[Path]:
    """The headers engine.c includes: part of the build's key."""
    return sorted(_SOURCE.parent.glob("engine_*.h"))


# -Wall -Wextra: the engine builds clean with both (the install build adds -Werror: _STRICT)
_FLAGS = ("-O3", "-march=native", "-std=gnu99", "-shared", "-fPIC", "-Wall", "-Wextra")
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
        import platform

        return platform.machine() + platform.processor()
    keep = [ln for ln in info.splitlines() if ln.startswith(("model name", "flags", "Features"))]
    return "\n".join(sorted(set(keep)))


def _clang_version(name: str) -> int:
    """clang-19 -> 19; plain clang -> 0 (its version unknown without running it)."""
    suffix = name[len("clang-") :] if name.startswith("clang-") else ""
    return int(suffix) if suffix.isdigit() else 0


def compiler() -> list[str]:
    """The C compiler command the library is built with: ``$CC``; else Clang from the first
    folder on the ``PATH`` that holds one (there ``clang-N`` with the largest N, else
    ``clang``), as a shell resolves a command: a folder later on the ``PATH`` never overrides
    an earlier one, and a folder others may write (mode o+w) is skipped; else ``cc``.

    Clang before GCC: on the reference traces the engine built by Clang 19 ran 1.08x as fast as
    GCC 12's build (Clang 14: 1.07x, 148 against 159 ns per request; engine alone, outputs
    identical), and builds in 18 s rather than 22 s (Clang 14, GCC 12).
    """
    if os.environ.get("CC", "").strip():
        return shlex.split(os.environ["CC"])
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        folder = folder or "."
        try:
            if os.stat(folder).st_mode & 0o002:  # anyone may put a "clang-99" there
                continue
            names = os.listdir(folder)
        except OSError:
            continue
        found = {}
        for name in names:
            if name == "clang" or _clang_version(name):
                path = os.path.join(folder, name)
                if os.access(path, os.X_OK) and not os.path.isdir(path):
                    found[name] = path
        if found:
            name = max(found, key=_clang_version)
            # the bare name where the PATH resolves it to this file (the library's key stays
            # the same), else the file itself
            same = which(name) == found[name]
            return [name if same else os.path.abspath(found[name])]
    return ["cc"]


def which(name: str) -> str | None:
    """:func:`shutil.which` (POSIX) without importing shutil (7 M instructions, with its
    compression modules, of every `nmp replay`): ``name`` itself where it has a folder, else
    the first ``PATH`` folder's executable non-directory ``name``, joined as shutil joins it."""
    if sys.platform == "win32":
        import shutil

        return shutil.which(name)

    def runnable(path: str) -> bool:
        return os.path.exists(path) and os.access(path, os.F_OK | os.X_OK)

    if os.path.dirname(name):
        return name if runnable(name) and not os.path.isdir(name) else None
    path = os.environ.get("PATH")
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    seen = set()
    for folder in (path or "").split(os.pathsep) if path else ():
        if folder in seen:
            continue
        seen.add(folder)
        candidate = os.path.join(folder, name)
        if runnable(candidate) and not os.path.isdir(candidate):
            return candidate
    return None


def _flags(cc: list[str]) -> tuple[str, ...]:
    clang = "clang" in os.path.basename(cc[0])
    return _FLAGS if clang else _FLAGS + _GCC_FLAGS


def build(
    folders: list[Path] | None = None, on_build=None, *, prebuilt: bool = True, strict: bool = False
) -> Path:
    """The library built by :func:`compiler`; where that is a Clang the user did not ask for
    (no ``$CC``) and its build fails, by ``cc``. A library already built with the same key in
    the package folder (unless ``prebuilt`` is False) or in ``folders`` (default: the user
    cache, then ``$TMPDIR/nmp-<uid>``, each used only if private: see the module docstring) is
    reused; else it is built into the first usable one, or into a fresh private temporary
    folder. ``on_build()`` returns a context manager entered around an actual compilation (a
    status line). ``strict``: with -Werror where the compiler takes it (see :func:`_compile`)."""
    cc, key = _choice(cached=folders is None)
    try:
        return _build_with(cc, key, folders, on_build, prebuilt, strict)
    except Exception as exc:
        import subprocess

        if not isinstance(exc, OSError | subprocess.SubprocessError):
            raise
        if os.environ.get("CC", "").strip() or cc == ["cc"]:
            raise
        return _build_with(["cc"], library_key(["cc"]), folders, on_build, prebuilt, strict)


def build_into(folder: Path) -> Path:
    """Build the library into ``folder`` (the installed package's ``nmp/memory``), with -Werror
    where the compiler builds the engine clean under it, else without it (said on stderr)."""
    return build([Path(folder)], strict=True)


def library_key(cc: list[str]) -> str:
    flags = _flags(cc)
    # the compiler's resolved path is in the key: an upgrade (a new target of cc or clang)
    # builds anew
    resolved = which(cc[0])
    sources = [p.read_bytes() for p in (_SOURCE, *_headers())]
    key = _sha256(
        b"\0".join(
            [
                *sources,
                " ".join(cc + list(flags)).encode(),
                f"parts {sorted(_PARTS)}".encode(),
                os.path.realpath(resolved).encode() if resolved else b"",
                _cpu_id().encode(),
            ]
        )
    ).hexdigest()[:16]
    return key


# Part of every key entry's name: a change of the entry's form makes old entries misses.
_KEY_FORMAT = "nmp-engine-key-1"
# A watched file changed less than this long before an entry would be written: no entry (a
# file system with coarse timestamps could show an edit in the same tick as the same facts)
_RACY_NS = 2_000_000_000


def _choice(cached: bool = True) -> tuple[list[str], str]:
    """The compiler command and the library key: from :func:`cached_choice` where ``cached``
    and it has them, else computed (:func:`compiler`, :func:`library_key`) and kept."""
    if cached:
        found = cached_choice()
        if found is not None:
            return found
    cc = compiler()
    key = library_key(cc)
    if cached:
        _store_choice(cc, key)
    return cc, key


def _facts(path: str) -> list[int] | None:
    """What any change of the file or folder ``path`` (followed) changes: device, inode,
    mode, owner, size, modification and change time (ns); None where it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_size] + [
        st.st_mtime_ns,
        st.st_ctime_ns,
    ]


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _entry(create: bool = False) -> Path | None:
    """Where the choice of this process's setting is kept; None where it is not cached: no
    boot id, a ``PATH`` with a relative folder or a relative ``$CC`` (both depend on the
    working folder)."""
    path_env = os.environ.get("PATH")
    cc_env = os.environ.get("CC", "")
    boot = _read("/proc/sys/kernel/random/boot_id")
    if path_env is None or boot is None:
        return None
    if any(not os.path.isabs(f) for f in path_env.split(os.pathsep)):
        return None
    cc_words = shlex.split(cc_env) if cc_env.strip() else []
    if cc_words and os.path.dirname(cc_words[0]) and not os.path.isabs(cc_words[0]):
        return None
    setting = "\0".join(
        [
            _KEY_FORMAT,
            cc_env,
            path_env,
            f"{_uid()} {os.getgid()} {sorted(os.getgroups())}",
            boot,
            _read("/sys/devices/system/cpu/cpu0/microcode/version") or "",
            str(_SOURCE.parent),
        ]
    )
    return cache_dir() / "keys" / f"{_sha256(setting.encode()).hexdigest()[:32]}.json"


def _watched(cc: list[str]) -> list[str]:
    """The files and folders :func:`compiler` and :func:`library_key` consult, bar the CPU's
    description (the boot id stands for it): this file (the flags), the sources and their
    folder (a new header), every ``PATH`` folder, each Clang-like name in them and ``cc[0]``
    in each (what the scan and the ``which`` look at), and where the compiler resolves to."""
    paths = [__file__, str(_SOURCE), *map(str, _headers()), str(_SOURCE.parent)]
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        paths.append(folder)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        paths += [os.path.join(folder, n) for n in names if n == "clang" or _clang_version(n)]
        if not os.path.dirname(cc[0]):
            paths.append(os.path.join(folder, cc[0]))
    resolved = which(cc[0])
    if resolved:
        paths += [resolved, os.path.realpath(resolved)]
    return list(dict.fromkeys(paths))


def cached_choice() -> tuple[list[str], str] | None:
    """The compiler and key :func:`_store_choice` kept for this setting, where every watched
    file's facts are as they were then; else None (computed again).

    Why a hit is the key the full computation would give: the entry's name hashes everything
    the computation reads that is not a file (``$CC``, ``$PATH``, the user and groups that
    ``os.access`` judges by, the package folder); the CPU's description (``/proc/cpuinfo``)
    is fixed for one boot of the kernel (the boot id; a runtime microcode update, which can
    change the flags, changes the microcode version, also in the name; another machine
    sharing the home has another boot id). Each file or folder the computation reads or
    lists is watched by its device, inode, mode, owner, size and modification and change
    times: an edit changes the change time (which no user can set back) and an added or
    removed file (a new header, a new ``clang-N``) its folder's times; a symbolic link
    retargeted is a new link (its folder changes) or a link on the way to the compiler,
    which the resolved path checked again catches. An entry is written only where no
    watched file changed within the last 2 s (a coarse clock could otherwise hide an edit in
    the same tick), and read only where it is a regular file of this user's that no one else
    may write (as the libraries themselves). Any doubt (no boot id, a relative ``PATH``
    folder, a damaged entry) computes the key in full."""
    from nmp.toml_cache import read_own_json  # (never at install: setup.py loads this alone)

    entry = _entry()
    if entry is None:
        return None
    doc = read_own_json(entry)
    if doc is None:
        return None
    try:
        cc, key, watched, resolved, real = (
            doc["cc"],
            doc["key"],
            doc["watched"],
            doc["resolved"],
            doc["real"],
        )
        if resolved is not None and os.path.realpath(resolved) != real:
            return None
        if any(_facts(path) != facts for path, facts in watched):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(cc, list) and all(isinstance(w, str) for w in cc) and isinstance(key, str)):
        return None
    return cc, key


def _store_choice(cc: list[str], key: str) -> None:
    """Keep ``cc`` and ``key`` for :func:`cached_choice` (written whole, then renamed)."""
    import json
    import time

    from nmp.toml_cache import write_own  # (never at install: setup.py loads this alone)

    entry = _entry()
    if entry is None:
        return
    watched = [(path, _facts(path)) for path in _watched(cc)]
    now = time.time_ns()
    if any(f is not None and now - max(f[5], f[6]) < _RACY_NS for _, f in watched):
        return
    resolved = which(cc[0])
    doc = {
        "cc": cc,
        "key": key,
        "watched": watched,
        "resolved": resolved,
        "real": os.path.realpath(resolved) if resolved else None,
    }
    write_own(entry, json.dumps(doc))


def default_folders() -> Iterator[Path]:
    """The user cache, then (a read-only home) a temporary folder named for this user (found,
    with tempfile, only where the user cache would not do)."""
    yield cache_dir()
    import tempfile

    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    yield Path(tempfile.gettempdir()) / f"nmp-{user}"


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1


def private_folder(folder: Path) -> bool:
    """Whether a library may be built into and loaded from ``folder``: created (mode 0700)
    where missing, it must be a directory owned by this user that no one else may write into
    (one of ours that others may only read is tightened to 0700)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != _uid() or st.st_mode & 0o022:
        return False
    if st.st_mode & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError:
            return False
    return True


def trusted_file(lib: Path, owners: tuple[int, ...]) -> bool:
    """Whether ``lib`` is a regular file (not a link) owned by one of ``owners`` that no one
    else may write."""
    try:
        st = os.lstat(lib)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid in owners and not st.st_mode & 0o022


def _package_library(key: str) -> Path | None:
    """The install's library, if it is there and trusted (this user's or root's; its folder
    writable by no one else)."""
    lib = _SOURCE.parent / f"engine-{key}.so"
    owners = (_uid(), 0)
    if not trusted_file(lib, owners):
        return None
    try:
        st = os.stat(lib.parent)
    except OSError:
        return None
    return lib if st.st_uid in owners and not st.st_mode & 0o022 else None


# The install build's extra flag: a warning fails it (the library key leaves it out: the code
# built is the same with or without it). A compiler that rejects it, or a warning it turns
# into an error, gets a second build without it, said on stderr.
_STRICT = ("-Werror",)


# engine.c compiles as this many parts (its ENGINE_PARTS; -DENGINE_PART=k), side by side, then
# linked: each part holds some of the instantiations, which take nearly all of the compile time.
# By their compile times (Clang 14, -O3, the 2-core AMD EPYC VM: 11.5, 9.1, 7.5 and 6.3 s), the
# longest first, so that a machine of fewer cores than parts ends them together.
_PARTS = (2, 3, 1, 4)


def _part_jobs() -> int:
    """Compilers run at once: one per core (each takes 300-400 MB), at most one per part."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(len(_PARTS), cores))


def _run_compiler(cc: list[str], extra: tuple[str, ...], tmp: str) -> None:
    """Build the library ``tmp``: engine.c's parts compiled side by side into a private
    temporary folder (``mkdtemp``: mode 0700), then linked. A part that fails raises its
    compiler's error."""
    import subprocess
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    flags = _flags(cc)
    compile_flags = [f for f in flags if f != "-shared"]
    with tempfile.TemporaryDirectory(prefix="nmp-engine-parts-") as work:
        objects = {k: os.path.join(work, f"engine-part{k}.o") for k in _PARTS}

        def part(k: int) -> None:
            subprocess.run(
                [*cc, *compile_flags, *extra, f"-DENGINE_PART={k}", "-c", "-o", objects[k],
                 str(_SOURCE)],
                check=True, capture_output=True, text=True, timeout=300,
            )  # fmt: skip

        with ThreadPoolExecutor(max_workers=_part_jobs()) as pool:
            for done in [pool.submit(part, k) for k in _PARTS]:
                done.result()  # (the first part that failed raises, in the parts' order)
        subprocess.run(
            [*cc, *flags, *extra, "-o", tmp, *(objects[k] for k in sorted(objects))],
            check=True, capture_output=True, text=True, timeout=300,
        )  # fmt: skip


# A cache folder's libraries, half-written builds and key entries unused this long are removed
# at the next build there (chosen: a month. Each build is 0.5 MB; a week of engine edits left
# 136 libraries, 90 MB, in one cache). A library found is marked used at most once a day
# (_USED_S): one system call, not one per replay.
_STALE_S = 30 * 86400
_USED_S = 86400


def _mark_used(lib: Path) -> None:
    import time

    try:
        if time.time() - lib.stat().st_mtime > _USED_S:
            os.utime(lib)
    except OSError:
        pass  # (a read-only cache: it is then never pruned either)


def prune(folder: Path, keep: Path, now: float | None = None) -> list[Path]:
    """Remove from the private cache ``folder`` its libraries (``engine-*.so``), half-written
    builds (``tmp*.so``, :func:`_compile`'s) and key entries (``keys/*.json``) whose
    modification time is older than :data:`_STALE_S`, bar ``keep``; the paths removed. A
    library removed while another process is about to load it is built again there
    (:func:`nmp.memory.native_load.load_all`)."""
    import time

    limit = (time.time() if now is None else now) - _STALE_S
    gone = []
    for pattern in ("engine-*.so", "tmp*.so", "keys/*.json"):
        for path in folder.glob(pattern):
            try:
                st = path.lstat()
                if path == keep or not stat.S_ISREG(st.st_mode) or st.st_mtime >= limit:
                    continue
                path.unlink()
            except OSError:
                continue
            gone.append(path)
    return gone


def _compile(cc: list[str], folder: Path, lib: Path, on_build, strict: bool = False) -> None:
    """Build into ``lib`` under a temporary name, then rename: concurrent processes (test
    workers) may build at once, and a reader must never load a half-written library. With
    ``strict`` (the install) first with :data:`_STRICT`, then, if that fails, without."""
    import contextlib
    import subprocess
    import tempfile

    fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder)
    os.close(fd)
    try:
        with on_build() if on_build else contextlib.nullcontext():
            try:
                _run_compiler(cc, _STRICT if strict else (), tmp)
            except subprocess.CalledProcessError as exc:
                if not strict:
                    raise
                first = (exc.stderr or "").strip().splitlines()[:1] or ["(no message)"]
                print(
                    f"nmp: note: the C DRAM engine did not build with {' '.join(_STRICT)} "
                    f"({first[0]}); built without it",
                    file=sys.stderr,
                )
                _run_compiler(cc, (), tmp)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _build_with(
    cc: list[str],
    key: str,
    folders: list[Path] | None,
    on_build,
    prebuilt: bool,
    strict: bool = False,
) -> Path:
    name = f"engine-{key}.so"
    if prebuilt:
        installed = _package_library(key)
        if installed is not None:
            return installed
    if folders is not None:  # the caller's (the install's) folders: used as they are
        for folder in folders:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            lib = folder / name
            if not lib.exists():
                _compile(cc, folder, lib, on_build, strict)
            return lib
        raise OSError(f"no writable folder for the build ({', '.join(map(str, folders))})")
    for folder in default_folders():
        if not private_folder(folder):
            continue
        lib = folder / name
        if trusted_file(lib, (_uid(),)):
            _mark_used(lib)
            return lib
        try:
            if os.path.lexists(lib):  # not ours, or writable by others: replaced by our build
                os.unlink(lib)
            _compile(cc, folder, lib, on_build)
        except OSError:
            continue  # not writable after all (a read-only file system)
        prune(folder, keep=lib)
        return lib
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="nmp-engine-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    lib = folder / name
    _compile(cc, folder, lib, on_build)
    return lib
