"""Sweep files: which designs, memories and workloads to cross, over which spec fields.

A sweep file is TOML (see ``workloads/sweeps/default.toml``)::

    name = "batch-size"
    workloads = ["recross-eval"]
    archs = ["host-cpu", "recnmp", "recross"]     # designs that are plain presets
    memories = []                                 # memory presets to cross; [] = each arch's own
    baseline = "host-cpu"                         # speedup and energy saving are over this design
    sampling = "grid"                             # or "random" / "latin-hypercube" with
                                                  # samples = N and seed (nmp.evaluate.samplers)
    objectives = { lookups_per_s = "max", energy_pj_per_lookup = "min", area_mm2 = "min" }
    explain = "all"                               # or "best", "none" (default): points re-run
                                                  # under their key assumptions for the report

    [axes]                                        # crossed with every design
    workload.batch = [1, 32, 128]

    [[designs]]                                   # a named preset + fixed overrides (+ own axes)
    name = "recross-no-salp"
    arch = "recross"
    set = { "arch.subarray_parallelism" = false }
    axes = { "arch.replicate_hot_rows" = [0, 1024] }

An axis is a dotted path rooted at ``arch``, ``workload`` or ``memory`` (``arch.bank.units``);
TOML's dotted keys (``workload.batch = [...]``) and quoted keys (``"workload.batch" = [...]``)
are the same thing here. This module checks the file's own structure and expands it into
:class:`Point` s; :mod:`nmp.evaluate.sweepcheck` checks it against the presets.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nmp.config import KeyedValueError, from_mapping, load_toml, project_root
from nmp.errors import NmpError, SpecError
from nmp.evaluate.metrics import METRICS  # objectives: each field's better direction
from nmp.evaluate.samplers import SAMPLERS, GridShape, Sampler, check_sampling

ROOTS = ("arch", "workload", "memory")

DEFAULT_OBJECTIVES = {m: METRICS[m] for m in ("lookups_per_s", "energy_pj_per_lookup", "area_mm2")}


@dataclass(frozen=True)
class DesignSpec:
    """A design of the sweep: an architecture preset with fixed overrides and its own axes."""

    arch: str
    name: str = ""
    memory: str = ""  # "" = cross the sweep's memories (or the arch's own memory)
    set: dict[str, Any] = field(default_factory=dict)
    axes: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name or self.arch


MAX_NAME_CHARS = 128  # a sweep's name, its run folders' stem


@dataclass(frozen=True)
class SweepSpec:
    """A sweep file, as loaded (axes flattened to dotted paths, designs merged)."""

    name: str
    workloads: tuple[str, ...]
    archs: tuple[str, ...] = ()
    designs: tuple[DesignSpec, ...] = ()
    memories: tuple[str, ...] = ()
    baseline: str = ""
    axes: dict[str, Any] = field(default_factory=dict)
    sampling: str = "grid"  # a registered sampler (nmp.evaluate.samplers)
    samples: int = 0
    seed: int = 0
    # Which points the report explains by re-running them under their design's key
    # assumptions (nmp.evaluate.explain): "all", "best" (the best of each objective per
    # workload, and the baseline), "none" (chosen default: a study's run time stays its own;
    # the default sweep says "all"). Every point gets its binding resource either way.
    explain: Literal["all", "best", "none"] = "none"
    lookup_seed: int | None = None
    objectives: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_OBJECTIVES))
    description: str = ""
    # a skew scan whose crossovers the report gives (nmp.evaluate.locality); {} = none
    locality_scan: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if not 0 < len(self.name) <= MAX_NAME_CHARS:
            # it names the run's folder (with a time stamp): a file name holds 255 bytes
            raise KeyedValueError(
                "name", f"must be 1..{MAX_NAME_CHARS} characters, got {len(self.name):,}"
            )
        if not self.workloads:
            raise KeyedValueError("workloads", "must name at least one workload")
        if not self.archs and not self.designs:
            raise KeyedValueError("archs", "the sweep names no design (archs or [[designs]])")
        for key, value in self.objectives.items():
            if key not in METRICS:
                raise KeyedValueError(
                    f"objectives.{key}", f"unknown metric (known: {', '.join(METRICS)})"
                )
            if value not in ("max", "min"):
                raise KeyedValueError(f"objectives.{key}", f"must be 'max' or 'min', got {value!r}")
        if not self.objectives:
            raise KeyedValueError("objectives", "must name at least one metric")
        check_sampling(self.sampling, self.samples)
        # numpy's generators take 0..2^63-1: seed = -1 was an internal ValueError
        for key in ("seed", "lookup_seed"):
            value = getattr(self, key)
            if value is not None and not 0 <= value < 2**63:
                raise KeyedValueError(key, f"must be an integer in [0, 2^63), got {value}")

    @property
    def sampler(self) -> Sampler:
        return SAMPLERS.get(self.sampling)

    @property
    def all_designs(self) -> tuple[DesignSpec, ...]:
        return tuple(DesignSpec(arch=a) for a in self.archs) + self.designs

    @property
    def baseline_label(self) -> str:
        return self.baseline or self.all_designs[0].label


@dataclass(frozen=True)
class Point:
    """One design point of a sweep, before it is resolved against the presets."""

    index: int
    design: str
    arch: str
    workload: str
    memory: str | None
    overrides: dict[str, Any]
    axes: dict[str, Any]  # the sweep-wide axis values of this point
    design_axes: dict[str, Any]  # the design's own axis values
    seed: int | None = None
    # Expected relative cost (set by validation: lookups per batch); the runner starts the
    # costliest points first so that workers finish together. Not part of the configuration.
    weight: float = field(default=1.0, compare=False)

    def label(self) -> str:
        values = {**self.axes, **self.design_axes}
        inner = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in values.items())
        mem = f" @{self.memory}" if self.memory else ""
        return f"{self.design}{mem}" + (f" [{inner}]" if inner else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "design": self.design,
            "arch": self.arch,
            "workload": self.workload,
            "memory": self.memory,
            "overrides": self.overrides,
            "axes": self.axes,
            "design_axes": self.design_axes,
            "seed": self.seed,
        }


# ---------------------------------------------------------------------------------------------
# loading


def find_sweep(name_or_path: str | Path) -> Path:
    """A sweep file by path, or by name in ``workloads/sweeps/``."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.exists() and not path.is_symlink():
            raise SpecError("no such sweep file", file=str(path))
        return path  # a folder, a pipe, a device: load_toml says which, without blocking
    return _find_named(str(name_or_path))


