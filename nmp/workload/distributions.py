"""Access distributions: how a workload draws the rows of its lookups, one registered variant
per ``distribution`` name.

A distribution provides ``draw(spec, table, rng, n)``: ``n`` independent rows of ``table``
(int64); and, where it has a closed form, ``head_mass(spec, table, k)``: the share of the
table's lookups that go to its ``k`` hottest rows (used to set skews side by side: the
locality study marks a measured locality at the Zipf exponent with the same head mass).
:func:`nmp.workload.batch.draw_rows` asks :data:`DISTRIBUTIONS`, never a name. The names a
spec accepts are :data:`nmp.workload.spec.Distribution`'s (a test checks both lists agree).

Adding one is a module that registers an :class:`AccessDistribution` and is listed in
:data:`DISTRIBUTIONS` (``measured``, calibrated to published reuse histograms, is
:mod:`nmp.workload.measured`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nmp.registry import Registry

if TYPE_CHECKING:
    from nmp.workload.spec import WorkloadSpec

Draw = Callable[["WorkloadSpec", int, np.random.Generator, int], np.ndarray]
HeadMass = Callable[["WorkloadSpec", int, int], float]


@dataclass(frozen=True)
class AccessDistribution:
    """One way of drawing rows (see the module docstring)."""

    name: str
    description: str
    draw: Draw
    head_mass: HeadMass | None = None


#: The access distributions by name; the modules below register theirs when imported.
DISTRIBUTIONS: Registry[AccessDistribution] = Registry(
    "access distribution", package="nmp.workload", marker=r"^DISTRIBUTIONS\.register\("
)


def _draw_uniform(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, spec.tables[table].rows, n, dtype=np.int64)


def _draw_zipf(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    from nmp.workload import sampling
    from nmp.workload.ranked import ranked_rows

    rows = spec.tables[table].rows
    return ranked_rows(spec, table, sampling.zipf_ranks(rng, n, rows, spec.effective_alpha))


def _draw_pareto(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    from nmp.workload import sampling
    from nmp.workload.ranked import ranked_rows

    rows = spec.tables[table].rows
    return ranked_rows(spec, table, sampling.pareto_ranks(rng, n, rows, spec.effective_alpha))


def _draw_reuse(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    from nmp.workload.ranked import reuse_rows

    return reuse_rows(spec, table, rng, n)


# --- head masses -----------------------------------------------------------------------------

# Terms of a Zipf sum added one by one; above, the Euler-Maclaurin tail (error < 1e-9 relative).
_EXACT_TERMS = 4096


@functools.lru_cache(maxsize=4096)
def zipf_sum(n: int, a: float) -> float:
    """sum_{i=1..n} i^-a (the bounded Zipf's normalizer), exact up to 4096 terms, then the
    Euler-Maclaurin expansion of the rest."""
    m = min(n, _EXACT_TERMS)
    head = float((np.arange(1, m + 1, dtype=np.float64) ** -a).sum())
    if n <= m:
        return head

    def integral(x: float) -> float:
        return math.log(x) if abs(a - 1.0) < 1e-12 else x ** (1.0 - a) / (1.0 - a)

    f_m, f_n = m**-a, float(n) ** -a
    d_m, d_n = -a * m ** (-a - 1.0), -a * float(n) ** (-a - 1.0)
    tail = integral(float(n)) - integral(float(m)) + (f_n - f_m) / 2.0 + (d_n - d_m) / 12.0
    return head + tail


def zipf_head_mass(rows: int, k: int, a: float) -> float:
    """Share of a bounded Zipf(a) over ``rows`` ranks that falls on the ``k`` first."""
    k = max(0, min(int(k), int(rows)))
    return zipf_sum(k, a) / zipf_sum(int(rows), a) if k else 0.0


def _head_uniform(spec: WorkloadSpec, table: int, k: int) -> float:
    return min(max(k, 0), spec.tables[table].rows) / spec.tables[table].rows


def _head_zipf(spec: WorkloadSpec, table: int, k: int) -> float:
    return zipf_head_mass(spec.tables[table].rows, k, spec.effective_alpha)


def _head_reuse(spec: WorkloadSpec, table: int, k: int) -> float:
    rows = spec.tables[table].rows
    hot, frac = spec.hot_set(table)
    k = max(0, min(k, rows))
    if hot <= 0 or frac <= 0:
        return k / rows
    in_hot = min(k, hot)
    if spec.hot_alpha > 0:
        mass = frac * zipf_head_mass(hot, in_hot, spec.hot_alpha)
    else:
        mass = frac * in_hot / hot
    cold = rows - hot
    return mass + ((1.0 - frac) * (k - in_hot) / cold if cold > 0 else 0.0)


DISTRIBUTIONS.register(
    AccessDistribution("uniform", "every row equally likely", _draw_uniform, _head_uniform)
)
DISTRIBUTIONS.register(
    AccessDistribution(
        "zipf", "bounded Zipf(alpha) over scattered ranks (rejection-inversion)", _draw_zipf,
        _head_zipf,
    )
)  # fmt: skip
DISTRIBUTIONS.register(
    AccessDistribution("pareto", "torchrec's multi-hot: floor(Lomax(alpha)) mod rows", _draw_pareto)
)
DISTRIBUTIONS.register(
    AccessDistribution(
        "reuse", "a hot set with a share of the accesses, the rest uniform", _draw_reuse,
        _head_reuse,
    )
)  # fmt: skip


def head_mass(spec: WorkloadSpec, table: int, k: int) -> float | None:
    """Share of ``table``'s lookups on its ``k`` hottest rows under ``spec``'s distribution
    (None where the distribution has no closed form)."""
    fn = DISTRIBUTIONS.get(spec.distribution).head_mass
    return None if fn is None else fn(spec, table, k)


def workload_head_mass(spec: WorkloadSpec, fraction: float = 0.01) -> float | None:
    """Share of all lookups that go to the hottest ``fraction`` of each table's rows, the
    tables weighted by their lookups per batch (None without a closed form)."""
    total = 0.0
    weight = 0.0
    for t, tab in enumerate(spec.tables):
        mass = head_mass(spec, t, math.ceil(fraction * tab.rows))
        if mass is None:
            return None
        w = spec.table_pooling(t).mean_lookups
        total += w * mass
        weight += w
    return total / weight if weight else 0.0


__all__ = [
    "DISTRIBUTIONS",
    "AccessDistribution",
    "head_mass",
    "workload_head_mass",
    "zipf_head_mass",
    "zipf_sum",
]
