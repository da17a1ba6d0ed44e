"""Whole-file writes that never leave half a file: a temporary file beside the target, then
``os.replace``. Readers see the old file or the new one; an interrupted write leaves at most a
hidden ``.<name>.*.tmp`` (``nmp evaluate --resume`` removes those in a run folder).

It sits at the bottom of the package (stdlib only), so that traces (``nmp.memory``), index
files (``nmp.workload``), calibration caches (``nmp.gpu``), reports and run folders
(``nmp.evaluate.store``) share one mechanism.

Only regular files are read or replaced. An output path that is a symbolic link, a device
(``/dev/sda``, ``/dev/null``), a named pipe, a socket or a folder is refused before anything is
written (:func:`check_output_path`), so that ``--save-requests`` never replaces a link with a
file nor writes through it; an input that is not a regular file is refused when it is opened
(:func:`open_regular`: opened without blocking, so that a named pipe with no writer does not
hang the command, and checked on the open descriptor).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nmp.errors import NmpError


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _current_umask()


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words (for a message)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def lstat_if_present(path: str | Path, doing: str) -> os.stat_result | None:
    """``os.lstat(path)`` (a link not followed); None where nothing is there; any other failure
    is :class:`NmpError` naming ``path`` ("cannot <doing>: ...")."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NmpError(f"cannot {doing}: {exc.strerror}", file=str(path)) from None


def check_output_path(path: str | Path) -> None:
    """Refuse (:class:`NmpError` naming ``path``) an output path that exists and is not a
    regular file: a symbolic link (checked without following it), a device, a pipe, a socket or
    a folder. What is written replaces only a regular file."""
    st = lstat_if_present(path, "write")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NmpError(
            f"is {file_kind(st.st_mode)}: an output replaces only a regular file (give a new "
            "path, or remove it)",
            file=str(path),
        )


def others_can_write(path: str | Path) -> str | None:
    """Why another user could have written into folder ``path`` (owned by another user but
    root, or writable by all without the sticky bit), else None: what it holds is not read.
    (Group-writable folders pass: with user-private groups, as Debian's default umask 002
    makes them, the group is the user.)"""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_uid not in (os.getuid(), 0):
        return f"it belongs to user {st.st_uid}"
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        return f"every user may write into it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def check_writable_output(path: str | Path) -> None:
    """:func:`check_output_path`, and that ``path`` can be written where it is: its nearest
    existing folder takes a new file (one is created and removed). For an output written
    after minutes of work (``nmp measure host --out /proc/x.toml`` failed after 29 s)."""
    check_output_path(path)
    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    import tempfile  # (on use: see atomic_file)

    try:
        fd, probe = tempfile.mkstemp(prefix=".nmp-probe-", dir=folder)
    except OSError as exc:
        raise NmpError(f"cannot write into {folder}: {exc.strerror}", file=str(path)) from None
    os.close(fd)
    os.unlink(probe)