def _find_named(name: str) -> Path:
    folder = project_root() / "workloads" / "sweeps"
    path = folder / f"{name}.toml"
    if path.is_file():
        return path
    known = (
        ", ".join(
            sorted(str(p.relative_to(folder).with_suffix("")) for p in folder.rglob("*.toml"))
        )
        or "none"
    )
    raise SpecError(f"unknown sweep '{name}' (known: {known})")


def load_sweep(name_or_path: str | Path) -> tuple[SweepSpec, Path]:
    """Parse and structurally check a sweep file; returns the spec and its path."""
    path = find_sweep(name_or_path)
    return parse_sweep(load_toml(path), file=str(path)), path


def parse_sweep(data: dict[str, Any], *, file: str | None = None) -> SweepSpec:
    data = dict(data)
    data.setdefault("name", Path(file).stem if file else "sweep")
    axes = _flatten_axes(data.get("axes", {}), "axes", file)
    data["axes"] = axes
    designs = []
    for i, d in enumerate(data.get("designs", []) or []):
        if not isinstance(d, dict):
            raise SpecError("must be a table", file=file, key=f"designs[{i}]")
        d = dict(d)
        if "set" in d:
            d["set"] = _flatten(d["set"], f"designs[{i}].set", file)
            for key in d["set"]:
                _check_root(key, f"designs[{i}].set.{key}", file)
        if "axes" in d:
            d["axes"] = _flatten_axes(d["axes"], f"designs[{i}].axes", file)
        designs.append(d)
    if designs:
        data["designs"] = designs
    spec = from_mapping(SweepSpec, data, file=file)
    _check_labels(spec, file)
    _check_locality_scan(spec, file)
    return spec


def _check_locality_scan(spec: SweepSpec, file: str | None) -> None:
    from nmp.errors import NmpError
    from nmp.evaluate.locality import check_sweep_scan  # on use (start-up time)

    try:
        check_sweep_scan(spec)
    except SpecError:
        raise
    except NmpError as exc:
        raise SpecError(exc.message, file=file) from None


def _flatten(table: Any, prefix: str, file: str | None) -> dict[str, Any]:
    """``{"arch": {"bank": {"units": 8}}}`` -> ``{"arch.bank.units": 8}``."""
    if not isinstance(table, dict):
        raise SpecError("must be a table", file=file, key=prefix)
    out: dict[str, Any] = {}

    def walk(node: dict[str, Any], path: str) -> None:
        for key, value in node.items():
            sub = f"{path}.{key}" if path else key
            if isinstance(value, dict):
                walk(value, sub)
            else:
                out[sub] = value

    walk(table, "")
    return out


