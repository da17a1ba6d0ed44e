"""Where the reference data (measured DRAM cycle counts and their traces, PAPERS.md) lives: in
the repository, ``data/reference/`` (see its README: where each figure came from), so that a
clone from anywhere runs and passes its tests; else, for a checkout without it, the shared
folder beside the checkout (``$NMP_SHARED``, ``../shared``, or beside the local checkout a
scratch clone was made from)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from nmp.config import project_root

_ORIGIN_URL = re.compile(r'\[remote "origin"\][^\[]*?^\s*url\s*=\s*(.+?)\s*$', re.M | re.S)


def _origin_checkout(repo: Path) -> Path | None:
    """The local checkout ``repo`` was cloned from (``git clone /path/to/nmp``), if any."""
    try:
        text = (repo / ".git" / "config").read_text()
    except OSError:
        return None
    m = _ORIGIN_URL.search(text)
    if not m:
        return None
    url = m.group(1).removeprefix("file://")
    if not os.path.isabs(url):
        return None  # a remote (https, ssh): no folder beside it here
    path = Path(url).resolve()
    return path.parent if path.name == ".git" else path


def shared_dir() -> Path:
    """``$NMP_SHARED``; else ``shared/`` beside the checkout; else, in a clone of a local
    checkout (a scratch clone, as CI makes), ``shared/`` beside that checkout. The first
    candidate that exists, or ``shared/`` beside the checkout when none does (the error then
    names the expected place)."""
    env = os.environ.get("NMP_SHARED")
    if env:
        return Path(env)
    repo = project_root()
    beside = repo.parent / "shared"
    if beside.is_dir():
        return beside
    origin = _origin_checkout(repo)
    if origin is not None and (origin.parent / "shared").is_dir():
        return origin.parent / "shared"
    return beside


def repo_reference_dir() -> Path:
    """``data/reference`` in the repository."""
    return project_root() / "data" / "reference"


def dram_reference_dir() -> Path:
    """Traces and the cycle counts Ramulator 2 and DRAMsim3 measured: ``$NMP_SHARED`` where it
    is set (an explicit choice), else ``data/reference/dram`` in the repository, else
    ``shared/reference/dram`` beside the checkout (:func:`shared_dir`). A folder outside the
    repository is read only where no other user could have written into it (the verdicts of
    ``nmp validate`` rest on its counts)."""
    if os.environ.get("NMP_SHARED"):
        base = Path(os.environ["NMP_SHARED"])
        return _trusted(base, base / "reference" / "dram", f"NMP_SHARED={base}")
    repo = repo_reference_dir() / "dram"
    if (repo / "cases.json").is_file():
        return repo
    base = shared_dir()
    return _trusted(base, base / "reference" / "dram", str(base))


# cases.json is 127 KB; a file a thousand times larger is not one the kit wrote
MAX_CASES_BYTES = 128 * 1024**2


def read_cases(folder: Path) -> dict:
    """``folder``'s ``cases.json`` (the reference cases and every simulator's counts), or an
    NmpError naming the file: not a regular file, too large, not UTF-8 JSON, not an object
    with ``cases`` and ``memory_configs``."""
    import json

    from nmp.errors import NmpError
    from nmp.fileio import read_regular

    path = folder / "cases.json"
    raw = read_regular(path, MAX_CASES_BYTES)
    if len(raw) > MAX_CASES_BYTES:
        raise NmpError(f"larger than {MAX_CASES_BYTES >> 20} MiB: not the kit's", file=str(path))
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise NmpError("not UTF-8 text", file=str(path)) from None
    except RecursionError:
        raise NmpError("not valid JSON (nested too deeply)", file=str(path)) from None
    except ValueError as exc:
        raise NmpError(f"not valid JSON ({exc})", file=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise NmpError("not the reference cases (no 'cases' list)", file=str(path))
    if not isinstance(data.get("memory_configs"), dict):
        raise NmpError("not the reference cases (no 'memory_configs' table)", file=str(path))
    return data


def _trusted(base: Path, folder: Path, named: str) -> Path:
    """``folder`` where neither it nor a folder from ``base`` down to it could have been
    written by another user; else a SpecError naming ``named``."""
    from nmp.errors import SpecError
    from nmp.fileio import others_can_write  # (on use: a repository's data needs no check)

    for part in (base, base / "reference", folder):
        why = others_can_write(part)
        if why:
            raise SpecError(
                f"{named}: reference data is not read from {part}: {why} (chmod o-w it)"
            )
    return folder


def case_memory_spec(memory_args: list[str]):
    """The memory spec of a reference case's ``memory_args``: ``nmp replay``'s memory flags,
    parsed and applied as ``nmp replay`` does."""
    # numpy: loaded on use (start-up time)
    from nmp.memory.cli import add_memory_arguments, memory_spec

    parser = argparse.ArgumentParser(prog="memory_args", add_help=False, exit_on_error=False)
    add_memory_arguments(parser)
    args, unknown = parser.parse_known_args(memory_args)
    if unknown:
        raise ValueError(f"memory_args {memory_args}: not a memory flag of nmp replay: {unknown}")
    return memory_spec(args)
