"""Measured locality: published reuse histograms and the popularity classes fitted to them.

A reuse histogram (``data/locality/<name>.toml``, each file citing its source) says, for one
measured batch, which share of the lookups touch rows looked up 1, 2, 3-4, 5-8, ... times in
that batch, and which share of the distinct rows fall in each bin. It is the measurement; the
generator needs a *popularity*: how likely each row is per lookup.

The fit (:func:`fit_classes`): a table's rows fall into classes j, each row of class j expected
``reuse[j]`` times in the measured batch (lambda_j on a half-octave grid, 2^-4 .. 2^17) and the
class taking a share ``share[j]`` of the lookups. With lookups drawn independently, a row's
count in the batch is Poisson(lambda_j), so both histograms are linear in the shares:

* a lookup of class j lands in count bin B with P(1 + Poisson(lambda_j) in B) (the other
  lookups of its row are Poisson; k P(k) / lambda = P(k - 1));
* class j holds ``share[j] x N / lambda_j`` rows (N: lookups per table in the batch), of which
  P(Poisson(lambda_j) in B) have a count in bin B; over the batch's ``unique_rows`` (N / mean
  reuse) that is ``mean_reuse x share[j] x P(Poisson(lambda_j) in B) / lambda_j``.

Non-negative least squares on both histograms at once (the shares summing to 1) gives the
classes; the fit reproduces the 2022 histograms to the published rounding (0.001). The classes
are scale-free as probabilities per lookup (lambda_j / N), which is how they transfer to a table
of another size and a batch of another size (:func:`table_layout`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmp.config import load_toml, project_root
from nmp.errors import SpecError

#: The locality a ``distribution = "measured"`` workload uses when it names none.
DEFAULT_LOCALITY = "meta-2022"

# The fit's grid of expected reuse per row in the measured batch: half octaves from 1/16 (rows
# almost never seen twice) to 2^17 (one row taking 7 % of its table's 1.78M lookups). chosen:
# a finer grid does not improve the fit (already at the histograms' rounding); the top is the
# open bin's (32768+) reach, capped so that no class is a fraction of one row.
REUSE_GRID = 2.0 ** (np.arange(-8, 35) / 2.0)

# Classes expected fewer times than this per measured batch form the *cold tail*, spread over
# every row of a table that the hotter classes leave (chosen: the histograms cannot tell a row
# expected 0.25 times from one expected 0.001 times, both are seen once; a table's own size then
# decides how thin the tail is).
COLD_REUSE = 1.0


@dataclass(frozen=True)
class ReuseHistogram:
    """A published reuse histogram (see the module docstring); shares per bin, the last bin
    open above ``upper[-1]``."""

    name: str
    description: str
    source: str
    batch_samples: int
    tables: int
    indices: int
    unique_rows: int
    lookup_upper: tuple[int, ...]
    lookup_share: tuple[float, ...]
    unique_upper: tuple[int, ...]
    unique_share: tuple[float, ...]

    @property
    def lookups_per_table(self) -> float:
        """N: lookups of one (average) table in the measured batch."""
        return self.indices / self.tables

    @property
    def mean_reuse(self) -> float:
        return self.indices / self.unique_rows


def locality_dir() -> Path:
    return project_root() / "data" / "locality"


def locality_names() -> list[str]:
    """The measured localities in ``data/locality/`` (file stems)."""
    folder = locality_dir()
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def _bins(data: Any, key: str, file: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    if not isinstance(data, dict):
        raise SpecError("must be a table with upper and share", file=file, key=key)
    upper, share = data.get("upper"), data.get("share")
    if not isinstance(upper, list) or not upper or not all(isinstance(u, int) for u in upper):
        raise SpecError("must be a non-empty list of integers", file=file, key=f"{key}.upper")
    if any(b <= a for a, b in zip(upper, upper[1:], strict=False)) or upper[0] < 1:
        raise SpecError("must be >= 1 and increasing", file=file, key=f"{key}.upper")
    if not isinstance(share, list) or len(share) != len(upper) + 1:
        raise SpecError(
            f"must have len(upper) + 1 = {len(upper) + 1} entries (the last bin is open)",
            file=file,
            key=f"{key}.share",
        )
    if not all(isinstance(s, int | float) and s >= 0 for s in share):
        raise SpecError("must be numbers >= 0", file=file, key=f"{key}.share")
    if abs(sum(share) - 1.0) > 0.01:
        raise SpecError(
            f"must sum to 1 (within 0.01), sums to {sum(share):.4f}", file=file, key=f"{key}.share"
        )
    return tuple(upper), tuple(float(s) for s in share)


@functools.lru_cache(maxsize=16)
def load_histogram(name: str) -> ReuseHistogram:
    """The reuse histogram ``data/locality/<name>.toml``; errors name the file and key."""
    path = locality_dir() / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(locality_names()) or "none"
        raise SpecError(f"unknown measured locality '{name}' (known: {known})", key="locality")
    file = str(path)
    data = load_toml(path)
    counts = {}
    for key in ("batch_samples", "tables", "indices", "unique_rows"):
        value = data.get(key)
        if not isinstance(value, int) or value < 1:
            raise SpecError("must be an integer >= 1", file=file, key=key)
        counts[key] = value
    if counts["unique_rows"] > counts["indices"]:
        raise SpecError("cannot exceed indices", file=file, key="unique_rows")
    lookup_upper, lookup_share = _bins(data.get("lookups_by_reuse"), "lookups_by_reuse", file)
    unique_upper, unique_share = _bins(data.get("rows_by_reuse"), "rows_by_reuse", file)
    for key in ("source", "description"):
        if not isinstance(data.get(key, ""), str):
            raise SpecError("must be a string", file=file, key=key)
    if not data.get("source"):
        raise SpecError("a measured locality must cite its source", file=file, key="source")
    return ReuseHistogram(
        name=str(data.get("name") or name),
        description=str(data.get("description", "")),
        source=str(data["source"]),
        lookup_upper=lookup_upper,
        lookup_share=lookup_share,
        unique_upper=unique_upper,
        unique_share=unique_share,
        **counts,
    )


# --- the fit ---------------------------------------------------------------------------------


def _bin_edges(upper: tuple[int, ...]) -> list[tuple[int, float]]:
    """(first count, last count) of every bin: (0, u0] -> (1, u0), ..., open -> (u[-1]+1, inf)."""
    lows = [1, *(u + 1 for u in upper)]
    highs = [*(float(u) for u in upper), math.inf]
    return list(zip(lows, highs, strict=True))


def _poisson_in(lam: np.ndarray, lo: int, hi: float, shift: int) -> np.ndarray:
    """P(shift + Poisson(lam) in [lo, hi]) for every lam."""
    from scipy.stats import poisson  # scipy: loaded on use (start-up time)

    top = np.ones_like(lam) if math.isinf(hi) else poisson.cdf(hi - shift, lam)
    return top - poisson.cdf(lo - shift - 1, lam)


def _design(hist: ReuseHistogram, reuse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The linear map from class shares to (lookup histogram, unique-row histogram)."""
    lookups = np.array([_poisson_in(reuse, lo, hi, 1) for lo, hi in _bin_edges(hist.lookup_upper)])
    unique = np.array(
        [
            hist.mean_reuse * _poisson_in(reuse, lo, hi, 0) / reuse
            for lo, hi in _bin_edges(hist.unique_upper)
        ]
    )
    return lookups, unique


