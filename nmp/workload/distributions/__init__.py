"""Access distributions: how a workload draws the rows of its lookups, one registered object
per ``distribution`` name, one module per distribution in this package.

An :class:`AccessDistribution` knows everything a stage asks about it, so no stage tests a
distribution's name:

* ``draw(spec, table, rng, n)``: ``n`` independent rows of ``table`` (int64);
* ``head_mass(spec, table, k)``: the share of the table's lookups on its ``k`` hottest rows,
  where it has a closed form (the locality study sets skews side by side with it);
* ``params``: the spec fields that apply to it only (``alpha``, ``reuse``, ``locality`` ...):
  a spec giving another distribution's field is refused, an override giving one switches to
  the first distribution that takes it, and switching drops the old distribution's;
* ``default_alpha`` (a distribution that takes ``alpha``), ``check`` (its own fields' limits),
  ``describe`` (one line for listings), ``zipf_exponent`` (the bounded Zipf law its rows follow,
  if any: uniform is Zipf 0) and ``locality_source`` (where its locality comes from).

:func:`nmp.workload.batch.draw_rows` and :class:`nmp.workload.spec.WorkloadSpec` ask
:data:`DISTRIBUTIONS`; adding a distribution is adding a module here that registers one.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from nmp.registry import Registry

# A nmp.workload.spec.WorkloadSpec: not imported here, since the spec asks this registry (a
# distribution's own module imports it and annotates with it).
Spec = Any


class AccessDistribution:
    """One way of drawing rows (see the module docstring); subclasses register an instance."""

    name: ClassVar[str]
    description: ClassVar[str]
    rank: ClassVar[int]  # listing order (docs, errors, which one an override selects first)
    params: ClassVar[tuple[str, ...]] = ()
    default_alpha: ClassVar[float | None] = None

    def draw(self, spec: Spec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def head_mass(self, spec: Spec, table: int, k: int) -> float | None:
        """Share of ``table``'s lookups on its ``k`` hottest rows (None: no closed form)."""
        return None

    def check(self, spec: Spec) -> None:
        """Raise a KeyedValueError for a value of its own fields it cannot take."""

    def describe(self, spec: Spec) -> str:
        """Its name, with the skew it draws at where it takes one (``alpha``)."""
        if self.default_alpha is None:
            return self.name
        return f"{self.name}(alpha={spec.effective_alpha:g})"

    def zipf_exponent(self, spec: Spec) -> float | None:
        """The exponent of the bounded Zipf law over ranks its rows follow (None: not one)."""
        return None

    def locality_source(self, spec: Spec) -> str | None:
        """Where the locality comes from, when it is not chosen in the workload preset."""
        return None

    def takes(self, field: str) -> bool:
        return field in self.params

    def __repr__(self) -> str:
        return f"<access distribution {self.name}>"


#: The access distributions by name: the modules of this package register theirs.
DISTRIBUTIONS: Registry[AccessDistribution] = Registry(
    "access distribution", package=__name__, order=lambda d: d.rank
)


def distribution_params() -> tuple[str, ...]:
    """Every field that applies to some distributions only, in listing order."""
    out: list[str] = []
    for _, access in DISTRIBUTIONS.items():
        out += [p for p in access.params if p not in out]
    return tuple(out)


def takers(field: str) -> list[str]:
    """The distributions that take ``field``, in listing order."""
    return [name for name, access in DISTRIBUTIONS.items() if access.takes(field)]


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


def head_mass(spec: Spec, table: int, k: int) -> float | None:
    """Share of ``table``'s lookups on its ``k`` hottest rows under ``spec``'s distribution
    (None where the distribution has no closed form)."""
    return DISTRIBUTIONS.get(spec.distribution).head_mass(spec, table, k)


def workload_head_mass(spec: Spec, fraction: float = 0.01) -> float | None:
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
    "distribution_params",
    "head_mass",
    "takers",
    "workload_head_mass",
    "zipf_head_mass",
    "zipf_sum",
]
