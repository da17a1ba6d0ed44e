"""The kit's own TOML files (presets, DRAM standards) kept parsed, as JSON, in the user cache:
parsing a preset and its standard with :mod:`tomllib` was about 8% of the instructions of a
whole ``nmp replay`` and importing tomllib another 5% (valgrind, issue 43); a cached file is
read back by the json module's C parser, which the command loads anyway.

An entry is keyed by the file's real path and holds the SHA-256 of the exact bytes it was parsed
from: a file read with other bytes (edited, another checkout at the same path) is parsed again
and its entry replaced, so an entry can never stand for other content. Only files inside this
checkout are cached (a bounded set: the kit's presets and standards; a user's own TOML files,
and those tests write, are parsed every time), only values JSON holds exactly (strings, whole
numbers, finite floats, booleans, arrays, tables; a date is never cached), and only entries
this user wrote (owned by this user, writable by no one else) are read. Any failure (no
cache folder, a read-only home, a damaged entry) falls back to parsing.

The folder is ``$NMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/nmp``, else ``~/.cache/nmp`` (the C
engine's library cache, :func:`nmp.memory.native_build.cache_dir`, which keeps its own copy of
the rule: setup.py loads that file alone), subfolder ``toml``. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

# Part of every entry's digest: a change of the entry's form makes old entries misses.
FORMAT = b"nmp-toml-cache-1\0"
# This checkout (the folder that holds nmp/, models/ and workloads/): only files in it are cached.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sha256_hex(data: bytes) -> str:
    """SHA-256 from the interpreter's own module where it has one: hashlib loads OpenSSL first
    (about 5 ms of every start; as :func:`nmp.memory.native_build._sha256`)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def cache_folder() -> Path:
    """Where parsed TOML files are kept."""
    if os.environ.get("NMP_CACHE_DIR"):
        base = Path(os.environ["NMP_CACHE_DIR"])
    else:
        home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(home) / "nmp"
    return base / "toml"


def entry_path(path: str | os.PathLike) -> Path | None:
    """The cache entry of the TOML file ``path``; None where it is not cached (outside this
    checkout)."""
    real = os.path.realpath(path)
    if not real.startswith(CHECKOUT + os.sep):
        return None
    return cache_folder() / f"{_sha256_hex(real.encode())[:32]}.json"


def _digest(raw: bytes) -> str:
    return _sha256_hex(FORMAT + raw)


def load(path: str | os.PathLike, raw: bytes) -> dict[str, Any] | None:
    """The parsed content of ``path`` whose bytes are ``raw``, from its entry; None where there
    is no entry for these bytes (or none this user wrote)."""
    entry = entry_path(path)
    if entry is None:
        return None
    doc = read_own_json(entry)
    if not isinstance(doc, dict) or doc.get("sha256") != _digest(raw):
        return None
    data = doc.get("data")
    return data if isinstance(data, dict) else None


def store(path: str | os.PathLike, raw: bytes, data: dict[str, Any]) -> None:
    """Keep ``data``, parsed from the bytes ``raw`` of ``path``, where it is cached and JSON
    holds it exactly (written whole, then renamed: a reader never sees half an entry)."""
    entry = entry_path(path)
    if entry is None:
        return
    try:
        text = json.dumps({"sha256": _digest(raw), "data": data}, allow_nan=False)
    except (TypeError, ValueError):  # a date, a time: not a JSON value
        return
    if json.loads(text)["data"] != data:
        return
    write_own(entry, text)


_OPEN_FLAGS = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _own_folder(folder: Path) -> bool:
    """Whether ``folder`` is a directory of this user's that no one else may write into: what
    it holds is this user's (as :func:`nmp.memory.native_build.private_folder` requires)."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == _uid() and not st.st_mode & 0o022


def read_own_json(entry: Path) -> Any:
    """The JSON document in the cache entry ``entry``, where it is a regular file of this
    user's that no one else may write, in a folder of this user's that no one else may write;
    None otherwise, or where it cannot be read or parsed. It is opened without following a
    link and without blocking (a named pipe planted as an entry hung every command), and
    checked on the open descriptor. The rule of every entry the kit keeps in the user cache
    (here, and the engine library's key: :func:`nmp.memory.native_build.cached_choice`)."""
    if not _own_folder(entry.parent):
        return None
    try:
        fd = os.open(entry, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _uid() or st.st_mode & 0o022:
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as fh:
            fd = -1  # (closed with fh)
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def write_own(entry: Path, text: str) -> None:
    """Write the cache entry ``entry`` whole, then rename it into place (a reader never sees
    half an entry), readable by this user alone, its folder created private (an existing
    folder that is not this user's alone gets no entry); the temporary file is created new
    (``O_EXCL``, no link followed). A failure (a read-only home) leaves no entry and no
    temporary file."""
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _own_folder(entry.parent):
            return
        try:
            fd = os.open(tmp, flags, 0o600)
        except FileExistsError:  # left by a killed process of the same id: ours to remove
            tmp.unlink()
            fd = os.open(tmp, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, entry)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1
