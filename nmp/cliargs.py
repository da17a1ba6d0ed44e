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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nmp.errors import NmpError

# The largest magnitude of a float flag (as nmp.config.MAX_SPEC_NUMBER of a spec's numbers,
# chosen: no rate, size or time the kit models comes near it, and a product of a few such stays
# finite: --ssd-read-us 1e308 made latencies inf - inf = nan, --storage-gbps 1e308 divided by 0).
MAX_FLAG_NUMBER = 1e18


def finite_float(text: str) -> float:
    """A float flag's value: a finite number (``nan``, ``inf``, ``-inf`` refused) within
    +-:data:`MAX_FLAG_NUMBER`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    if abs(value) > MAX_FLAG_NUMBER:
        raise argparse.ArgumentTypeError(f"must lie within +-1e18, got {text!r}")
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


# The largest integer a flag takes where nothing smaller bounds it: past int64, numpy and the
# C engine would overflow (2^64 gave numpy errors) before any check could name the flag.
MAX_FLAG_INT = 2**62
# Local processes: more than this many workers only exhausts the machine's process table and
# memory (chosen: 1024, 8x the largest CPU count the kit was run on, 128).
MAX_PROCESSES = 1024

# Every integer flag's range, [low, high], checked where it is parsed (the flag is named): by
# "COMMAND --flag" (a command's own meaning of the flag) or by "--flag". A count whose upper
# end is set by memory (the resource guard, nmp.guard, names it) or by the model's own check
# gets MAX_FLAG_INT here. tests/test_cli_outputs.py asserts every integer flag is listed.
INT_FLAG_RANGES: dict[str, tuple[int, int]] = {
    "evaluate --jobs": (1, MAX_PROCESSES),
    "evaluate --dask-workers": (1, MAX_PROCESSES),
    "validate --jobs": (0, MAX_PROCESSES),  # 0: one per CPU
    "replay --channels": (1, MAX_FLAG_INT),
    "replay --ranks": (1, MAX_FLAG_INT),
    "rtl export --width": (1, MAX_FLAG_INT),
    "rtl export --depth": (1, MAX_FLAG_INT),
    "rtl export --stages": (1, MAX_FLAG_INT),
    "rtl export --entries": (1, MAX_FLAG_INT),
    "rtl report --widths": (1, MAX_FLAG_INT),
    "rtl report --depth": (1, MAX_FLAG_INT),
    "rtl report --stages": (1, MAX_FLAG_INT),
    "train --steps": (1, MAX_FLAG_INT),
    "train --parities": (1, MAX_FLAG_INT),
    "train --nodes": (1, MAX_FLAG_INT),
    "train --trials": (1, MAX_FLAG_INT),
    "train --seeds": (1, MAX_FLAG_INT),
    "train --servers": (1, MAX_FLAG_INT),
    # each repeat is a whole distributed run (chosen: as train's MAX_SEEDS, hours already)
    "train --repeat": (1, 1000),
    "cache --requests": (1, MAX_FLAG_INT),
    "cache --warmup": (0, MAX_FLAG_INT),
    "cache --users": (1, MAX_FLAG_INT),
    "cache --user-history": (1, MAX_FLAG_INT),
    "cache --train-steps": (0, MAX_FLAG_INT),
    "shard --profile-batches": (1, MAX_FLAG_INT),
    "shard --eval-batches": (1, MAX_FLAG_INT),
    # each seed profiles and places anew: a spread, not a sweep (chosen)
    "shard --seeds": (1, 100),
    "measure --max-rows": (1, MAX_FLAG_INT),
    "measure --max-mib": (1, MAX_FLAG_INT),
}


def bounded_integer(low: int, high: int) -> Callable[[str], int]:
    """An int flag's type: :func:`integer`, in [low, high] (the message names the range)."""

    def parse(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            shown = "2^62" if high == MAX_FLAG_INT else f"{high:,}"
            raise argparse.ArgumentTypeError(
                f"must be an integer in [{low:,}, {shown}], got {text!r}"
            )
        return value

    parse.__name__ = "integer"  # argparse names the type in some messages
    return parse


def int_flag_range(command: str, flags: Iterable[str]) -> tuple[int, int] | None:
    """The [low, high] of integer flag ``flags`` (its option strings) of ``command`` (``rtl
    export``), from :data:`INT_FLAG_RANGES`; None when it is not listed."""
    for flag in flags:
        found = INT_FLAG_RANGES.get(f"{command} {flag}") or INT_FLAG_RANGES.get(flag)
        if found:
            return found
    return None


def nonempty_text(text: str) -> str:
    """A text flag's value (a preset, a file, a folder, a name): not empty. An empty one was
    read as "not given" and the default used silently (``--memory ""``, ``--setup ""``,
    ``--save-requests ""`` saved nothing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a value or leave the flag out")
    return text


_TYPES = {float: finite_float, int: integer}


def _takes_text(kwargs: dict) -> bool:
    """Whether an argument of these keywords stores a text value (not a flag's constant)."""
    return kwargs.get("action", "store") in ("store", "append") and kwargs.get("nargs") != 0


class NmpArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with checked numbers and one-line errors (exit status 1,
    like every other error of the command)."""

    def add_argument(self, *args, **kwargs):
        if kwargs.get("type") is int and any(str(a).endswith("-seed") for a in args):
            kwargs["type"] = seed  # every seed flag, of every command, in numpy's domain
        elif kwargs.get("type") is int:
            # every count in its range (INT_FLAG_RANGES), else at least 1 and within int64
            command = self.prog.removeprefix("nmp").strip()
            low, high = int_flag_range(command, [str(a) for a in args]) or (1, MAX_FLAG_INT)
            kwargs["type"] = bounded_integer(low, high)
        elif kwargs.get("type") in _TYPES:
            kwargs["type"] = _TYPES[kwargs["type"]]
        elif kwargs.get("type") is None and "choices" not in kwargs and _takes_text(kwargs):
            kwargs["type"] = nonempty_text
        return super().add_argument(*args, **kwargs)

    def format_help(self) -> str:
        # a subcommand's description is often its module docstring: its reST ``literals``
        # read as plain text in a terminal
        return super().format_help().replace("``", "")

    def _print_message(self, message: str, file=None) -> None:
        # argparse drops a failed write (--help > /dev/full exited 0 printing nothing): the
        # error reaches nmp.cli.main, which names the output and exits 1
        if message:
            (file or sys.stderr).write(message)

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


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as the JSON document a ``--json`` flag prints: strict JSON only. A number that
    is not finite (``inf``, ``nan``: an input far outside the model's range) would print as
    ``Infinity``/``NaN``, which no JSON reader accepts: :class:`NmpError` names where it is
    instead."""
    import json  # (here: the parser's module loads at every start)

    try:
        return json.dumps(data, indent=indent, allow_nan=False)
    except ValueError:
        found = _first_non_finite(data, "")
        where, value = found if found else ("", math.nan)
        raise NmpError(
            f"the result's {where or 'value'} is {value} (not a finite number: an input is "
            "outside the model's range); no valid JSON to print"
        ) from None


def _first_non_finite(data: Any, path: str) -> tuple[str, float] | None:
    """(dotted path, value) of the first float in ``data`` that is not finite, if any."""
    if isinstance(data, float) and not math.isfinite(data):
        return path, data
    items: Iterable[tuple[Any, Any]] = ()
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    for key, value in items:
        found = _first_non_finite(value, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None
