"""Where the shared reference data (``shared/reference/``: measured DRAM cycle counts, traces,
PAPERS.md) lives: it is kept outside the repository, beside the checkout."""

from __future__ import annotations

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


def dram_reference_dir() -> Path:
    """``shared/reference/dram``: traces and the cycle counts Ramulator 2 and DRAMsim3 measured."""
    return shared_dir() / "reference" / "dram"


def case_memory_spec(memory_args: list[str]):
    """The memory spec of a reference case's ``memory_args``: ``nmp replay``'s memory flags,
    parsed and applied as ``nmp replay`` does."""
    import argparse

    from nmp.memory.cli import add_memory_arguments, memory_spec

    parser = argparse.ArgumentParser(prog="memory_args", add_help=False, exit_on_error=False)
    add_memory_arguments(parser)
    args, unknown = parser.parse_known_args(memory_args)
    if unknown:
        raise ValueError(f"memory_args {memory_args}: not a memory flag of nmp replay: {unknown}")
    return memory_spec(args)