@dataclass(frozen=True, eq=False)
class PopularityClasses:
    """Rows of a table in classes, hottest first: class j's rows are each expected
    ``reuse[j]`` times among ``lookups_per_table`` lookups and take ``share[j]`` of them."""

    name: str
    reuse: np.ndarray
    share: np.ndarray
    lookups_per_table: float

    @property
    def rows(self) -> np.ndarray:
        """Rows of each class (real: a class may hold part of a row)."""
        return self.share * self.lookups_per_table / self.reuse

    @property
    def probability(self) -> np.ndarray:
        """Per-lookup probability of one row of each class, within its table."""
        return self.reuse / self.lookups_per_table


@functools.lru_cache(maxsize=16)
def fit_classes(name: str) -> PopularityClasses:
    """The popularity classes of measured locality ``name`` (see the module docstring):
    calibrated against both of its published histograms, nothing else."""
    from scipy.optimize import nnls  # scipy: loaded on use (start-up time)

    hist = load_histogram(name)
    lookups, unique = _design(hist, REUSE_GRID)
    # the shares sum to 1: a heavily weighted row (chosen weight: 100 makes it exact to 1e-6)
    a = np.vstack([lookups, unique, 100.0 * np.ones(REUSE_GRID.size)])
    b = np.concatenate([hist.lookup_share, hist.unique_share, [100.0]])
    share, _ = nnls(a, b)
    keep = share > 1e-6
    order = np.argsort(-REUSE_GRID[keep], kind="stable")
    reuse = REUSE_GRID[keep][order]
    share = share[keep][order]
    share = share / share.sum()
    reuse.setflags(write=False)
    share.setflags(write=False)
    return PopularityClasses(hist.name, reuse, share, hist.lookups_per_table)


