"""Workload specs: the embedding tables of a DLRM, its batch, pooling and access distribution.

A workload is data (TOML in ``workloads/``), loaded into a frozen :class:`WorkloadSpec`.
Tables come in one of two forms:

* compact: ``rows`` (an int with ``num_tables``, or a list with one entry per table, as for
  Criteo's 26 cardinalities) plus a common ``dim`` and ``dtype``;
* explicit: ``[[tables]]`` entries with their own ``rows``, ``dim``, ``dtype`` (and optionally
  ``pooling``). A non-zero global ``dim`` (or a non-empty ``dtype``) then overrides every table's,
  which is how ``--set workload.dim=32`` sweeps vector length on any workload.

Either way ``spec.tables`` is the resolved tuple of :class:`TableSpec`.

Access distributions (per table, rows drawn independently with replacement) are the
registered objects of :data:`nmp.workload.distributions.DISTRIBUTIONS`, one module each in
``nmp/workload/distributions/`` (``uniform``, ``zipf``, ``pareto``, ``reuse``, ``measured``): a
spec names one in ``distribution`` and asks it, never its name, what its fields mean.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nmp.config import (
    PRESET_CATALOGS,
    KeyedValueError,
    apply_overrides,
    find_preset,
    from_mapping,
    load_toml,
    preset_names,
)
from nmp.errors import SpecError
from nmp.units import MIB
from nmp.workload.distributions import (
    DISTRIBUTIONS,
    AccessDistribution,
    distribution_params,
    takers,
)
from nmp.workload.elements import (
    DEFAULT_ELEMENT_FORMAT,
    ELEMENT_FORMATS,
    ElementFormat,
    element_bytes,
)
from nmp.workload.pooling_laws import POOLING_LAWS, PoolingLaw

ReuseLevel = Literal["", "high", "medium", "low", "random"]

# Hot-set levels for the ``reuse`` distribution: (hot rows per table, fraction of accesses to
# them). The paper's own hot-set sizes are not in the sources; the levels are defined on what one
# kernel touches (one table: batch 2048 x pooling 150 = 307,200 lookups over 500K rows of 512 B on
# gpu-micro24), chosen around the paper's pinned set of 60K rows (30.7 MB) per pre-kernel: every
# level's hot set is those 60K rows, the levels differ in the share of lookups that go to them
# (each hot row is read ~4.6 / 3.6 / 2.6 times per kernel at high / medium / low); the cold rest
# is uniform over the other 440K rows (135 MB per kernel); random: uniform over the table.
REUSE_LEVELS: dict[str, tuple[int, float]] = {
    "high": (60_000, 0.9),
    "medium": (60_000, 0.7),
    "low": (60_000, 0.5),
    "random": (0, 0.0),
}

# Zipf exponent when a spec says ``distribution = "zipf"`` without ``alpha``: chosen slightly
# above 1 so the hottest rows keep a stable share as tables grow (for alpha > 1 the head mass
# converges as rows -> infinity), the regime reported for Criteo-like categorical features.
DEFAULT_ZIPF_ALPHA = 1.05
# torchrec's Multihot: np.random.pareto(a=0.25, ...).astype(np.int32) % num_embeddings.
DEFAULT_PARETO_ALPHA = 0.25
# The largest Zipf exponent taken (alpha, hot_alpha). Chosen: at 50 the second row is drawn
# 2^-50 (1e-15) as often as the first, so every lookup already hits one row; above about 57 the
# rejection-inversion sampler's constants leave the range of a float (a math domain error).
MAX_ZIPF_ALPHA = 50.0
# The most tables a workload may have. Chosen: published DLRMs have tens to about a thousand
# tables (Criteo 26, the kit's presets at most 26; production models some hundreds), and a
# design point's per-table stages take about 12 ms a table (measured: nmp run --arch host-cpu
# on dlrm-benchmark with 500 / 1,000 / 2,000 one-lookup tables, 17 / 24 / 36 s, the LLC's
# warm-up batches drawn table by table), so 4,096 tables run in about a minute; a typo such as
# num_tables = 10000000 is refused before ten million table specs are built, 20,000 before a
# run of minutes.
MAX_TABLES = 4096


@dataclass(frozen=True)
class PoolingSpec:
    """Lookups per bag (pooling factor) drawn per sample.

    ``fixed``: every bag has ``value`` lookups. ``uniform``: an integer in [low, high].
    ``normal``: round(N(mean, std)) clipped to [low, high]. ``low`` may be 0 (empty bags are
    valid EmbeddingBag input and pool to zeros).
    """

    dist: str = "fixed"  # a pooling law (nmp.workload.pooling_laws.POOLING_LAWS)
    value: int = 1
    low: int = 1
    high: int = 1
    mean: float = 0.0
    std: float = 0.0

    @property
    def law(self) -> PoolingLaw:
        if self.dist not in POOLING_LAWS:
            raise KeyedValueError("dist", POOLING_LAWS.unknown_message(self.dist))
        return POOLING_LAWS.get(self.dist)

    def validate(self) -> None:
        self.law.check(self)

    @property
    def mean_lookups(self) -> float:
        """Expected lookups per bag."""
        return self.law.mean(self)

    def describe(self) -> str:
        return self.law.describe(self)


Pooling = int | PoolingSpec


def as_pooling(pooling: Pooling) -> PoolingSpec:
    return pooling if isinstance(pooling, PoolingSpec) else PoolingSpec("fixed", value=pooling)


@dataclass(frozen=True)
class TableSpec:
    """One embedding table: ``rows`` x ``dim`` elements of ``dtype``; ``pooling`` overrides the
    workload's pooling for this table when given."""

    rows: int
    dim: int
    dtype: str = DEFAULT_ELEMENT_FORMAT  # a name of nmp.workload.elements.ELEMENT_FORMATS
    pooling: Pooling | None = None

    def validate(self) -> None:
        if self.rows < 1:
            raise KeyedValueError("rows", "must be >= 1")
        if self.dim < 1:
            raise KeyedValueError("dim", "must be >= 1")
        if self.dtype not in ELEMENT_FORMATS:
            raise KeyedValueError("dtype", ELEMENT_FORMATS.unknown_message(self.dtype))
        if isinstance(self.pooling, int) and self.pooling < 0:
            raise KeyedValueError("pooling", "must be >= 0")

    @property
    def element(self) -> ElementFormat:
        """The registered format ``dtype`` names (what to ask instead of its name)."""
        return ELEMENT_FORMATS.get(self.dtype)

    @property
    def row_bytes(self) -> int:
        return self.dim * element_bytes(self.dtype)

    @property
    def bytes_(self) -> int:
        return self.rows * self.row_bytes