def _flatten_axes(table: Any, prefix: str, file: str | None) -> dict[str, list[Any]]:
    """Axes by dotted path; a *linked* axis (a name, not a path, whose values are tables of
    dotted paths) sets several fields together at each step."""
    flat = _flatten(table, prefix, file)
    out: dict[str, list[Any]] = {}
    for key, values in flat.items():
        full = f"{prefix}.{key}"
        if not isinstance(values, list):
            raise SpecError(
                f"an axis must be an array of values, got {values!r}", file=file, key=full
            )
        if not values:
            raise SpecError("empty axis: give at least one value", file=file, key=full)
        if key.partition(".")[0] not in ROOTS and all(isinstance(v, dict) for v in values):
            values = [_flatten(v, f"{full}[{i}]", file) for i, v in enumerate(values)]
            for i, v in enumerate(values):
                if not v:
                    raise SpecError("empty table in a linked axis", file=file, key=f"{full}[{i}]")
                for path in v:
                    _check_root(path, f"{full}[{i}].{path}", file)
                if set(v) != set(values[0]):
                    raise SpecError(
                        f"every step of a linked axis must set the same fields "
                        f"({', '.join(values[0])})",
                        file=file,
                        key=f"{full}[{i}]",
                    )
        else:
            _check_root(key, full, file)
        # (a set where values hash: a list scanned per value took 3.5 s for 20,000 values)
        seen: set[Any] = set()
        seen_tables: list[Any] = []
        for v in values:
            try:
                duplicate = v in seen
                seen.add(v)
            except TypeError:  # a linked axis's tables, a list value
                duplicate = v in seen_tables
                seen_tables.append(v)
            if duplicate:
                raise SpecError(f"duplicate value {v!r} in axis", file=file, key=full)
        out[key] = values
    return out


def is_linked(values: list[Any]) -> bool:
    return bool(values) and all(isinstance(v, dict) for v in values)


def axis_assignments(key: str, values: list[Any]) -> list[dict[str, Any]]:
    """Each step of an axis as {dotted path: value}."""
    return [dict(v) for v in values] if is_linked(values) else [{key: v} for v in values]


def axis_paths(key: str, values: list[Any]) -> list[tuple[str, str]]:
    """(sweep-file key suffix, dotted field path) of every field an axis sets."""
    if is_linked(values):
        return [(f"{key}[0].{path}", path) for path in values[0]]
    return [(key, key)]


def _check_root(key: str, full: str, file: str | None) -> None:
    root, _, rest = key.partition(".")
    if root not in ROOTS or not rest:
        raise SpecError(
            f"field path must start with one of {', '.join(r + '.' for r in ROOTS)}",
            file=file,
            key=full,
        )


def _check_labels(spec: SweepSpec, file: str | None) -> None:
    seen: dict[str, str] = {}
    keys = [f"archs[{i}]" for i in range(len(spec.archs))]
    keys += [f"designs[{i}]" for i in range(len(spec.designs))]
    for key, design in zip(keys, spec.all_designs, strict=True):
        if design.label in seen:
            raise SpecError(
                f"design '{design.label}' appears twice (also {seen[design.label]}); "
                "give [[designs]] distinct names",
                file=file,
                key=key,
            )
        seen[design.label] = key
        sweep_paths = {p for k, v in spec.axes.items() for _, p in axis_paths(k, v)}
        for axis, values in design.axes.items():
            for suffix, path in axis_paths(axis, values):
                if path in sweep_paths:
                    raise SpecError(
                        f"'{path}' is also set by a sweep-wide axis",
                        file=file,
                        key=f"{key}.axes.{suffix}",
                    )
    if spec.baseline and spec.baseline not in seen:
        raise SpecError(
            f"baseline '{spec.baseline}' is not a design of the sweep (designs: {', '.join(seen)})",
            file=file,
            key="baseline",
        )


# ---------------------------------------------------------------------------------------------
# expansion


@dataclass(frozen=True)
class _Block:
    """All points of one (design, memory, workload): the product of its axes."""

    design: DesignSpec
    memory: str | None
    workload: str
    axis_keys: tuple[str, ...]
    axis_values: tuple[tuple[dict[str, Any], ...], ...]  # each step as {path: value}
    n_global: int  # the first n_global axes are sweep-wide, the rest the design's own

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.axis_values)

    def point(self, index: int, offset: int, seed: int | None) -> Point:
        """The ``offset``-th combination (mixed radix, last axis fastest)."""
        picks = []
        for values in reversed(self.axis_values):
            offset, digit = divmod(offset, len(values))
            picks.append(values[digit])
        picks.reverse()
        glob: dict[str, Any] = {}
        own: dict[str, Any] = {}
        for i, pick in enumerate(picks):
            (glob if i < self.n_global else own).update(pick)
        overrides = {**self.design.set, **glob, **own}
        return Point(
            index=index,
            design=self.design.label,
            arch=self.design.arch,
            workload=self.workload,
            memory=self.memory,
            overrides=overrides,
            axes=glob,
            design_axes=own,
            seed=seed,
        )


