"""Lists of variants in tests: the shipped ones pinned, a user's own allowed among them.

docs/extending.md promises that a new variant is a new module and nothing else; a test that
compared a registry's names with a literal list would fail for every variant a user adds.
These compare the shipped variants (each present, in their order) and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def assert_shipped_in_order(names: Iterable[str], shipped: Iterable[str]) -> None:
    """Every shipped name is in ``names``, in the shipped order; other names may sit between."""
    names, shipped = list(names), list(shipped)
    assert [n for n in names if n in shipped] == shipped, names


def package_files(package_dir: Path) -> list[str]:
    """The module names a package folder holds (``__init__`` left out), sorted: what a walk of
    the package must find, read from the folder rather than written down."""
    return sorted(p.stem for p in package_dir.glob("*.py") if p.stem != "__init__")
