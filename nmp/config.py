"""Specs as data: TOML presets become frozen dataclasses, validated on load.

Every spec type in the kit (memory, architecture, GPU, workload, sweep) is a frozen dataclass.
This module turns a TOML table into one, checking names and types key by key so that an error
names the file and the dotted key path, and applies ``--set key=value`` overrides by dotted path.

A dataclass may define ``validate(self)``; it runs after construction and may raise
``ValueError`` (reported at the table's own key) or :class:`KeyedValueError` (reported at a
sub-key).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import nmp.toml_cache as toml_cache
from nmp.errors import NmpError, SpecError
from nmp.fileio import read_regular
from nmp.registry import Registry
from nmp.units import is_number

T = TypeVar("T")


class KeyedValueError(ValueError):
    """A validation failure at ``key`` (relative to the dataclass being validated).

    ``also`` are the other keys of a rule between fields (``nREFI`` against ``nRFC``): a
    ``--set`` of one of them, not of ``key``, is the one blamed (:func:`apply_overrides`)."""

    def __init__(self, key: str, message: str, *, also: tuple[str, ...] = ()) -> None:
        self.key = key
        self.message = message
        self.also = also
        super().__init__(f"{key}: {message}")


def require_at_least(obj: Any, minimum: int, *keys: str) -> None:
    """Raise :class:`KeyedValueError` for the first of ``keys`` whose value on ``obj`` is below
    ``minimum`` (the check every spec's ``validate`` makes of its counts and energies)."""
    for key in keys:
        if getattr(obj, key) < minimum:
            raise KeyedValueError(key, f"must be >= {minimum}")


def require_positive(obj: Any, *keys: str) -> None:
    """Raise :class:`KeyedValueError` for the first of ``keys`` whose value on ``obj`` is not
    above zero (a voltage, a clock, a count of devices)."""
    for key in keys:
        if not getattr(obj, key) > 0:
            raise KeyedValueError(key, f"must be > 0, got {getattr(obj, key)}")


def project_root() -> Path:
    """The folder that holds ``models/`` and ``workloads/``.

    ``NMP_HOME`` overrides it; otherwise the checkout that this package lives in.
    """
    env = os.environ.get("NMP_HOME")
    if env:
        root = Path(env)
        if not (root / "models").is_dir():
            raise SpecError(
                f"NMP_HOME={env}: no models/ folder there (it names the folder that holds "
                "models/ and workloads/; unset it to use the kit's own)"
            )
        from nmp.fileio import others_can_write  # (on use: most commands never set it)

        for folder in (root, root / "models", root / "workloads"):
            why = others_can_write(folder)
            if why:
                raise SpecError(
                    f"NMP_HOME={env}: presets are not read from {folder}: {why} (chmod o-w it)"
                )
        return root
    return _package_root()


@functools.cache
def _package_root() -> Path:
    """The checkout this package lives in (resolved once: 35 us a call, most of a preset
    lookup's time)."""
    return Path(__file__).resolve().parent.parent


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


class PresetRegistry(Registry[Path]):
    """The presets of one kind: the TOML files of a folder under :func:`project_root`.

    A preset is its file: adding ``models/memory/<name>.toml`` adds the memory preset
    ``<name>``, nothing else to edit. Every lookup sees the folder as it is (``NMP_HOME`` may
    change it, a file may be added): the listing is kept only while the folder's identity and
    modification time stay those it was read at (a file added, removed or renamed changes the
    time), and not kept at all while that time is within :data:`_RACY_NS` of now (a file
    system with coarse times could show a change in the same tick). Listing the folder took
    about 95 us; the full ReCross claims listed ``models/arch`` 91,000 times (setup keys that
    name a design, checked per point). The registry is listed by ``nmp models --registries``
    with the other families.
    """

    #: The preset registries by their kind ("memory", "workload", ...).
    by_kind: dict[str, PresetRegistry] = {}

    def __init__(self, kind: str, folder: str) -> None:
        super().__init__(f"{kind} preset")
        self.preset_kind = kind
        self.folder = folder  # relative to the project root
        self._kept: tuple[tuple, dict[str, Path]] | None = None  # (the folder's stat, listing)
        PresetRegistry.by_kind[kind] = self

    def path(self) -> Path:
        return project_root() / self.folder

    def _listed(self) -> dict[str, Path]:
        import stat
        import time

        folder = self.path()
        try:
            st = folder.stat()
        except OSError:
            return {}
        if not stat.S_ISDIR(st.st_mode):
            return {}
        seen = (str(folder), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        kept = self._kept
        if kept is not None and kept[0] == seen:
            return dict(kept[1])
        listed = {p.stem: p for p in sorted(folder.glob("*.toml"))}
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _RACY_NS:
            self._kept = (seen, listed)
        return dict(listed)

    def get(self, name: str) -> Path:
        found = self._listed().get(name)
        if found is None:
            raise NmpError(self.unknown_message(name))
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._listed()

    def describe(self) -> list[dict[str, str]]:
        """One row per preset: name, the file's first comment line, and the file."""
        root = project_root()
        return [
            {"name": k, "description": _first_comment(p), "module": str(p.relative_to(root))}
            for k, p in self.items()
        ]


# A folder changed less than this long ago is listed again at every lookup (see PresetRegistry).
_RACY_NS = 2_000_000_000


# The most of a preset's start read for its description (its first comment line is at the top)
_DESCRIPTION_BYTES = 64 * 1024


def _first_comment(path: Path) -> str:
    """The first comment line of ``path``, or what is wrong with the file (a pipe, a device: read
    without blocking, and only its first :data:`_DESCRIPTION_BYTES`)."""
    from nmp.fileio import open_regular

    try:
        with open_regular(path) as fh:
            text = fh.read(_DESCRIPTION_BYTES).decode("utf-8", errors="replace")
    except NmpError as exc:
        return f"invalid: {exc.message}"
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


MEMORY_PRESETS = PresetRegistry("memory", "models/memory")
DRAM_STANDARDS = PresetRegistry("DRAM standard", "models/memory/standards")
ARCH_PRESETS = PresetRegistry("arch", "models/arch")
GPU_PRESETS = PresetRegistry("gpu", "models/gpu")
TOPOLOGY_PRESETS = PresetRegistry("topology", "models/topology")
NETWORK_PRESETS = PresetRegistry("network", "models/network")
WORKLOAD_PRESETS = PresetRegistry("workload", "workloads")

#: ``nmp models``: a preset kind's table of key figures (name, summary, figures); the model
#: package that reads the kind registers its ``catalog_rows`` under the kind's name.
PRESET_CATALOGS: Registry[Callable[[], list[dict[str, Any]]]] = Registry(
    "preset catalog",
    package="nmp",
    marker=r"^@PRESET_CATALOGS\.register\(",
    order=lambda rows_fn: rows_fn.__module__,  # listed in module order, whatever loaded first
)


def preset_registry(kind: str) -> PresetRegistry:
    """The presets of ``kind``; an NmpError listing the kinds when there is none."""
    try:
        return PresetRegistry.by_kind[kind]
    except KeyError:
        known = ", ".join(PresetRegistry.by_kind)
        raise NmpError(f"unknown preset kind {kind!r} (known: {known})") from None


def preset_dir(kind: str) -> Path:
    """The folder of ``kind``'s presets (``models/<kind>``; ``workloads`` for workloads)."""
    return preset_registry(kind).path()


def preset_names(kind: str) -> list[str]:
    return list(preset_registry(kind).names())


def find_preset(kind: str, name: str) -> Path:
    """Path of preset ``name`` of ``kind``, or of ``name`` itself if it is a TOML file."""
    candidate = Path(name)
    # a path (it ends in .toml or names a folder: /dev/zero, ./pipe) is read as a file, and
    # load_toml says what is wrong with it (a folder, a pipe, a device, missing)
    if candidate.suffix == ".toml" or os.sep in name:
        return candidate
    path = preset_dir(kind) / f"{name}.toml"
    try:
        if path.is_file():
            return path
    except OSError:  # a name longer than a file's may be: no preset (the error names it below)
        known = ", ".join(preset_names(kind)) or "none"
        shown = name if len(name) <= 64 else f"{name[:40]}...({len(name):,} characters)"
        raise SpecError(f"unknown {kind} preset '{shown}' (known: {known})") from None
    if os.path.lexists(path):  # listed as a preset (a *.toml name), but no regular file
        from nmp.fileio import file_kind

        try:
            what = file_kind(path.stat().st_mode)
        except OSError:
            what = "a symbolic link to nothing"
        raise SpecError(
            f"{kind} preset '{name}' is {what}, not a regular file", file=str(path)
        ) from None
    known = ", ".join(preset_names(kind)) or "none"
    raise SpecError(f"unknown {kind} preset '{name}' (known: {known})")


# ---------------------------------------------------------------------------------------------
# dict -> frozen dataclass


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _convert(value: Any, tp: Any, key: str, file: str | None) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, key, file)
            except SpecError as exc:
                errors.append(exc.message)
        raise SpecError("; ".join(errors) or "invalid value", file=file, key=key)
    if origin is Literal:
        if value not in args:
            allowed = ", ".join(repr(a) for a in args)
            raise SpecError(f"must be one of {allowed}, got {value!r}", file=file, key=key)
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise SpecError(f"must be a table, got {value!r}", file=file, key=key)
        return from_mapping(tp, value, file=file, key_prefix=key)
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            raise SpecError(f"must be an array, got {value!r}", file=file, key=key)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis or origin is list and args:
            item_tp = args[0]
        elif origin is tuple and args:
            if len(args) != len(value):
                raise SpecError(f"must have {len(args)} items", file=file, key=key)
            return tuple(
                _convert(v, a, f"{key}[{i}]", file)
                for i, (v, a) in enumerate(zip(value, args, strict=True))
            )
        else:
            item_tp = Any
        items = [_convert(v, item_tp, f"{key}[{i}]", file) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise SpecError(f"must be a table, got {value!r}", file=file, key=key)
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _convert(v, val_tp, f"{key}.{k}", file) for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {value!r}", file=file, key=key)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return _in_range(int(value), key, file)
            raise SpecError(f"must be an integer, got {value!r}", file=file, key=key)
        return _in_range(value, key, file)
    if tp is float:
        if not is_number(value):
            raise SpecError(f"must be a number, got {value!r}", file=file, key=key)
        if not math.isfinite(value):
            raise SpecError(f"must be a finite number, got {value!r}", file=file, key=key)
        return _in_range(float(value), key, file)
    if tp is str:
        if not isinstance(value, str):
            raise SpecError(f"must be a string, got {value!r}", file=file, key=key)
        return value
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise SpecError(f"must be {_type_name(tp)}, got {value!r}", file=file, key=key)


# The largest magnitude of any number in a spec (chosen: the largest of any preset is 1e12 FLOP/s,
# a table's rows reach 1e10; 1e18 leaves six orders of magnitude and keeps the products the
# models form finite in float64 and within int64: 10^17 cycles overflowed the C engine's counts,
# 1e308 volts made energies infinite, 2^64 made numpy raise).
MAX_SPEC_NUMBER = 10**18


def _in_range(value: T, key: str, file: str | None) -> T:
    if abs(value) > MAX_SPEC_NUMBER:  # type: ignore[arg-type]
        raise SpecError(
            f"must lie within +-1e18 (no quantity the kit models is larger), got "
            f"{value if len(repr(value)) <= 24 else format(value, '.3g')}",
            file=file,
            key=key,
        )
    return value


_HINTS: dict[type, dict[str, Any]] = {}
_INIT_FIELDS: dict[type, dict[str, dataclasses.Field]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """``get_type_hints(cls)``, once per class: it compiles every annotation string each time
    (most of the time of ``nmp evaluate --check`` before it was cached)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _init_fields(cls: type) -> dict[str, dataclasses.Field]:
    if cls not in _INIT_FIELDS:
        _INIT_FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls) if f.init}
    return _INIT_FIELDS[cls]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def from_mapping(
    cls: type[T], data: dict[str, Any], *, file: str | None = None, key_prefix: str = ""
) -> T:
    """Build dataclass ``cls`` from ``data``: unknown keys, missing keys and wrong types raise
    :class:`SpecError` naming ``file`` and the dotted key."""
    hints = _type_hints(cls)
    fields = _init_fields(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        known = ", ".join(fields)
        raise SpecError(
            f"unknown key (expected one of: {known})", file=file, key=_join(key_prefix, unknown[0])
        )
    kwargs = {}
    for name, field in fields.items():
        key = _join(key_prefix, name)
        if name not in data:
            no_default = (
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            )
            if no_default:
                raise SpecError("missing required key", file=file, key=key)
            continue
        kwargs[name] = _convert(data[name], hints[name], key, file)
    try:
        obj = cls(**kwargs)
    except KeyedValueError as exc:
        raise SpecError(exc.message, file=file, key=_join(key_prefix, exc.key)) from None
    except (ValueError, TypeError) as exc:
        raise SpecError(str(exc), file=file, key=key_prefix or None) from None
    validate = getattr(obj, "validate", None)
    if callable(validate):
        try:
            validate()
        except KeyedValueError as exc:
            raise SpecError(exc.message, file=file, key=_join(key_prefix, exc.key)) from None
        except ValueError as exc:
            raise SpecError(str(exc), file=file, key=key_prefix or None) from None
    return obj


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}
_SCALARS = frozenset({int, float, str, bool, type(None)})


def _field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of dataclass ``cls``; None for any other type (once per class)."""
    if cls not in _FIELD_NAMES:
        is_dc = dataclasses.is_dataclass(cls)
        _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)) if is_dc else None
    return _FIELD_NAMES[cls]


def to_mapping(obj: Any) -> Any:
    """A dataclass (recursively) as plain dicts/lists, the inverse of :func:`from_mapping`."""
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    names = _field_names(cls)
    if names is not None:
        return {name: to_mapping(getattr(obj, name)) for name in names}
    if isinstance(obj, list | tuple):
        return [to_mapping(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_mapping(v) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------------------------------------
# --set key=value overrides by dotted path


def parse_value(text: str) -> Any:
    """A --set value as TOML would read it (``8``, ``1.5``, ``true``, ``"x"``, ``[1, 2]``);
    anything else is a bare string (``combined``)."""
    import tomllib  # (here: a replay without --set parses no TOML; issue 43)

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except RecursionError:
        raise SpecError(f"--set value nested deeper than {MAX_TOML_DEPTH} levels") from None
    except tomllib.TOMLDecodeError:
        return text
    except ValueError:  # int() of a number past 4,300 digits
        raise SpecError(f"--set value: {_LONG_NUMBER}") from None


def parse_set_args(items: list[str] | None) -> dict[str, Any]:
    """``["arch.bank.units=8", "workload.batch=32"]`` -> ``{"arch.bank.units": 8, ...}``."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SpecError(f"--set expects key=value, got {item!r}")
        if "\n" in item or "\r" in item:  # a pasted block: one key=value per --set
            raise SpecError(f"--set value spans several lines: {item!r}", key=key)
        try:
            out[key] = parse_value(value.strip())
        except SpecError as exc:
            raise SpecError(exc.message, key=key) from None
        check_depth(out[key], key=key)
        check_finite(out[key], key=key)
    return out


def split_overrides(overrides: dict[str, Any], roots: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Group ``{"arch.x": 1, "workload.y": 2}`` by root; a key with another root raises."""
    grouped: dict[str, dict[str, Any]] = {root: {} for root in roots}
    for key, value in overrides.items():
        root, _, rest = key.partition(".")
        if root not in grouped or not rest:
            raise SpecError(f"override must start with one of {', '.join(roots)}", key=key)
        grouped[root][rest] = value
    return grouped


def field_exists(spec: Any, path: str) -> bool:
    """Whether dotted ``path`` names a field of dataclass instance ``spec``."""
    try:
        _resolve(spec, path.split("."), path)
    except SpecError:
        return False
    return True


def _resolve(obj: Any, parts: list[str], full_key: str) -> Any:
    for i, part in enumerate(parts):
        if dataclasses.is_dataclass(obj):
            names = [f.name for f in dataclasses.fields(obj)]
            if part not in names:
                prefix = ".".join(parts[:i])
                where = f"'{prefix}'" if prefix else "the spec"
                raise SpecError(
                    f"no field '{part}' in {where} (fields: {', '.join(names)})", key=full_key
                )
            obj = getattr(obj, part)
        elif isinstance(obj, dict):
            if part not in obj:
                raise SpecError(f"no entry '{part}'", key=full_key)
            obj = obj[part]
        elif isinstance(obj, list | tuple) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            raise SpecError(f"cannot descend into '{part}'", key=full_key)
    return obj


def _no_field(obj: Any, part: str, key: str) -> SpecError:
    names = ", ".join(sorted(_field_names(type(obj)) or ()))
    return SpecError(f"no field '{part}' in {type(obj).__name__} (fields: {names})", key=key)


def _replace(obj: Any, changes: dict[str, Any], key_prefix: str) -> Any:
    """``dataclasses.replace``, with a constructor's objection as a :class:`SpecError` at
    its key."""
    try:
        return dataclasses.replace(obj, **changes)
    except KeyedValueError as exc:
        raise SpecError(exc.message, key=_join(key_prefix, exc.key)) from None
    except (ValueError, TypeError) as exc:
        raise SpecError(str(exc), key=key_prefix or None) from None


def _set_path(
    obj: Any, parts: list[str], value: Any, full_key: str, owner_cls: Any, touched: set[str]
) -> Any:
    """``obj`` with the field at ``parts`` set to ``value`` (converted to the field's type);
    adds the key path (relative to the root) of every dataclass it rebuilds to ``touched``."""
    part, rest = parts[0], parts[1:]
    depth = len(full_key.split(".")) - len(parts)
    prefix = ".".join(full_key.split(".")[:depth])
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if part not in (_field_names(type(obj)) or ()):
            raise _no_field(obj, part, full_key)
        hints = _type_hints(type(obj))
        current = getattr(obj, part)
        if rest:
            new = _set_path(current, rest, value, full_key, hints[part], touched)
        else:
            new = _convert(value, hints[part], full_key, None)
        touched.add(prefix)
        return _replace(obj, {part: new}, prefix)
    if isinstance(obj, list | tuple) and part.isdigit() and int(part) < len(obj):
        idx = int(part)
        items = list(obj)
        item_tp = get_args(owner_cls)[0] if get_args(owner_cls) else Any
        items[idx] = (
            _set_path(items[idx], rest, value, full_key, item_tp, touched)
            if rest
            else _convert(value, item_tp, full_key, None)
        )
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        args = get_args(owner_cls)
        value_tp = args[1] if get_origin(owner_cls) is dict and len(args) == 2 else Any
        new = dict(obj)
        if rest:
            if part not in obj:
                raise SpecError(f"no entry '{part}'", key=full_key)
            new[part] = _set_path(obj[part], rest, value, full_key, value_tp, touched)
        else:
            new[part] = _convert(value, value_tp, full_key, None)
        return new
    raise SpecError(f"cannot set '{part}' on a {type(obj).__name__}", key=full_key)


def _blamed_key(path: str, exc: KeyedValueError, given: frozenset[str]) -> str:
    """The key to name for ``exc`` raised at dataclass ``path``: its own key, unless only one
    of the rule's other keys (``exc.also``) was among the keys ``given`` (the overrides)."""
    key = _join(path, exc.key)
    if key in given:
        return key
    return next((_join(path, k) for k in exc.also if _join(path, k) in given), key)


def _validate_at(spec: Any, path: str, root: str, given: frozenset[str] = frozenset()) -> None:
    """Run the ``validate()`` of the dataclass at dotted ``path`` in ``spec`` (as
    :func:`from_mapping` does after building it), its errors keyed from ``root`` (a rule
    between fields blamed at the field of ``given``, the overridden keys)."""
    obj = spec
    parts = path.split(".") if path else []
    for part in parts[len(root.split(".")) if root else 0 :]:
        obj = (
            obj[int(part)]
            if isinstance(obj, list | tuple)
            else (obj[part] if isinstance(obj, dict) else getattr(obj, part))
        )
    validate = getattr(obj, "validate", None)
    if not callable(validate):
        return
    try:
        validate()
    except KeyedValueError as exc:
        raise SpecError(exc.message, key=_blamed_key(path, exc, given)) from None
    except ValueError as exc:
        raise SpecError(str(exc), key=path or None) from None


def apply_overrides(spec: T, overrides: dict[str, Any], *, root: str = "") -> T:
    """Return ``spec`` with each dotted-path override applied and the result re-validated.

    ``root`` prefixes keys in error messages (``arch.bank.units``). Every dataclass on the
    path of an override is rebuilt (its ``__post_init__`` runs) and, once all overrides are
    applied, validated, deepest first: cross-field checks see the final values, and the specs
    the overrides did not touch, valid already, are not checked again.
    """
    touched: set[str] = set()
    given = frozenset(_join(root, k) for k in overrides)  # the keys a rule's error may blame
    # The top-level fields in one rebuild (a spec's __post_init__ may be costly: a sweep's
    # workload axes set several at once), unless a deeper override goes through one of them.
    top = {k: v for k, v in overrides.items() if "." not in k}
    deeper = {k.partition(".")[0] for k in overrides if "." in k}
    if len(top) > 1 and dataclasses.is_dataclass(spec) and not deeper & set(top):
        hints = _type_hints(type(spec))
        changes = {}
        for key, value in top.items():
            if key not in (_field_names(type(spec)) or ()):
                raise _no_field(spec, key, _join(root, key))
            changes[key] = _convert(value, hints[key], _join(root, key), None)
        spec = _replace(spec, changes, root)
        touched.add(root)
        overrides = {k: v for k, v in overrides.items() if "." in k}
    for key, value in overrides.items():
        full_key = _join(root, key)
        spec = _set_path(spec, key.split("."), value, full_key, type(spec), touched)
    for path in sorted(touched, key=lambda p: (-len(p.split(".")) if p else 0, p)):
        _validate_at(spec, path, root, given)
    return spec


__all__ = [
    "KeyedValueError",
    "apply_overrides",
    "check_finite",
    "field_exists",
    "find_preset",
    "from_mapping",
    "load_toml",
    "parse_set_args",
    "parse_value",
    "preset_dir",
    "preset_names",
    "project_root",
    "split_overrides",
    "to_mapping",
]
