"""The papers' setups as data: ``workloads/train/<name>.toml`` -> :class:`DeploymentSpec`.

A setup file has ``name``, ``description``, a ``[values]`` table (the fields of
:class:`~nmp.train.extrapolate.DeploymentSpec`) and a ``[sources]`` table that names, for every
value, the paper, datasheet or the reason it was chosen. A value without a source is an error.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nmp.claim_setup import resolve_setup
from nmp.config import MAX_SPEC_NUMBER, load_toml, project_root
from nmp.errors import NmpError, SpecError
from nmp.train.deployment import DeploymentSpec


def setup_dir() -> Path:
    return project_root() / "workloads" / "train"


def setup_names() -> list[str]:
    return sorted(p.stem for p in setup_dir().glob("*.toml"))


def setup_path(name: str) -> Path:
    """The file of a setup given by name (``ecrec``) or path (``my.toml``)."""
    return Path(name) if name.endswith(".toml") else setup_dir() / f"{name}.toml"


def load_setup(name: str) -> tuple[DeploymentSpec, dict[str, str]]:
    """(spec, sources) of a setup by name or path."""
    path = setup_path(name)
    if not name.endswith(".toml") and not path.is_file():
        known = ", ".join(setup_names())
        raise NmpError(f"unknown training setup '{name}' (known: {known})")
    data = load_toml(path)  # a missing file, a pipe, a folder, deep nesting: named
    values = data.get("values")
    _check_marks(data.get("marks", []), path)
    sources = data.get("sources", {})
    if not isinstance(values, dict):
        raise SpecError("missing [values] table", file=str(path))
    fields = {f.name: f for f in dataclasses.fields(DeploymentSpec)}
    kw: dict[str, Any] = {"name": str(data.get("name", path.stem))}
    for key, value in values.items():
        if key not in fields or key == "name":
            raise SpecError(f"unknown key values.{key}", file=str(path))
        if key not in sources:
            raise SpecError(f"values.{key} has no entry in [sources]", file=str(path))
        default: Any = fields[key].default
        if isinstance(default, tuple):
            elem = type(default[0]) if default else float  # (): interval_min, minutes
            if not isinstance(value, list) or not all(
                isinstance(v, elem | int) and not isinstance(v, bool) for v in value
            ):
                raise SpecError(
                    f"values.{key} must be a list of {elem.__name__}s, got {value!r}",
                    file=str(path),
                )
            value = tuple(elem(v) for v in value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise SpecError(
                    f"values.{key} must be true or false, got {value!r}", file=str(path)
                )
        elif isinstance(value, bool) or not isinstance(value, type(default) | int):
            raise SpecError(
                f"values.{key} must be {type(default).__name__}, got {value!r}", file=str(path)
            )
        elif isinstance(default, float):
            value = float(value)
        for number in value if isinstance(value, tuple) else (value,):  # as every spec's
            if isinstance(number, int | float) and abs(number) > MAX_SPEC_NUMBER:
                raise SpecError(
                    f"must lie within +-1e18 (no quantity the kit models is larger), got "
                    f"{number:.3g}",
                    file=str(path),
                    key=f"values.{key}",
                )
        kw[key] = value
    spec = DeploymentSpec(**kw)
    try:
        spec.validate()
    except NmpError as exc:  # named at this file's key
        key = f"values.{exc.key}" if exc.key else None
        raise SpecError(exc.message, file=str(path), key=key) from None
    return spec, {k: str(v) for k, v in sources.items()}


MARK_KEYS = ("parameter", "label", "value", "source")


def _check_marks(marks, path: Path) -> list[dict]:
    if not isinstance(marks, list):
        raise SpecError("marks must be an array of tables", file=str(path))
    for i, m in enumerate(marks):
        if not isinstance(m, dict) or set(m) != set(MARK_KEYS):
            raise SpecError(f"marks[{i}] needs exactly {', '.join(MARK_KEYS)}", file=str(path))
        v = m["value"]
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise SpecError(f"marks[{i}].value must be a number > 0", file=str(path))
    return marks


def load_marks(name: str) -> list[dict]:
    """The setup's marks: configurations its source names, drawn on the crossover plot."""
    load_setup(name)  # the same checks and errors
    path = Path(name) if name.endswith(".toml") else setup_dir() / f"{name}.toml"
    return _check_marks(load_toml(path).get("marks", []), path)


@functools.cache
def claim_setup_defaults() -> dict[str, Any]:
    """The setup keys a training claim takes: ``train.deployment`` (``"default"``: the kit's own
    :class:`~nmp.train.extrapolate.DeploymentSpec`, what ``nmp train --extrapolate`` runs
    without ``--setup``; or a file of ``workloads/train/``) and ``train.<field>`` for any field
    of the deployment over it."""
    fields = {f.name: f.default for f in dataclasses.fields(DeploymentSpec) if f.name != "name"}
    return {"train.deployment": "default", **{f"train.{k}": v for k, v in fields.items()}}


def deployment_of(setup: Mapping[str, Any] | None, model: str) -> DeploymentSpec:
    """The deployment a training claim's setup names (None: the kit's default deployment): its
    base (``train.deployment``) with the given fields over it; errors name ``model``."""
    defaults = claim_setup_defaults()
    given = dict(setup or {})
    for key, value in list(given.items()):  # TOML has no tuples
        if isinstance(value, list) and isinstance(defaults.get(key), tuple):
            given[key] = tuple(value)
    v = resolve_setup(given if setup is not None else None, defaults, model=model)
    name = v.pop("train.deployment")
    base = DeploymentSpec() if name == "default" else load_setup(name)[0]
    over = {k.removeprefix("train."): v[k] for k in given if k != "train.deployment"}
    dep = dataclasses.replace(base, **over)
    try:
        dep.validate()
    except NmpError as exc:  # named at the claim's setup key
        raise NmpError(exc.message, key=f"train.{exc.key}" if exc.key else None) from None
    return dep