@contextlib.contextmanager
def open_regular(
    path: str | Path, *, follow_links: bool = True, update: bool = False
) -> Iterator[BinaryIO]:
    """``path`` opened for reading if it is a regular file (a symbolic link to one is
    followed, unless ``follow_links`` is False: then a link is refused); else
    :class:`NmpError` naming the path and what it is (a folder, a named pipe, a device), or
    that it does not exist. The open does not block on a pipe. ``update``: opened for reading
    and writing (``r+b``), so that what was checked is what is truncated or rewritten."""
    flags = (os.O_RDWR if update else os.O_RDONLY) | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NmpError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise NmpError("is a folder, not a file", file=str(path)) from None
    except NotADirectoryError:
        raise NmpError(
            "no such file (a part of the path is not a folder)", file=str(path)
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NmpError(
                "is a symbolic link: only a regular file is read here (remove the link)",
                file=str(path),
            ) from None
        raise NmpError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NmpError(
                f"is {file_kind(st.st_mode)}, not a regular file: give a file", file=str(path)
            )
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "r+b" if update else "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def read_regular(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The bytes of regular file ``path`` (:func:`open_regular`), at most ``max_bytes + 1`` of
    them when ``max_bytes`` is given (the caller tells "too large" by the extra byte)."""
    with open_regular(path) as fh:
        return fh.read(-1 if max_bytes is None else max_bytes + 1)


def open_append(path: str | Path) -> int:
    """A descriptor appending to regular file ``path`` (created if missing): a symbolic link
    is not followed (``O_NOFOLLOW``) and a pipe or device is refused without blocking, so that
    a log planted as a link in a run folder cannot append to the file it points at.
    :class:`NmpError` names the path."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link; a pipe without a reader
            what = "a symbolic link" if exc.errno == errno.ELOOP else "a named pipe (FIFO)"
            raise NmpError(
                f"is {what}: a log appends only to a regular file", file=str(path)
            ) from None
        raise NmpError(f"cannot write: {exc.strerror}", file=str(path)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NmpError(
            f"is {file_kind(mode)}: a log appends only to a regular file", file=str(path)
        )
    os.set_blocking(fd, True)
    return fd


def claim_new_folder(base: str | Path, name: str) -> Path:
    """Create and return a new folder ``base/name``, or ``name-2``, ``name-3``... where it
    exists: ``mkdir`` is atomic, so two runs that finish in the same second get two folders
    (one of them once failed with "File exists" after its whole run)."""
    base = Path(base)
    try:
        base.mkdir(parents=True, exist_ok=True)
        for i in range(1, 10_000):
            path = base / (name if i == 1 else f"{name}-{i}")
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as exc:
        raise NmpError(f"cannot create a folder: {exc.strerror}", file=str(base)) from None
    raise NmpError(f"no free folder name {name}-N", file=str(base))


LOCK_NAME = ".lock"


@contextlib.contextmanager
def folder_lock(folder: str | Path, busy: str) -> Iterator[None]:
    """Hold ``folder``'s lock file (``.lock``, holding this process's id), or raise
    :class:`NmpError` at once with ``busy`` (``{pid}`` replaced by the holder's) if another
    process holds it: one writer per run folder. Where ``fcntl`` does not exist (not POSIX)
    the folder goes unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    path = Path(folder) / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:  # a link (ELOOP), a folder: the error named no file
        kind = "a symbolic link" if exc.errno == errno.ELOOP else None
        why = f"is {kind}, not a lock file (remove it)" if kind else f"cannot lock: {exc.strerror}"
        raise NmpError(why, file=str(path)) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # a named pipe: "Invalid argument" from lockf, no file named
        os.close(fd)
        raise NmpError(f"is {file_kind(mode)}, not a lock file (remove it)", file=str(path))
    os.set_blocking(fd, True)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise NmpError(busy.replace("{pid}", holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new contents into; on leaving the block it is synced
    and renamed onto ``path``, and on any error (or interrupt) removed. A ``path`` that exists
    and is not a regular file is refused (:func:`check_output_path`)."""
    path = Path(path)
    with _temp_beside(path) as tmp:
        try:
            yield tmp.file
            _sync(tmp.file)
        except OSError as exc:
            raise _write_error(exc, path) from None
        tmp.ready = True


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_file`)."""
    with atomic_file(path) as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_all(files: dict[Path, bytes]) -> None:
    """Write several files that belong together (a module and its testbench): every one is
    written and synced to a temporary first, and only then are they renamed into place, so a
    full disk leaves none of them new rather than some (:func:`atomic_file` for each)."""
    with contextlib.ExitStack() as stack:
        temps = {path: stack.enter_context(_temp_beside(path)) for path in files}
        for path, tmp in temps.items():
            try:
                tmp.file.write(files[path])
                _sync(tmp.file)
            except OSError as exc:
                raise _write_error(exc, path) from None
        for tmp in temps.values():
            tmp.ready = True


@dataclass
class _Pending:
    """A temporary being written beside its target: renamed onto it on leaving
    :func:`_temp_beside` once ``ready`` (written and synced), else removed."""

    file: BinaryIO
    ready: bool = False


@contextlib.contextmanager
def _temp_beside(path: Path) -> Iterator[_Pending]:
    check_output_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # loaded on use: the replay path reads TOML through this module (start-up, issue 43)
        import tempfile

        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _write_error(exc, path) from None
    pending = _Pending(os.fdopen(fd, "wb"))
    try:
        # mkstemp makes the file 0600; the result is a plain file (0666 less the umask)
        os.fchmod(fd, 0o666 & ~UMASK)
        yield pending
    except OSError as exc:
        raise _write_error(exc, path) from None
    finally:
        with contextlib.suppress(OSError):
            pending.file.close()
        if not pending.ready:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
    if not pending.ready:
        return
    try:
        os.replace(name, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise _write_error(exc, path) from None


def _sync(fh: BinaryIO) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _write_error(exc: OSError, path: Path) -> NmpError:
    # a full disk, a quota: the write's error names no file; this one does
    return NmpError(f"cannot write: {exc.strerror or exc}", file=str(path))


def atomic_write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON (one trailing newline) to ``path`` atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