MAX_MLP_WIDTH = 2**20  # a layer wider than this is a slip (the widest DLRM layers are 1024s)


@dataclass(frozen=True)
class WorkloadSpec:
    """A DLRM embedding workload (see the module docstring for the fields' meaning)."""

    name: str
    tables: tuple[TableSpec, ...] = ()
    # Compact form: num_tables x rows (int), or one table per entry of rows (list).
    num_tables: int = 0
    rows: int | tuple[int, ...] = 0
    # Global dim/dtype: required in the compact form; in the explicit form a non-zero / non-empty
    # value overrides every table's.
    dim: int = 0
    dtype: str = ""  # "" keeps each table's; else a name of ELEMENT_FORMATS
    batch: int = 1
    pooling: Pooling = 1
    distribution: str = "uniform"  # a name of nmp.workload.distributions.DISTRIBUTIONS
    alpha: float | None = None
    reuse: ReuseLevel = ""
    hot_rows: int | None = None
    hot_fraction: float | None = None
    hot_alpha: float = 0.0
    # The measured locality (data/locality/<name>.toml) of distribution "measured"; "" = default.
    locality: str = ""
    # Scatter ranks through a seeded permutation of the table (hot rows spread over the rows).
    scatter: bool = True
    # Per-sample weights (float32 uniform in [0, 1)) as for weighted features.
    weighted: bool = False
    seed: int = 0
    description: str = ""
    # The model's MLP widths where the source gives them (after the dense inputs; after the
    # interaction, ending in 1): the all-to-all study's step (nmp.compress.study). () = unknown.
    mlp_bottom: tuple[int, ...] = ()
    mlp_top: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # Overrides rebuild the spec one field at a time, so an intermediate state may be
        # inconsistent (rows set before num_tables); validate() reports what is still wrong.
        with contextlib.suppress(KeyedValueError):
            object.__setattr__(self, "tables", self._resolve_tables())

    def _resolve_tables(self) -> tuple[TableSpec, ...]:
        rows = self.rows
        if isinstance(rows, tuple) and not rows:
            # an empty list would fall back to the tables resolved before it (--set
            # workload.rows=[] was silently ignored)
            raise KeyedValueError("rows", "must not be an empty list (one entry per table)")
        if isinstance(rows, tuple) and len(rows) > MAX_TABLES:
            raise KeyedValueError("rows", f"must have <= {MAX_TABLES:,} entries (tables)")
        compact = (isinstance(rows, tuple) and len(rows) > 0) or (isinstance(rows, int) and rows)
        if compact:
            if isinstance(rows, int):
                if self.num_tables < 1:
                    raise KeyedValueError("num_tables", "must be >= 1 when rows is one number")
                if self.num_tables > MAX_TABLES:
                    raise KeyedValueError(
                        "num_tables", f"must be <= {MAX_TABLES:,}, got {self.num_tables:,}"
                    )
                rows_list = [rows] * self.num_tables
            else:
                if self.num_tables not in (0, len(rows)):
                    raise KeyedValueError(
                        "num_tables", f"must be 0 or len(rows) = {len(rows)} when rows is a list"
                    )
                rows_list = list(rows)
            if self.dim < 1:
                raise KeyedValueError("dim", "must be >= 1 (compact form: rows + dim)")
            for i, r in enumerate(rows_list):
                if r < 1:
                    raise KeyedValueError(
                        "rows" if isinstance(rows, int) else f"rows[{i}]", "must be >= 1"
                    )
            dtype = self.dtype or DEFAULT_ELEMENT_FORMAT
            return tuple(TableSpec(int(r), self.dim, dtype) for r in rows_list)
        if not self.tables:
            raise KeyedValueError(
                "tables", "no tables: give [[tables]], or rows (+ num_tables) and dim"
            )
        if len(self.tables) > MAX_TABLES:
            raise KeyedValueError("tables", f"must be <= {MAX_TABLES:,} tables")
        if self.num_tables not in (0, len(self.tables)):
            raise KeyedValueError("num_tables", f"must be 0 or {len(self.tables)} with [[tables]]")
        tables = self.tables
        if self.dim < 0:
            raise KeyedValueError("dim", "must be >= 0")
        if self.dim:
            tables = tuple(dataclasses.replace(t, dim=self.dim) for t in tables)
        if self.dtype:
            tables = tuple(dataclasses.replace(t, dtype=self.dtype) for t in tables)
        return tables

    @property
    def compact(self) -> bool:
        return bool(self.rows)

    def validate(self) -> None:
        self._resolve_tables()
        if not self.name:
            raise KeyedValueError("name", "must not be empty")
        if self.dtype and self.dtype not in ELEMENT_FORMATS:
            raise KeyedValueError("dtype", ELEMENT_FORMATS.unknown_message(self.dtype))
        if self.batch < 1:
            raise KeyedValueError("batch", "must be >= 1")
        if isinstance(self.pooling, int) and self.pooling < 0:
            raise KeyedValueError("pooling", "must be >= 0")
        if self.seed < 0:
            raise KeyedValueError("seed", "must be >= 0")
        if self.tables and not self._some_lookups():
            # every figure is per lookup: a batch of empty bags has none to count
            raise KeyedValueError(
                "pooling", "gives no lookups: at least one table needs a pooling above 0"
            )
        for key in ("mlp_bottom", "mlp_top"):
            widths = getattr(self, key)
            if any(w < 1 or w > MAX_MLP_WIDTH for w in widths):
                raise KeyedValueError(key, f"every width must lie in 1..{MAX_MLP_WIDTH:,}")
        if self.mlp_top and self.mlp_top[-1] != 1:
            raise KeyedValueError("mlp_top", "must end in 1 (the click probability)")
        if self.distribution not in DISTRIBUTIONS:
            raise KeyedValueError("distribution", DISTRIBUTIONS.unknown_message(self.distribution))
        if self.alpha is not None and self.alpha <= 0:
            raise KeyedValueError("alpha", "must be > 0")
        if not 0 <= self.hot_alpha <= MAX_ZIPF_ALPHA:
            raise KeyedValueError("hot_alpha", f"must lie in [0, {MAX_ZIPF_ALPHA:g}]")
        if self.hot_rows is not None and self.hot_rows < 0:
            raise KeyedValueError("hot_rows", "must be >= 0")
        if self.hot_fraction is not None and not 0.0 <= self.hot_fraction <= 1.0:
            raise KeyedValueError("hot_fraction", "must lie in [0, 1]")
        for key in distribution_params():
            if not self.access.takes(key) and getattr(self, key) != _DEFAULTS[key]:
                only = " or ".join(f"'{name}'" for name in takers(key))
                raise KeyedValueError(
                    key,
                    f"applies only with distribution = {only} "
                    f"(this workload's is '{self.distribution}')",
                )
        self.access.check(self)

    def _some_lookups(self) -> bool:
        """Whether a sample looks up anything: at once where a table's pooling is a positive
        count (validate runs per sweep point: the laws' means cost 0.2 ms a spec)."""
        if any(
            isinstance(p, int) and p > 0
            for p in (self.pooling if t.pooling is None else t.pooling for t in self.tables)
        ):
            return True
        return self.lookups_per_sample > 0

    # --- derived figures -----------------------------------------------------------------

    @property
    def access(self) -> AccessDistribution:
        """The registered distribution this spec names (what to ask instead of its name)."""
        return DISTRIBUTIONS.get(self.distribution)

    @property
    def effective_alpha(self) -> float:
        """Skew parameter of zipf / pareto (defaults: 1.05 and torchrec's 0.25; the Zipf
        default on a distribution without ``alpha``)."""
        if self.alpha is not None:
            return self.alpha
        default = self.access.default_alpha
        return DEFAULT_ZIPF_ALPHA if default is None else default

    @property
    def skew_alpha(self) -> float | None:
        """The exponent of a distribution that takes ``alpha`` (zipf, pareto), else None."""
        return self.effective_alpha if self.access.takes("alpha") else None

    def hot_set(self, table: int = 0) -> tuple[int, float]:
        """(hot rows, fraction of accesses to them) of table ``table`` under ``reuse``; explicit
        ``hot_rows`` / ``hot_fraction`` win over the level's; hot rows are capped at the table."""
        level_rows, level_frac = REUSE_LEVELS.get(self.reuse, (0, 0.0))
        rows = level_rows if self.hot_rows is None else self.hot_rows
        frac = level_frac if self.hot_fraction is None else self.hot_fraction
        rows = min(rows, self.tables[table].rows)
        return rows, (frac if rows > 0 else 0.0)

    def table_pooling(self, table: int) -> PoolingSpec:
        own = self.tables[table].pooling
        return as_pooling(self.pooling if own is None else own)

    @property
    def lookups_per_sample(self) -> float:
        """Expected lookups of one sample over all tables, each at its own pooling: every
        count of lookups derives from this (and :meth:`table_pooling`), not from ``pooling``."""
        return sum(self.table_pooling(t).mean_lookups for t in range(len(self.tables)))

    @property
    def mean_pooling(self) -> float:
        """Expected lookups per bag, averaged over the tables (per-table pooling included)."""
        return self.lookups_per_sample / max(len(self.tables), 1)

    @property
    def lookups_per_batch(self) -> float:
        """Expected lookups (indices) in one batch over all tables."""
        return self.batch * self.lookups_per_sample

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)

    @property
    def bytes_(self) -> int:
        return sum(t.bytes_ for t in self.tables)

    def describe_distribution(self) -> str:
        return self.access.describe(self)


