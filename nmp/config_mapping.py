"""dict -> frozen dataclass and back: :func:`from_mapping` checks each key's name and type, and
runs the dataclass's ``validate``; :func:`to_mapping` is its inverse.

Building a spec from a table is apart from reading the file (:mod:`nmp.config_toml`) and from
changing a built spec (:mod:`nmp.config_overrides`, which reuses the conversion and the
per-class caches kept here). Split from :mod:`nmp.config`, which re-exports the public names:
code imports them from there.
"""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from nmp.config_toml import _join
from nmp.errors import SpecError
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