def _blocks(spec: SweepSpec, own_memory: Callable[[str], bool] | None = None) -> list[_Block]:
    blocks = []
    design_keys = [f"archs[{i}]" for i in range(len(spec.archs))]
    design_keys += [f"designs[{i}].arch" for i in range(len(spec.designs))]
    for design_key, design in zip(design_keys, spec.all_designs, strict=True):
        memories: list[str | None]
        try:
            owns = not design.memory and own_memory is not None and own_memory(design.arch)
        except NmpError as exc:  # an unknown architecture: named at its key in the sweep
            raise SpecError(exc.message, file=exc.file, key=design_key) from None
        if design.memory:
            memories = [design.memory]
        elif owns:
            memories = [None]  # a GPU: its HBM is part of its preset, not crossed
        else:
            memories = list(spec.memories) or [None]
        keys = tuple(spec.axes) + tuple(design.axes)
        values = tuple(
            tuple(axis_assignments(k, v))
            for k, v in list(spec.axes.items()) + list(design.axes.items())
        )
        for memory, workload in itertools.product(memories, spec.workloads):
            blocks.append(_Block(design, memory, workload, keys, values, len(spec.axes)))
    return blocks


def grid_size(spec: SweepSpec, own_memory: Callable[[str], bool] | None = None) -> int:
    return sum(b.size for b in _blocks(spec, own_memory))


def expand(spec: SweepSpec, own_memory: Callable[[str], bool] | None = None) -> list[Point]:
    """The points of the sweep, in a deterministic order.

    Grid: every combination, design by design (then memory, workload, axes with the last axis
    fastest). A sampler that takes ``samples`` (``random``, ``latin-hypercube``:
    :mod:`nmp.evaluate.samplers`) picks that many distinct combinations of that grid with
    ``seed``, in grid order, plus the baseline point of every drawn context (same workload,
    memory and sweep-wide axis values) so that each point has a speedup.

    ``own_memory(arch)`` says whether a design's memory is part of its preset (a GPU's HBM):
    such a design is not crossed with the sweep's ``memories``.
    """
    blocks = _blocks(spec, own_memory)
    shape = GridShape(tuple(tuple(len(v) for v in b.axis_values) for b in blocks))
    sampler = spec.sampler
    flat: Sequence[int] = sampler.pick(shape, spec.samples, spec.seed)
    # Python integers: a sampled grid may hold more than 2^63 points (ten axes of 100 values)
    starts = list(itertools.accumulate(shape.sizes, initial=0))
    points: list[Point] = []
    for flat_index in flat:
        b = bisect.bisect_right(starts, flat_index) - 1
        points.append(blocks[b].point(len(points), flat_index - starts[b], spec.lookup_seed))
    if sampler.takes_samples:
        points = _add_baselines(spec, blocks, points)
    return points


def _context(point: Point) -> tuple[str, str | None, str]:
    return point.workload, point.memory, repr(sorted(point.axes.items()))


def _add_baselines(spec: SweepSpec, blocks: list[_Block], points: list[Point]) -> list[Point]:
    base = spec.baseline_label
    have = {_context(p) for p in points if p.design == base and _first_own(p, blocks)}
    out = list(points)
    for p in points:
        ctx = _context(p)
        if ctx in have:
            continue
        block = next(
            (
                b
                for b in blocks
                if b.design.label == base and b.workload == p.workload and b.memory == p.memory
            ),
            None,
        )
        if block is None:  # the baseline has a fixed memory of its own: match on the rest
            block = next(b for b in blocks if b.design.label == base and b.workload == p.workload)
        offset = _offset_of(block, p.axes)
        out.append(block.point(len(out), offset, spec.lookup_seed))
        have.add(ctx)
    return out


def _first_own(point: Point, blocks: list[_Block]) -> bool:
    """Whether the point takes the first value of each of its design's own axes (the one a
    baseline counterpart uses)."""
    block = next(b for b in blocks if b.design.label == point.design)
    own_first: dict[str, Any] = {}
    for values in block.axis_values[block.n_global :]:
        own_first.update(values[0])
    return point.design_axes == own_first


def _offset_of(block: _Block, glob: dict[str, Any]) -> int:
    offset = 0
    for i, values in enumerate(block.axis_values):
        digit = 0
        if i < block.n_global:
            digit = next(j for j, v in enumerate(values) if all(glob[k] == x for k, x in v.items()))
        offset = offset * len(values) + digit
    return offset