def expected_histograms(
    classes: PopularityClasses, hist: ReuseHistogram
) -> tuple[np.ndarray, np.ndarray]:
    """The (lookup, unique-row) histograms the classes predict for ``hist``'s batch."""
    lookups, unique = _design(hist, classes.reuse)
    return lookups @ classes.share, unique @ classes.share


# --- one table -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TableLayout:
    """The classes laid out on one table's ranks (0 hottest): class j covers the real rank
    interval [start[j], start[j] + rows[j]) and takes ``cum[j] - cum[j - 1]`` of the lookups."""

    start: np.ndarray
    rows: np.ndarray
    cum: np.ndarray

    def ranks(self, u01: np.ndarray, table_rows: int) -> np.ndarray:
        """The rank of each lookup drawn from uniforms ``u01``: the class whose share holds it,
        then the position within the class's ranks (the same uniform, rescaled)."""
        j = np.minimum(np.searchsorted(self.cum, u01, side="right"), self.cum.size - 1)
        prev = np.where(j > 0, self.cum[np.maximum(j - 1, 0)], 0.0)
        width = self.cum[j] - prev
        frac = np.where(width > 0, (u01 - prev) / np.where(width > 0, width, 1.0), 0.0)
        rank = np.floor(self.start[j] + frac * self.rows[j]).astype(np.int64)
        return np.clip(rank, 0, table_rows - 1)

    def head_mass(self, k: int) -> float:
        """Share of the lookups that go to ranks 0..k-1."""
        prev = np.concatenate([[0.0], self.cum[:-1]])
        share = self.cum - prev
        inside = np.clip((k - self.start) / np.where(self.rows > 0, self.rows, 1.0), 0.0, 1.0)
        return float((share * inside).sum())


@functools.lru_cache(maxsize=256)
def table_layout(name: str, table_rows: int) -> TableLayout:
    """Classes of locality ``name`` on a table of ``table_rows`` rows.

    The hot classes (expected at least :data:`COLD_REUSE` times per measured batch) keep their
    per-lookup probability and take the hottest ranks; the cold tail's share is spread evenly
    over the rest of the table. A table too small for the hot classes keeps the hottest ones
    that fit (the last one cut at the table's end) and the shares are renormalized: its rows
    are then all hot, as a small table's are."""
    classes = fit_classes(name)
    hot = classes.reuse >= COLD_REUSE
    rows = classes.rows[hot]
    share = classes.share[hot]
    start = np.concatenate([[0.0], np.cumsum(rows)[:-1]])
    end = start + rows
    rows_total = float(table_rows)
    kept = np.clip((rows_total - start) / rows, 0.0, 1.0)
    share = share * kept
    rows = rows * kept
    cold_rows = rows_total - float(end[-1]) if end.size else rows_total
    if cold_rows > 0:
        start = np.append(start, end[-1] if end.size else 0.0)
        rows = np.append(rows, cold_rows)
        share = np.append(share, classes.share[~hot].sum())
    total = share.sum()
    cum = np.cumsum(share / total) if total > 0 else np.linspace(1.0, 1.0, share.size)
    cum[-1] = 1.0
    for a in (start, rows, cum):
        a.setflags(write=False)
    return TableLayout(start, rows, cum)


# --- reuse histograms of drawn lookups --------------------------------------------------------


def reuse_histogram(
    counts: np.ndarray, lookup_upper: tuple[int, ...], unique_upper: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """(lookup share, unique-row share) by reuse bin of the per-row ``counts`` of one batch (the
    counts of the rows it touched), binned as a published histogram."""
    counts = np.asarray(counts, dtype=np.int64)
    counts = counts[counts > 0]
    total = float(counts.sum())

    def binned(upper: tuple[int, ...], weights: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(np.asarray(upper), counts, side="left")
        out = np.bincount(idx, weights=weights, minlength=len(upper) + 1).astype(np.float64)
        return out / max(float(weights.sum()), 1.0)

    lookups = (
        binned(lookup_upper, counts.astype(np.float64))
        if total
        else np.zeros(len(lookup_upper) + 1)
    )
    unique = (
        binned(unique_upper, np.ones(counts.size))
        if counts.size
        else np.zeros(len(unique_upper) + 1)
    )
    return lookups, unique


def total_variation(a: Any, b: Any) -> float:
    """Total-variation distance of two histograms over the same bins (0: equal, 1: disjoint)."""
    return 0.5 * float(
        np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).sum()
    )


__all__ = [
    "COLD_REUSE",
    "DEFAULT_LOCALITY",
    "PopularityClasses",
    "ReuseHistogram",
    "TableLayout",
    "expected_histograms",
    "fit_classes",
    "load_histogram",
    "locality_names",
    "reuse_histogram",
    "table_layout",
    "total_variation",
]
