"""The one error type the CLI turns into a clean message and a non-zero exit."""

from __future__ import annotations


class NmpError(Exception):
    """A user-facing error: bad input, unknown preset, malformed file.

    ``file``, ``line`` and ``key`` locate the problem; ``str()`` gives a one-line message that
    names them, e.g. ``models/arch/recnmp.toml: key 'rank.units': must divide 2 ranks``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.key is not None:
            where.append(f"key '{self.key}'")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class SpecError(NmpError):
    """A specification (TOML preset, sweep file, --set override) is invalid."""


class TraceError(NmpError):
    """A memory trace is malformed or does not fit the memory it is replayed on."""
