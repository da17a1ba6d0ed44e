"""``--set key=value`` overrides by dotted path: each value read as TOML reads it, the keys
grouped by root, and a spec rebuilt with them and validated again.

Changing a spec already built is apart from building it (:mod:`nmp.config_mapping`, whose
conversion and checks it reuses). Split from :mod:`nmp.config`, which re-exports the public
names: code imports them from there.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, get_args, get_origin

from nmp.config_mapping import KeyedValueError, _convert, _field_names, _type_hints
from nmp.config_toml import _LONG_NUMBER, MAX_TOML_DEPTH, _join, check_depth, check_finite
from nmp.errors import SpecError

T = TypeVar("T")


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
