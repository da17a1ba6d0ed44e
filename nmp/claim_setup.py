"""A paper's setup as a claim model receives it (the claims-file ``[setup]`` schema of #29).

Every claim-model function takes a keyword ``setup``: ``None`` for the kit's own defaults, or a
mapping of dotted keys to values (``{"shard.profile": "served"}``), the values the paper's
evaluated system used. :func:`resolve_setup` merges such a mapping over the model's defaults
and refuses a key the model does not know, so a typo in a claims file is an error, not a
silently ignored value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nmp.errors import NmpError


def resolve_setup(
    setup: Mapping[str, Any] | None,
    defaults: Mapping[str, Any],
    *,
    model: str,
    choices: Mapping[str, tuple[Any, ...]] | None = None,
) -> dict[str, Any]:
    """``defaults`` (key -> the kit's value) with ``setup``'s values over them.

    A key outside ``defaults`` raises an NmpError naming the key, ``model`` and the known keys;
    a value of another type than the default's (ints stand for floats) or outside ``choices``
    raises one naming the key."""
    out = dict(defaults)
    if setup is None:
        return out
    if not isinstance(setup, Mapping):
        raise NmpError(f"{model}: setup must be a table of key = value, got {setup!r}")
    unknown = sorted(set(setup) - set(defaults))
    if unknown:
        raise NmpError(
            f"{model}: unknown setup key(s) {', '.join(unknown)} (known: {', '.join(defaults)})"
        )
    for key, value in setup.items():
        default = defaults[key]
        ok = isinstance(value, type(default)) and isinstance(value, bool) == isinstance(
            default, bool
        )
        if isinstance(default, float) and not isinstance(value, bool):
            ok = isinstance(value, int | float)
            value = float(value)
        if not ok:
            raise NmpError(
                f"{model}: setup key '{key}' must be a {type(default).__name__}, got {value!r}"
            )
        allowed = (choices or {}).get(key)
        if allowed is not None and value not in allowed:
            raise NmpError(
                f"{model}: setup key '{key}' must be one of "
                f"{', '.join(map(str, allowed))}, got {value!r}"
            )
        out[key] = value
    return out


def describe_setup(values: Mapping[str, Any], setup: Mapping[str, Any] | None) -> str:
    """``"paper setup: a=1, b=x"`` or ``"kit defaults: ..."``: the values a model ran under."""
    which = "kit defaults" if setup is None else "paper setup"
    return f"{which}: " + ", ".join(f"{k}={v}" for k, v in values.items())
