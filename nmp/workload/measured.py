"""The ``measured`` access distribution: rows drawn from the popularity classes fitted to a
published production reuse histogram (:mod:`nmp.workload.locality`; ``data/locality/``).

Each table gets the classes laid out on its own rows (:func:`~nmp.workload.locality.table_layout`:
the hot classes keep their per-lookup probability, the cold tail fills the rest of the table),
and ranks go through the workload's seeded permutation as Zipf's do: hot rows are scattered in
memory, the convention of FBGEMM's benchmark generator (it shuffles row ids after sampling).
One uniform per lookup, vectorized."""

from __future__ import annotations

import numpy as np

from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution
from nmp.workload.locality import DEFAULT_LOCALITY, table_layout
from nmp.workload.ranked import ranked_rows
from nmp.workload.spec import WorkloadSpec


def locality_of(spec: WorkloadSpec) -> str:
    """The measured locality a workload draws from (its ``locality``, else the default)."""
    return spec.locality or DEFAULT_LOCALITY


def draw_measured(spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
    rows = spec.tables[table].rows
    ranks = table_layout(locality_of(spec), rows).ranks(rng.random(n), rows)
    return ranked_rows(spec, table, ranks)


def head_mass_measured(spec: WorkloadSpec, table: int, k: int) -> float:
    rows = spec.tables[table].rows
    return table_layout(locality_of(spec), rows).head_mass(max(0, min(k, rows)))


DISTRIBUTIONS.register(
    AccessDistribution(
        "measured",
        "popularity classes fitted to a published production reuse histogram (data/locality)",
        draw_measured,
        head_mass_measured,
    )
)

__all__ = ["draw_measured", "head_mass_measured", "locality_of"]
