"""The ``nmp`` command's argument parser: numbers checked where they are parsed, and every
usage error as the one-line ``nmp: error: ...`` that every other error is.

:class:`NmpArgumentParser` (the top parser; its subcommands' parsers are of the same class)
parses every ``type=float`` flag with :func:`finite_float` (``nan``, ``inf`` refused: a
non-finite rate, size or exponent makes loops spin forever) and every ``type=int`` flag with
:func:`integer` (``1e9`` accepted as the integer it names, so that a huge count reaches the
resource guard, :mod:`nmp.guard`, which refuses it by name). A subcommand module therefore
keeps writing ``type=float``. :func:`check_out_folder` is the check of an ``--out`` folder that
a command makes before any work: a run that would fail to save its results after minutes of
work fails at once.

Standard library only (it sits at the bottom of the package).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from pathlib import Path

from nmp.errors import NmpError


def finite_float(text: str) -> float:
    """A float flag's value: a finite number (``nan``, ``inf``, ``-inf`` refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def integer(text: str) -> int:
    """An int flag's value: ``12``, ``-1``, ``1_000``, or an integral float such as ``1e9``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


def seed(text: str) -> int:
    """A ``--seed`` flag's value: an integer in [0, 2^63) (numpy's generators take no negative
    seed; a larger one would not fit the int64 that some models store it in)."""
    value = integer(text)
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2^63), got {text!r}")
    return value


def input_file(text: str) -> str:
    """An input file flag's value (a trace, an index or request file, a data file): a path
    that exists and is a regular file (a link to one is followed). Checked when the flag is
    parsed, before any work and without opening it: a named pipe would block the read, a
    device or a folder fail late or be read forever; the message names the flag and the path."""
    import stat

    from nmp.fileio import file_kind

    if not text:
        raise argparse.ArgumentTypeError("is empty: give a file")
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        raise argparse.ArgumentTypeError(f"{text}: no such file") from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise argparse.ArgumentTypeError(
            f"{text}: is {file_kind(mode)}, not a regular file: give a file"
        )
    return text


_TYPES = {float: finite_float, int: integer}


class NmpArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with checked numbers and one-line errors (exit status 1,
    like every other error of the command)."""

    def add_argument(self, *args, **kwargs):
        if kwargs.get("type") is int and any(str(a).endswith("-seed") for a in args):
            kwargs["type"] = seed  # every seed flag, of every command, in numpy's domain
        elif kwargs.get("type") in _TYPES:
            kwargs["type"] = _TYPES[kwargs["type"]]
        return super().add_argument(*args, **kwargs)

    def format_help(self) -> str:
        # a subcommand's description is often its module docstring: its reST ``literals``
        # read as plain text in a terminal
        return super().format_help().replace("``", "")

    def error(self, message: str):
        # one line, like every other error (docs/limits.md): the usage is one `--help` away
        command = self.prog.removeprefix("nmp").strip()
        where = f"nmp {command}: " if command else ""
        help_ = f"nmp {command} --help" if command else "nmp --help"
        print(f"nmp: error: {where}{message} (see {help_})", file=sys.stderr)
        sys.exit(1)


def check_out_folder(path: str | os.PathLike | None, flag: str = "--out") -> Path:
    """The folder ``path`` a command will write into, created if missing and proven writable
    by creating (and removing) a file in it; else :class:`NmpError` naming ``flag``. An empty
    string is refused (it would write into the current folder unasked)."""
    import tempfile  # (here: a few ms of every command's start-up otherwise)

    if path is None or str(path).strip() == "":
        raise NmpError(f"{flag} is empty: give a folder")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NmpError(f"{flag} {folder}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".nmp-write-check.", dir=folder)
    except OSError as exc:
        raise NmpError(f"{flag} {folder}: cannot write there ({exc.strerror})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return folder
