"""The ``nmp`` command: parses arguments and delegates. No model logic lives here.

Each capability registers its own subcommand(s) from a small ``cli`` module next to its code;
those modules import their heavy dependencies (numba, torch, pyrtl) only when a command runs, so
``nmp --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from nmp import __version__
from nmp.cliargs import NmpArgumentParser
from nmp.errors import NmpError

# Modules that define ``register(subparsers)``; order is the order of ``nmp --help``.
COMMAND_MODULES = (
    "nmp.memory.cli",  # replay
    "nmp.catalog",  # models
    "nmp.evaluate.run_cli",  # run
    "nmp.evaluate.cli",  # evaluate
    "nmp.rtl.cli",  # rtl export / rtl report
    "nmp.train.cli",  # train
    "nmp.cache.cli",  # cache
    "nmp.shard.cli",  # shard
    "nmp.validate.cli",  # validate
)


def build_parser() -> argparse.ArgumentParser:
    parser = NmpArgumentParser(
        prog="nmp",
        description="Near-memory-processing modeling and co-design kit for DLRM embeddings.",
    )
    parser.add_argument("--version", action="version", version=f"nmp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


# Piped or redirected output: rich would wrap tables at 80 columns and split names mid-word;
# every command's console (rich reads $COLUMNS) gets this width instead. Chosen: the widest
# table (nmp train --compare) is 150 columns.
PIPED_COLUMNS = "200"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one line, like errors (no source path and code line)."""
    print(f"nmp: warning: {message}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        os.environ["COLUMNS"] = PIPED_COLUMNS
    import warnings

    warnings.showwarning = _show_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except NmpError as exc:
        print(f"nmp: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        # the resource guard (nmp.guard) refuses what it can foresee; this is what it could not
        print(
            "nmp: error: out of memory: the run needs more than this machine has (smaller "
            "inputs, or fewer channels/ranks)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("nmp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # a file the command could not write or read (a full disk, a folder it may not write
        # into) that the command's own checks did not foresee: still one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"nmp: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
