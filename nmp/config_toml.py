"""Spec files read safely: a TOML file parsed, each error naming the file and its line or key.

Reading a file, and refusing one that is no spec (too large, not UTF-8, nested too deep, a
number that is not finite), is apart from what its tables become (:mod:`nmp.config_mapping`);
the limits here bound the ``--set`` values too (:mod:`nmp.config_overrides`). Split from
:mod:`nmp.config`, which re-exports the public names: code imports them from there.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import nmp.toml_cache as toml_cache
from nmp.errors import NmpError, SpecError
from nmp.fileio import read_regular

# The largest TOML file read (chosen: the biggest preset or sweep is 20 KB; a larger "TOML"
# file is a mistake, such as a trace or a device given for a preset, not a spec).
MAX_TOML_BYTES = 16 * 1024**2


def load_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error names the file and line, a byte that is not UTF-8 its
    line, a non-finite float (``nan``, ``inf``) its key. The kit's own files are parsed once
    per content (:mod:`nmp.toml_cache`)."""
    path = Path(path)
    try:
        raw = read_regular(path, MAX_TOML_BYTES)  # a folder, a pipe, a device: refused
    except NmpError as exc:
        raise SpecError(exc.message, file=exc.file) from None
    if len(raw) > MAX_TOML_BYTES:
        raise SpecError(f"larger than {MAX_TOML_BYTES >> 20} MiB: not a spec", file=str(path))
    cached = toml_cache.load(path, raw)  # these very bytes, parsed and checked before
    if cached is not None:
        return cached
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is dropped, not a syntax error
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not UTF-8 text (byte {raw[exc.start]:#04x}); TOML files are UTF-8",
            file=str(path),
            line=raw[: exc.start].count(b"\n") + 1,
        ) from None
    import tomllib  # (here: a cached file needs no parser; issue 43)

    try:
        data = tomllib.loads(text)
    except RecursionError:  # the parser recurses per level of [ and {
        raise SpecError(f"nested deeper than {MAX_TOML_DEPTH} levels", file=str(path)) from None
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise _decode_error(exc, path) from None
        # int() of a number past 4,300 digits (tomllib lets its ValueError through)
        raise SpecError(_LONG_NUMBER, file=str(path), line=_long_number_line(text)) from None
    check_depth(data, file=str(path))
    check_finite(data, file=str(path))
    toml_cache.store(path, raw, data)
    return data


def _decode_error(exc: Exception, path: Path) -> SpecError:
    # Python 3.11's TOMLDecodeError carries the position only in its text.
    match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
    line = int(match.group(1)) if match else None
    msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
    return SpecError(f"invalid TOML: {msg}", file=str(path), line=line)


_LONG_NUMBER = "a number of more than 4,300 digits (no quantity the kit models is near it)"


def _long_number_line(text: str) -> int | None:
    found = re.search(r"[0-9_]{4300}", text)
    return text.count("\n", 0, found.start()) + 1 if found else None


# The deepest nesting of tables, arrays and dotted keys a spec may have (chosen: the deepest
# preset or sweep nests 4 levels; 32 leaves room for any real spec, and every walk of a spec's
# values, recursive, stays far from Python's recursion limit).
MAX_TOML_DEPTH = 32


def check_depth(value: Any, *, file: str | None = None, key: str = "") -> None:
    """Raise :class:`SpecError` where ``value`` (tables, arrays) nests deeper than
    :data:`MAX_TOML_DEPTH`, naming the first key that does (walked without recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, key, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_TOML_DEPTH:
            shown = where if len(where) <= 80 else where[:77] + "..."
            raise SpecError(f"nested deeper than {MAX_TOML_DEPTH} levels", file=file, key=shown)
        if isinstance(item, dict):
            stack.extend((v, _join(where, str(k)), depth + 1) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


def check_finite(value: Any, *, file: str | None = None, key: str = "") -> None:
    """Raise :class:`SpecError` at the first non-finite float (``nan``, ``inf``) in ``value``
    (nested tables and arrays), naming its dotted key: no spec field is meaningful at NaN or
    infinity, and some (a Zipf exponent, a size) make a model loop forever."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"must be a finite number, got {value}", file=file, key=key or None)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, file=file, key=_join(key, str(k)))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_finite(v, file=file, key=f"{key}[{i}]")


# (here, the lowest of the config modules: each names a spec's keys by their dotted path)
def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name