# The fields' defaults: a distribution's field at its default is not given.
_DEFAULTS: dict[str, Any] = {
    f.name: f.default
    for f in dataclasses.fields(WorkloadSpec)
    if f.default is not dataclasses.MISSING
}


# ---------------------------------------------------------------------------------------------
# loading


def workload_from_mapping(data: dict[str, Any], *, file: str | None = None) -> WorkloadSpec:
    """Build a :class:`WorkloadSpec` from a TOML table; errors name ``file`` and the key."""
    if data.get("rows") and data.get("tables"):
        raise SpecError(
            "give either [[tables]] or the compact rows/dim form, not both", file=file, key="tables"
        )
    return from_mapping(WorkloadSpec, data, file=file)


def load_workload(
    name_or_path: str | Path, overrides: dict[str, Any] | None = None
) -> WorkloadSpec:
    """Load preset ``name`` from ``workloads/`` (or a ``.toml`` path) and apply ``overrides``.

    ``overrides`` maps dotted paths relative to the workload to values: ``{"batch": 32,
    "dim": 32, "reuse": "high", "tables.0.rows": 1000}``. Conveniences: ``dim`` / ``dtype``
    set every table's; setting ``reuse``, ``hot_rows`` or ``hot_fraction`` without
    ``distribution`` switches the distribution to ``reuse``; setting ``alpha`` without
    ``distribution`` on a uniform or reuse workload switches it to ``zipf``; parameters of the
    distribution left behind (``alpha``, ``reuse``, ``hot_*``) are dropped. Override errors
    name the key as ``workload.<key>``.
    """
    path = find_preset("workload", str(name_or_path))
    # a spec is frozen: the same file (path, mtime, size) and overrides give the same one
    items = list((overrides or {}).items())
    if not all(_plain(v) for _, v in items):
        return _load_workload(path, overrides)
    try:
        st = path.stat()
    except OSError:  # missing, unreadable: load_toml says so, naming the file
        return _load_workload(path, overrides)
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size, repr(items))
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    spec = _load_workload(path, overrides)
    if len(_LOADED) >= 64:
        _LOADED.clear()
    _LOADED[key] = spec
    return spec


