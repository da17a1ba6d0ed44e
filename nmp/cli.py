"""The ``nmp`` command: parses arguments and delegates. No model logic lives here.

Each capability registers its own subcommand from a small ``cli`` module next to its code,
which declares itself (``NMP_COMMAND``, read by :func:`command_table`); only the module of the
command that runs is imported (and those modules import their heavy dependencies, numba, torch,
pyrtl, only when their command runs), so
``nmp --help`` and ``nmp replay`` start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import importlib
import io
import os
import re
import sys
from collections.abc import Iterable
from typing import Any, NamedTuple

from nmp.cliargs import NmpArgumentParser
from nmp.errors import NmpError
from nmp.version import __version__

# A command is a module that declares itself with one top-level literal, ``NMP_COMMAND = {"name":
# ..., "order": ..., "help": ...}``, read here from the source without importing the module, so
# that ``nmp --help`` imports none of them and a command imports only its own module. Where to
# look (a command's module is a top-level module or a subpackage's ``*cli*.py``) keeps the scan to
# a few small files: no list of modules is kept anywhere.
_DECLARATION = re.compile(r"^NMP_COMMAND = (\{.*?\})$", re.MULTILINE | re.DOTALL)
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_HEAD_BYTES = 4096
# The literal's fields: a string without escapes, a whole number, True or False (ast.literal_eval
# would compile each: a millisecond at every start for ten commands).
_FIELD = re.compile(r'"(\w+)": ("[^"\\]*"|\d+|True|False)[,\s}]')


def _value(text: str) -> str | int | bool:
    if text.startswith('"'):
        return text[1:-1]
    return text == "True" if text in ("True", "False") else int(text)


class Command(NamedTuple):
    """One ``nmp`` command as its module declares it (a NamedTuple: a frozen dataclass cost
    three times the instructions to create, at every start)."""

    name: str
    module: str
    help: str
    order: int
    one_blas_thread: bool = False  # does no linear algebra (see _single_thread_blas)


def _declared(path: str) -> Command | None:
    """The command the module at ``path`` declares, if it declares one."""
    with open(path, "rb") as fh:  # the declaration follows the imports
        head = fh.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    found = _DECLARATION.search(head)
    if not found:
        return None
    fields: dict[str, Any] = {key: _value(text) for key, text in _FIELD.findall(found.group(1))}
    module = "nmp." + os.path.relpath(path, _PACKAGE)[: -len(".py")].replace(os.sep, ".")
    return Command(module=module, **fields)


def _candidates() -> list[str]:
    """Where a command's module may be: a top-level module, or a subpackage's ``*cli*.py``
    (os.scandir: pathlib's glob costs milliseconds at every start)."""
    paths = []
    with os.scandir(_PACKAGE) as top:
        for entry in top:
            if entry.name.endswith(".py"):
                paths.append(entry.path)
            elif entry.is_dir() and not entry.name.startswith(("_", ".")):
                with os.scandir(entry.path) as sub:
                    paths += [e.path for e in sub if "cli" in e.name and e.name.endswith(".py")]
    return sorted(paths)


@functools.cache
def command_table() -> dict[str, Command]:
    """Every command, by name, in the order of ``nmp --help``."""
    found = [c for c in map(_declared, _candidates()) if c is not None]
    return {c.name: c for c in sorted(found, key=lambda c: c.order)}


def build_parser(
    commands: Iterable[str] | None = None, *, list_others: bool = True
) -> argparse.ArgumentParser:
    """The ``nmp`` parser with the full parsers of ``commands`` (default: every command); the
    others are listed by name and help only, or (``list_others=False``: an argv that names its
    command first, so that no help or choice error of the top parser can show) left out: each
    listed one is a parser of its own, about 0.6 ms of every start (issue 43)."""
    table = command_table()
    full = set(table if commands is None else commands)
    parser = NmpArgumentParser(
        prog="nmp",
        description="Near-memory-processing modeling and co-design kit for DLRM embeddings.",
    )
    parser.add_argument("--version", action="version", version=f"nmp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in table.items():
        if name in full:
            importlib.import_module(command.module).register(sub)
        elif list_others:
            sub.add_parser(name, help=command.help)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if it is one."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in command_table() else None
    return None


# Piped or redirected output: rich would wrap tables at 80 columns and split names mid-word;
# every command's console (rich reads $COLUMNS) gets this width instead. Chosen: the widest
# table (nmp train --compare) is 150 columns.
PIPED_COLUMNS = "200"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line, like errors (no source path and code line)."""
    print(f"nmp: warning: {message}", file=file or sys.stderr)


# Commands that do no linear algebra (``one_blas_thread``): numpy's BLAS (OpenBLAS) would start a
# thread per core at import, each spinning a while for work that never comes (0.05-0.1 s of CPU on
# a 2-core VM for no wall-time gain: issue 43). Their process keeps BLAS on one thread unless the
# user chose.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _single_thread_blas(command: str | None) -> None:
    """One BLAS thread for ``command`` where it does no linear algebra, unless the user set
    the count (any of :data:`BLAS_THREAD_VARS`) or numpy is already loaded (too late)."""
    declared = command_table().get(command) if command else None
    if declared is None or not declared.one_blas_thread or "numpy" in sys.modules:
        return
    if any(os.environ.get(var) for var in BLAS_THREAD_VARS):
        return
    for var in BLAS_THREAD_VARS:
        os.environ[var] = "1"


def _encode_what_the_terminal_can() -> None:
    """Outputs in an encoding that lacks a character nmp prints (``PYTHONIOENCODING=ascii``, a
    C locale: x, micro, arrows) print a replacement instead of failing with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


def _internal_error(exc: BaseException) -> str:
    """The one line for an exception no check foresaw: its type, its text and where it was
    raised (the traceback with NMP_DEBUG=1)."""
    import traceback  # (here: a few ms of every start otherwise)

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return (
        f"internal error: {type(exc).__name__}{': ' + text if text else ''}{where} (a check "
        "is missing here: please report it; NMP_DEBUG=1 shows the traceback)"
    )


class _NamedOutput:
    """Standard output with its name on its errors: a write or flush that fails (a full disk,
    ``> /dev/full``; a closed descriptor) raises an OSError naming "standard output", and
    leaves the descriptor on /dev/null so that the interpreter's last flush, at exit, does not
    fail a second time. A reader that left (BrokenPipeError) is passed on as it is."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _failed(self, exc: OSError) -> OSError:
        if isinstance(exc, BrokenPipeError):
            return exc
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        return OSError(exc.errno, exc.strerror or str(exc), STDOUT_NAME)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._failed(exc) from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


STDOUT_NAME = "standard output"


class _ClosedOutput(io.TextIOBase):
    """Standard output where the process was started with it closed (``nmp models >&-``:
    Python's ``sys.stdout`` is None): every write fails, naming it."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed (nothing can be printed)", STDOUT_NAME)

    def isatty(self) -> bool:
        return False


def _occupy_closed_descriptors() -> None:
    """Descriptors 0-2 that the process was started without are opened on /dev/null: else the
    next file the command opens would get the number, and what is meant for standard output
    (a child process's, a ``dup2``) would go into that file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)


# The longest error line printed (chosen): a message quotes the input it refuses, and a
# 20,000-character preset name or a byte dump of a damaged archive made a 20 KB line.
MAX_ERROR_CHARS = 2000


def one_line(text: str, most: int = MAX_ERROR_CHARS) -> str:
    """``text`` as one printable line: control characters escaped (a NUL or a newline in a
    quoted value split the line), the middle left out past ``most`` characters."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    if len(text) > most:
        head, tail = most * 3 // 4, most // 4
        text = f"{text[:head]} ... ({len(text) - head - tail:,} characters) ... {text[-tail:]}"
    return text


def _tell(line: str) -> None:
    """Print ``line`` on standard error as one line (:func:`one_line`); where that cannot be
    written (closed, a full disk) the exit status alone tells."""
    with contextlib.suppress(OSError, ValueError):
        print(one_line(line), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    stdout, stderr = sys.stdout, sys.stderr
    if stdout is None or stderr is None:
        _occupy_closed_descriptors()
    sys.stdout = _NamedOutput(stdout) if stdout is not None else _ClosedOutput()
    if stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the process's whole life)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout  # (None where it was: nothing is left to flush at exit)


def _main(argv: list[str] | None) -> int:
    _encode_what_the_terminal_can()
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        os.environ["COLUMNS"] = PIPED_COLUMNS
    import warnings

    warnings.showwarning = _show_warning
    argv = sys.argv[1:] if argv is None else argv
    command = _command_of(argv)
    _single_thread_blas(command)
    # the command's word first: the top parser only hands the rest to that command's parser
    first = bool(argv) and argv[0] == command
    parser = build_parser(() if command is None else (command,), list_others=not first)
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            if not exc.code:  # --help, --version: exit 0 only once their text is out
                sys.stdout.flush()
            raise
        if not getattr(args, "func", None):
            # no command (or a command group such as `nmp rtl` without its subcommand): a usage
            # error, one line and exit status 1 like every other (docs/limits.md)
            parser.error("give a command (" + ", ".join(command_table()) + ")")
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a full disk fails here, not silently at exit
        return code
    except NmpError as exc:
        _tell(f"nmp: error: {exc}")
        return 1
    except MemoryError:
        # the resource guard (nmp.guard) refuses what it can foresee; this is what it could not
        _tell(
            f"nmp: error: out of memory: this `nmp {command}` needs more than the "
            "machine (or `ulimit -v`) allows: make the inputs or the sizes set by flags smaller"
        )
        return 1
    except KeyboardInterrupt:
        _tell("nmp: interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # a file the command could not write or read (a full disk, a folder it may not write
        # into) that the command's own checks did not foresee: still one line
        where = f"{exc.filename}: " if exc.filename else ""
        _tell(f"nmp: error: {where}{exc.strerror or exc}")
        return 1
    except RecursionError:
        # a structure nested deeper than the checks bound (they bound TOML and --set values)
        _tell("nmp: error: input nested too deeply")
        return 1
    except Exception as exc:
        # the last resort of the one-line contract (docs/limits.md): a traceback is for
        # developers, who ask for it
        if os.environ.get("NMP_DEBUG", "").strip() not in ("", "0"):  # (NMP_DEBUG=0: off)
            raise
        _tell(f"nmp: error: {_internal_error(exc)}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