_LOADED: dict[tuple, WorkloadSpec] = {}  # (file, mtime, size, overrides) -> spec

# the workload keys that size its tables, in the order they are blamed
TABLE_SIZE_KEYS = ("rows", "tables", "num_tables", "dim", "dtype")


def tables_source(workload: str, overrides: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """Where a workload's tables were given, (file, key), for an error about their size: the
    ``--set workload.*`` that sized them, else the workload's file."""
    for key in TABLE_SIZE_KEYS:
        if any(k == key or k.startswith(key + ".") for k in overrides or {}):
            return None, f"workload.{key}"
    return str(find_preset("workload", workload)), None


def _plain(value: Any) -> bool:
    """Whether ``repr(value)`` identifies it (plain scalars and lists of them)."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return False


def check_table_overrides(spec: WorkloadSpec, overrides: dict[str, Any]) -> None:
    """Refuse overrides of ``tables`` that the spec's form would silently drop: any, on a
    compact-form workload (its tables are rebuilt from rows); a table's dim or dtype where a
    global one overrides every table's."""
    for key in overrides:
        if key.startswith("tables.") or key == "tables":
            if spec.compact:
                raise SpecError(
                    "this workload gives its tables in the compact form; override "
                    "workload.rows, workload.num_tables, workload.dim or workload.dtype instead",
                    key=f"workload.{key}",
                )
            field = key.split(".")[-1]
            if (field == "dim" and spec.dim and "dim" not in overrides) or (
                field == "dtype" and spec.dtype and "dtype" not in overrides
            ):
                raise SpecError(
                    f"the workload's global {field} overrides every table's; "
                    f"set workload.{field} (or workload.{field}=0/'' first)",
                    key=f"workload.{key}",
                )


def _load_workload(path: Path, overrides: dict[str, Any] | None) -> WorkloadSpec:
    data = load_toml(path)
    data.setdefault("name", path.stem)
    spec = workload_from_mapping(data, file=str(path))
    if not overrides:
        return spec
    overrides = dict(overrides)
    check_table_overrides(spec, overrides)
    if "distribution" not in overrides:
        chosen = _selected_distribution(spec, overrides)
        if chosen is not None:
            overrides["distribution"] = chosen
    dist = overrides.get("distribution", spec.distribution)
    if dist != spec.distribution:
        # switching distribution drops the fields of the old one that are not given
        for key in spec.access.params:
            if key not in overrides and getattr(spec, key) != _DEFAULTS[key]:
                overrides[key] = _DEFAULTS[key]
    return apply_overrides(spec, overrides, root="workload")


def _selected_distribution(spec: WorkloadSpec, overrides: dict[str, Any]) -> str | None:
    """The distribution that overrides without ``distribution`` select: the first (in listing
    order) that takes a field they give a value and the spec's distribution does not take."""
    given = [
        key
        for key in distribution_params()
        if key in overrides and overrides[key] != _DEFAULTS[key] and not spec.access.takes(key)
    ]
    for name, access in DISTRIBUTIONS.items():
        if any(access.takes(key) for key in given):
            return name
    return None


@PRESET_CATALOGS.register(name="workload")
def catalog_rows() -> list[dict[str, Any]]:
    """One row per workload preset, for ``nmp models``."""
    out: list[dict[str, Any]] = []
    for name in preset_names("workload"):
        try:
            spec = load_workload(name)
        except SpecError as exc:
            out.append({"name": name, "summary": f"invalid: {exc}"})
            continue
        dims = sorted({t.dim for t in spec.tables})
        dim = str(dims[0]) if len(dims) == 1 else f"{dims[0]}-{dims[-1]}"
        poolings = sorted({spec.table_pooling(t).describe() for t in range(len(spec.tables))})
        pooling = poolings[0] if len(poolings) == 1 else ",".join(poolings)
        size_mib = spec.bytes_ / MIB
        out.append(
            {
                "name": name,
                "summary": spec.description or f"{len(spec.tables)} tables",
                "tables": len(spec.tables),
                "rows_total": spec.total_rows,
                "dim": dim,
                "pooling": pooling,
                "batch": spec.batch,
                "distribution": spec.describe_distribution(),
                "size_mib": round(size_mib, 1),
            }
        )
    return out
